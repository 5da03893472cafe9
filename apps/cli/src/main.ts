/**
 * `postpone` — operate a Postpone schema on PostgreSQL from the shell: migrate, schedule, cancel,
 * show, list, stats, retry, reschedule, delete (cancel, retry, reschedule and delete also in bulk, by filter: ./bulk.ts), prune (by cut-off or by retention per state), pause / resume a queue or a
 * kind and list what is paused, and serve a web dashboard (`dashboard`, see ./dashboard/).
 *
 * Connection: `--database-url` or `DATABASE_URL`; tables in `--schema` (default `postpone`).
 * A sharded deployment (docs/sharding.md): `--groups s0,s1` or `POSTPONE_GROUPS` names its groups' schemas;
 * `migrate`, `stats`, `list`, `show` and `dashboard` then run across them (./groups.ts), the other commands refuse it.
 * Exit codes: 0 ok; 1 failure (database error, task not found, not retryable…); 2 bad usage (unknown
 * option, bad value: the store's `ValidationError`). Errors go to stderr as
 * `postpone: error <CODE>: <message>`, CODE being the typed error's `code`; with `--json`, as one
 * line of JSON `{"error":{"code":"<CODE>","message":"<message>"}}`.
 */
import {
  type Json,
  type OnConflict,
  MAX_KEY_BACKLOG_LIMIT,
  type PauseTarget,
  parseTaskId,
  PostponeError,
  type RetryResult,
  StoreError,
  TASK_STATES,
  type TaskState,
  type ValidationCode,
  ValidationError,
  validateJsonTextIntegers,
} from '@postpone/core';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_SCHEMA, type PostgresStore, type ShardedStore, SqlState } from '@postpone/postgres';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import { Command, CommanderError, Option } from 'commander';
import { OutcomeError, parseDuration, parseInteger, parseRetention, parseTime, UsageError } from './args.js';
import { addBulkOptions, type BulkCliOptions, dueOptions, hasBulkFilter, runBulk } from './bulk.js';
import { registerDashboard, serveDashboard } from './dashboard/command.js';
import { pausedOrNone } from './dashboard/data.js';
import { frontDashboardStore, oneSchemaOnly, parseGroups, withFront } from './groups.js';
import { healthText, pausedText, printable, rateLimitsText, statsText, taskDetail, taskTable, unclaimedRow, unclaimedText } from './format.js';
import { keyBacklogReport, keyBacklogText } from './key-backlog.js';

interface GlobalOptions {
  readonly databaseUrl?: string;
  readonly schema: string;
  /** `--groups` / `POSTPONE_GROUPS`: the schemas of a sharded deployment's groups (./groups.ts). */
  readonly groups?: string;
  readonly json?: boolean;
}

export { parseDuration };

/**
 * Parses the payload text. An integer beyond ±(2^53 − 1) is refused from the text itself
 * (UNSAFE_INTEGER, naming its path and the number as typed): `JSON.parse` has already rounded it
 * (9007199254740993 becomes 9007199254740992), so the parsed value cannot say what was meant.
 * @throws UsageError INVALID_PAYLOAD (not JSON), UNSAFE_INTEGER
 */
function parsePayload(text: string, field: string): Json {
  let payload: Json;
  try {
    payload = JSON.parse(text) as Json;
  } catch (error) {
    throw new UsageError('INVALID_PAYLOAD', `${field}: not JSON (${(error as Error).message})`);
  }
  try {
    validateJsonTextIntegers(text, 'payload');
  } catch (error) {
    if (ValidationError.isInstance(error)) throw new UsageError(error.code, `${field}: ${error.message}`);
    throw error;
  }
  return payload;
}

/** The payload of `schedule`: `--payload <json>`, or `--payload-file <path>` (`-`: standard input), not both. */
function readPayload(opts: { payload?: string; payloadFile?: string }): Json {
  if (opts.payloadFile === undefined) return parsePayload(opts.payload ?? 'null', '--payload');
  if (opts.payload !== undefined) throw new UsageError('INVALID_OPTION', 'give one of --payload and --payload-file');
  let text: string;
  try {
    text = readFileSync(opts.payloadFile === '-' ? 0 : opts.payloadFile, 'utf8');
  } catch (error) {
    const path = opts.payloadFile === '-' ? 'standard input' : JSON.stringify(resolve(opts.payloadFile));
    throw new UsageError('INVALID_OPTION', `--payload-file: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  return parsePayload(text, '--payload-file');
}

/**
 * Checks the connection string's shape before connecting, so a typo is bad usage (exit 2), not a DNS
 * failure: a `postgres://` or `postgresql://` URL, or a Unix socket folder (`/run/postgresql …`).
 * The message never repeats the string (it may hold a password).
 * @throws UsageError INVALID_OPTION
 */
function checkDatabaseUrl(url: string): void {
  if (url.startsWith('/')) return;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError('INVALID_OPTION', '--database-url / DATABASE_URL: not a URL; expected postgres://user:password@host:port/database');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new UsageError('INVALID_OPTION', `--database-url / DATABASE_URL: expected a postgres:// or postgresql:// URL, got ${parsed.protocol}//…`);
  }
}

type Out = { stdout: (text: string) => void };

/**
 * With `--groups`: the sharded front over those schemas (./groups.ts); without: the store of `--schema`.
 * For the commands that run on a whole deployment (migrate, stats, dashboard).
 */
async function withDeployment<T>(globals: GlobalOptions, fn: (store: PostgresStore<PgTx> | ShardedStore<PgTx>, schemas: readonly string[]) => Promise<T>): Promise<T> {
  if (globals.groups === undefined) return await withStore(globals, (store) => fn(store, [globals.schema]));
  const schemas = parseGroups(globals.groups);
  return await withFront(databaseUrl(globals), schemas, (front) => fn(front, schemas));
}

/** The checked connection string of `--database-url` / `DATABASE_URL`. @throws UsageError INVALID_OPTION */
function databaseUrl(globals: GlobalOptions): string {
  const url = globals.databaseUrl ?? process.env.DATABASE_URL;
  if (url === undefined || url === '') {
    throw new UsageError('INVALID_OPTION', 'no database: set DATABASE_URL or pass --database-url (to try Postpone, `pnpm db` in a checkout starts one and prints its URL)');
  }
  checkDatabaseUrl(url);
  return url;
}

/** The store of `--schema`, for `fn`, closed after it. @throws UsageError INVALID_OPTION with `--groups` (a one-schema command, ./groups.ts) */
async function withStore<T>(globals: GlobalOptions, fn: (store: PostgresStore<PgTx>) => Promise<T>): Promise<T> {
  if (globals.groups !== undefined) throw oneSchemaOnly();
  const url = databaseUrl(globals);
  const store = createPgStore({ connectionString: url, schema: globals.schema, poolConfig: { max: 2, connectionTimeoutMillis: 10_000 } });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** The target of `pause` / `resume`: exactly one of `--queue` and `--kind`. @throws UsageError INVALID_OPTION */
function pauseTarget(opts: { queue?: string; kind?: string }): PauseTarget {
  if ((opts.queue === undefined) === (opts.kind === undefined)) throw new UsageError('INVALID_OPTION', 'give exactly one of --queue and --kind');
  return opts.queue !== undefined ? { queue: opts.queue } : { kind: opts.kind as string };
}

/** `--kind` or `--queue` of `limits set` / `limits delete`, exactly one. @throws UsageError INVALID_OPTION */
function rateLimitScope(opts: { kind?: string; queue?: string }): { kind: string } | { queue: string } {
  if ((opts.kind === undefined) === (opts.queue === undefined)) throw new UsageError('INVALID_OPTION', 'give exactly one of --kind and --queue');
  return opts.kind !== undefined ? { kind: opts.kind } : { queue: opts.queue as string };
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function print(out: Out, globals: GlobalOptions, value: unknown, text: () => string): void {
  out.stdout(globals.json ? JSON.stringify(value, null, 2) : text());
}

function retryText(id: string, r: RetryResult): string {
  switch (r.outcome) {
    case 'RETRIED':
      return `RETRIED task ${id} as task ${r.id}, due ${r.dueAt.toISOString()}`;
    case 'ALREADY_RETRIED':
      return `ALREADY_RETRIED task ${id} was retried before as task ${r.id}`;
    case 'NOT_RETRYABLE':
      return `NOT_RETRYABLE task ${id} is ${r.state}; only DEAD and CANCELLED tasks can be retried`;
    case 'NOT_FOUND':
      return `NOT_FOUND no task ${id}`;
  }
}

/** The version in this package's package.json (next to dist/ and src/). */
function cliVersion(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

/**
 * An error on stderr: `postpone: error <CODE>: <message>`, or with `--json` one line `{"error":{"code","message"}}`.
 * The message may quote input (a payload's key, an option's value): its control characters are
 * shown escaped, as in every other output, so input cannot drive the terminal or split the line.
 */
function errorLine(json: boolean, code: string, message: string): string {
  return json ? `${JSON.stringify({ error: { code, message } })}\n` : `postpone: error ${code}: ${printable(message)}\n`;
}

/**
 * Whether `--json` is among the global options of `argv`: read before parsing, so that commander's own
 * usage errors (an unknown option, say), raised while parsing, are printed as JSON too.
 */
function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}

/** Builds the program; `out` receives what goes to stdout (one call per command); `json`: usage errors as JSON. */
export function buildProgram(out: Out, json = false): Command {
  const program = new Command('postpone')
    .description('Operate Postpone, durable delayed tasks on PostgreSQL: inspect, schedule, cancel, retry and prune tasks.')
    .addOption(new Option('--database-url <url>', 'PostgreSQL connection string').env('DATABASE_URL'))
    .option('--schema <name>', 'schema of the Postpone tables', DEFAULT_SCHEMA)
    .addOption(
      new Option('--groups <schemas>', 'a sharded deployment: the schemas of its shard groups in group order, comma-separated (migrate, stats, list, show and dashboard run across them)').env(
        'POSTPONE_GROUPS',
      ),
    )
    .option('--json', 'print JSON instead of text')
    .version(cliVersion(), '-V, --version', "print the CLI's version")
    .showHelpAfterError(json ? false : '(run with --help for usage)')
    // commander's own usage errors ("unknown option…") in the CLI's format, code USAGE; inherited by the commands.
    .configureOutput({
      outputError: (text, write) =>
        write(json ? errorLine(true, 'USAGE', text.replace(/^error: /, '').trimEnd()) : text.replace(/^error: /, 'postpone: error USAGE: ').split('\n').map(printable).join('\n')),
    })
    .exitOverride();
  const globals = (cmd: Command): GlobalOptions => {
    const options = cmd.optsWithGlobals() as GlobalOptions;
    if (options.groups === undefined || program.getOptionValueSource('schema') !== 'cli') return options;
    // An explicit --schema names one schema: it wins over POSTPONE_GROUPS from the environment (a shell
    // that exported it for the deployment's commands); given with --groups itself, it is a contradiction.
    if (program.getOptionValueSource('groups') === 'env') return { ...options, groups: undefined };
    throw new UsageError('INVALID_OPTION', '--groups and --schema name different things (a sharded deployment, one schema): give one of them');
  };

  program
    .command('migrate')
    .description('create or upgrade the schema (idempotent, safe from many processes at once)')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const [result, schemas] = await withDeployment(g, async (store, names) => [await store.migrate(), names] as const);
      // With --groups: every group's schema migrated (the same migrations), then its id range set.
      const what = g.groups === undefined ? `schema ${g.schema}` : `groups ${schemas.join(', ')}`;
      print(out, g, g.groups === undefined ? { schema: g.schema, ...result } : { groups: schemas, ...result }, () =>
        result.applied.length === 0
          ? `${what} ${g.groups === undefined ? 'is' : 'are'} up to date (version ${result.version})`
          : `${what}: applied ${plural(result.applied.length, 'migration')} (${result.applied.join(', ')}); now at version ${result.version}`,
      );
    });

  program
    .command('schedule <kind>')
    .description('schedule one task')
    .option('--payload <json>', 'JSON payload (default null)')
    .option('--payload-file <path>', 'read the JSON payload from a file, - for standard input')
    .option('--delay <duration>', 'delay from now: 500, 30s, 15m, 2h, 7d (default: due now)')
    .option('--run-at <time>', 'absolute due time, ISO 8601 (instead of --delay)')
    .option('--max-attempts <n>', 'attempts before DEAD (default 5)')
    .option('--queue <name>', "named queue (default 'default')")
    .option('--priority <n>', 'integer -32768..32767; higher is claimed first (default 0)')
    .option('--key <key>', 'dedup key: at most one SCHEDULED or CLAIMED task per kind and key')
    .addOption(
      new Option('--on-conflict <mode>', 'dedup mode of the key: keep (default), replace, fail, debounce, queueBehind, throttle (with --throttle)').choices([
        'keep',
        'replace',
        'fail',
        'debounce',
        'queueBehind',
        'throttle',
      ]),
    )
    .option('--throttle <duration>', 'with --on-conflict throttle: at most one task per kind and key per this period (e.g. 60s)')
    .action(
      async (
        kind: string,
        opts: {
          payload?: string;
          payloadFile?: string;
          delay?: string;
          runAt?: string;
          maxAttempts?: string;
          queue?: string;
          priority?: string;
          key?: string;
          onConflict?: OnConflict;
          throttle?: string;
        },
        cmd: Command,
      ) => {
        const g = globals(cmd);
        const input = {
          kind,
          payload: readPayload(opts),
          ...(opts.delay !== undefined ? { delayMs: parseDuration(opts.delay, '--delay') } : {}),
          ...(opts.runAt !== undefined ? { runAt: parseTime(opts.runAt, '--run-at') } : {}),
          ...(opts.maxAttempts !== undefined ? { maxAttempts: parseInteger(opts.maxAttempts, '--max-attempts') } : {}),
          ...(opts.queue !== undefined ? { queue: opts.queue } : {}),
          // Not a number: passed as given, so the store refuses it with INVALID_PRIORITY.
          ...(opts.priority !== undefined ? { priority: (/^-?\d+$/.test(opts.priority) ? Number(opts.priority) : opts.priority) as number } : {}),
          ...(opts.key !== undefined ? { key: opts.key } : {}),
        };
        // --throttle without --on-conflict throttle is passed on, so the store refuses it (INVALID_OPTION options.throttleMs).
        const options = {
          ...(opts.onConflict === undefined ? {} : { onConflict: opts.onConflict }),
          ...(opts.throttle === undefined ? {} : { throttleMs: parseDuration(opts.throttle, '--throttle') }),
        };
        const scheduled = await withStore(g, (store) => store.schedule(input, options)).catch(
          (error: unknown) => {
            throw opts.payloadFile === undefined ? error : fromPayloadFile(error);
          },
        );
        print(out, g, scheduled, () =>
          scheduled.created
            ? `scheduled task ${scheduled.id} (${kind}), due ${scheduled.dueAt.toISOString()}`
            : scheduled.throttled === true
              ? `throttled: task ${scheduled.id} (${kind}) was made with key ${opts.key} less than ${opts.throttle} ago; nothing scheduled`
              : `task ${scheduled.id} (${kind}) already holds key ${opts.key}: ${scheduled.replaced ? 'replaced its payload and due time' : 'kept'}, due ${scheduled.dueAt.toISOString()}`,
        );
      },
    );

  addBulkOptions(
    program
      .command('cancel [ids...]')
      .description(
        'cancel a task; prints CANCELLED, REQUESTED (running), TOO_LATE, ALREADY_CANCELLED or NOT_FOUND. With several ids or filter options (--kind, --queue, --state, --key-prefix, --due-from, --due-before, --all): every task they select, in batches, with counts per outcome; asks first unless --yes',
      ),
    'cancel',
  ).action(async (ids: string[], opts: BulkCliOptions, cmd: Command) => {
    const g = globals(cmd);
    if (ids.length !== 1 || hasBulkFilter(opts)) {
      await runBulk('cancel', ids, opts, {}, (fn) => withStore(g, fn), (value, text) => print(out, g, value, text));
      return;
    }
    const id = ids[0] as string;
    const outcome = await withStore(g, (store) => store.cancel(id));
    print(out, g, { id, outcome }, () => `${outcome} task ${id}`);
    if (outcome === 'NOT_FOUND') throw new OutcomeError('NOT_FOUND', `no task ${id}`);
  });

  addBulkOptions(
    program
      .command('reschedule [ids...]')
      .description(
        'move the due time of SCHEDULED tasks: one id (fenced on SCHEDULED, prints RESCHEDULED with the due time, NOT_SCHEDULED with the state, or NOT_FOUND; --payload replaces its payload), or several ids or filter options (in batches; asks first unless --yes)',
      )
      .option('--delay <duration>', 'due this long after now: 0, 30s, 15m, 2h, 7d')
      .option('--run-at <time>', 'due at this time, ISO 8601')
      .option('--payload <json>', 'one id only: replace the payload with this JSON')
      .option('--payload-file <path>', 'one id only: replace the payload with the JSON of a file, - for standard input'),
    'reschedule',
  ).action(async (ids: string[], opts: BulkCliOptions & { delay?: string; runAt?: string; payload?: string; payloadFile?: string }, cmd: Command) => {
    const g = globals(cmd);
    const withPayload = opts.payload !== undefined || opts.payloadFile !== undefined;
    if (ids.length !== 1 || hasBulkFilter(opts)) {
      if (withPayload) throw new UsageError('INVALID_OPTION', '--payload and --payload-file apply to one id only');
      await runBulk('reschedule', ids, opts, dueOptions('reschedule', opts), (fn) => withStore(g, fn), (value, text) => print(out, g, value, text));
      return;
    }
    const id = ids[0] as string;
    const params = { ...dueOptions('reschedule', opts), ...(withPayload ? { payload: readPayload(opts) } : {}) };
    const result = await withStore(g, (store) => store.reschedule(id, params)).catch((error: unknown) => {
      throw opts.payloadFile === undefined ? error : fromPayloadFile(error);
    });
    print(out, g, { id, ...result }, () =>
      result.outcome === 'RESCHEDULED'
        ? `RESCHEDULED task ${id}, due ${result.dueAt.toISOString()}`
        : result.outcome === 'NOT_SCHEDULED'
          ? `NOT_SCHEDULED task ${id}: it is ${result.state}`
          : `NOT_FOUND task ${id}`,
    );
    if (result.outcome === 'NOT_FOUND') throw new OutcomeError('NOT_FOUND', `no task ${id}`);
    if (result.outcome === 'NOT_SCHEDULED') throw new OutcomeError('NOT_SCHEDULED', `task ${id} is ${result.state}, not SCHEDULED: nothing changed`);
  });

  addBulkOptions(
    program.command('delete [ids...]').description('delete finished tasks (DONE, CANCELLED, DEAD) and their effects, by ids or filter options, in batches; never a live task; asks first unless --yes'),
    'delete',
  ).action(async (ids: string[], opts: BulkCliOptions, cmd: Command) => {
    const g = globals(cmd);
    await runBulk('delete', ids, opts, {}, (fn) => withStore(g, fn), (value, text) => print(out, g, value, text));
  });

  program
    .command('show <id>')
    .description('show one task: queue, priority, key, attempts and failures, payload, result, progress, last error, retry links, completion (attempt and worker of a DONE)')
    .action(async (id: string, _opts, cmd: Command) => {
      const g = globals(cmd);
      const taskId = parseTaskId(id);
      // With --groups: read from the group the id names.
      const found = await withDeployment(g, async (store) => {
        const task = await store.getTaskRecord(taskId);
        return task === null ? null : { task, completion: await store.getCompletion(taskId) };
      });
      if (found === null) throw new OutcomeError('NOT_FOUND', `no task ${id}`);
      print(out, g, found, () => taskDetail(found.task, found.completion));
    });

  // Batches with a callback (docs/contract.md#batches): counts and state of one batch.
  const batchCommand = program.command('batch').description('batches with a callback (docs/contract.md#batches): `batch show ID`');
  batchCommand
    .command('show <id>')
    .description('show one batch: OPEN, SEALED or CALLED_BACK, its members (total, remaining, DONE, DEAD, CANCELLED), the callback kind and, once scheduled, the callback task id')
    .action(async (id: string, _opts, cmd: Command) => {
      const g = globals(cmd);
      const batchId = parseTaskId(id, 'id');
      const found = await withStore(g, (store) => store.getBatch(batchId));
      if (found === null) throw new OutcomeError('NOT_FOUND', `no batch ${id}`);
      print(out, g, found, () =>
        [
          `batch      ${found.id}`,
          `state      ${found.state}`,
          `members    ${found.total} (remaining ${found.remaining}, DONE ${found.done}, DEAD ${found.dead}, CANCELLED ${found.cancelled})`,
          `callback   ${found.callback.kind} in queue ${found.callback.queue}${found.callbackTaskId === null ? '' : `: task ${found.callbackTaskId}`}`,
          `created    ${found.createdAt.toISOString()}`,
          `sealed     ${found.sealedAt?.toISOString() ?? '-'}`,
          `called     ${found.calledBackAt?.toISOString() ?? '-'}`,
          '',
        ].join('\n'),
      );
    });

  program
    .command('list')
    .description('list tasks, newest first, one page at a time (pass --cursor to get the next page): queue, priority, key, attempt (claims so far) and failures of the allowed')
    .option('--state <state...>', `only these states (${TASK_STATES.join(', ')})`)
    .option('--kind <kind...>', 'only these kinds')
    .option('--queue <name>', 'only tasks of this queue (default: every queue)')
    .option('--due-from <time>', 'only tasks due at or after this time (ISO 8601)')
    .option('--due-before <time>', 'only tasks due before this time (ISO 8601)')
    .option('--has-error', 'only tasks with a last error')
    .option('--oldest', 'oldest first')
    .option('--limit <n>', 'page size, 1..1000', '50')
    .option('--cursor <cursor>', 'next page: the cursor printed by the previous page')
    .action(
      async (
        opts: { state?: string[]; kind?: string[]; queue?: string; dueFrom?: string; dueBefore?: string; hasError?: boolean; oldest?: boolean; limit: string; cursor?: string },
        cmd: Command,
      ) => {
        const g = globals(cmd);
        const params = {
          ...(opts.state !== undefined ? { states: opts.state.map((s) => s.toUpperCase() as TaskState) } : {}),
          ...(opts.kind !== undefined ? { kinds: opts.kind } : {}),
          ...(opts.queue !== undefined ? { queue: opts.queue } : {}),
          ...(opts.dueFrom !== undefined ? { dueFrom: parseTime(opts.dueFrom, '--due-from') } : {}),
          ...(opts.dueBefore !== undefined ? { dueBefore: parseTime(opts.dueBefore, '--due-before') } : {}),
          ...(opts.hasError ? { hasError: true } : {}),
          order: opts.oldest ? ('oldest' as const) : ('newest' as const),
          limit: parseInteger(opts.limit, '--limit'),
          ...(opts.cursor !== undefined ? { cursor: opts.cursor } : {}),
        };
        // With --groups: every group's page merged in id order (ShardedStore.listTasks); the cursor pages on across them.
        const page = await withDeployment(g, (store) => store.listTasks(params));
        print(out, g, page, () => {
          const body = page.tasks.length === 0 ? 'no tasks' : taskTable(page.tasks);
          return page.nextCursor === null ? body : `${body}\nmore: --cursor ${page.nextCursor}`;
        });
      },
    );

  program
    .command('stats')
    .description('live counts by kind (scheduled, due, claimed, dead), the oldest due task’s lateness, and the kinds due with nobody claiming')
    .option('--unclaimed-after <duration>', 'report kinds whose oldest task has been due this long with none CLAIMED', '1m')
    .action(async (opts: { unclaimedAfter: string }, cmd: Command) => {
      const g = globals(cmd);
      const dueForMs = parseDuration(opts.unclaimedAfter, '--unclaimed-after');
      // With --groups: every group's counts added up (ShardedStore.stats), the unclaimed pairs of every group.
      const [stats, unclaimed, paused] = await withDeployment(g, async (store) => [await store.stats(), await store.unclaimedKinds({ dueForMs }), await pausedOrNone(store)] as const);
      const pausedKinds = new Set(paused.filter((p) => p.scope === 'kind').map((p) => p.name));
      print(out, g, { ...stats, paused, unclaimed }, () => `${statsText(stats, pausedKinds)}\n\n${pausedText(paused)}\n\n${unclaimedText(unclaimed)}`);
    });

  program
    .command('pause')
    .description('pause a queue (--queue) or a kind in every queue (--kind) for every worker: no new claims from the next claim on; running tasks finish; waiting tasks keep their due time and attempts')
    .option('--queue <name>', 'the queue to pause')
    .option('--kind <kind>', 'the kind to pause, in every queue')
    .option('--reason <text>', 'why, shown by `postpone paused`, `stats` and the dashboard')
    .option('--by <who>', 'who paused it')
    .action(async (opts: { queue?: string; kind?: string; reason?: string; by?: string }, cmd: Command) => {
      const g = globals(cmd);
      const target = pauseTarget(opts);
      const options = { ...(opts.reason !== undefined ? { reason: opts.reason } : {}), ...(opts.by !== undefined ? { by: opts.by } : {}) };
      const changed = await withStore(g, (store) => store.pause(target, options));
      const [scope, name] = target.queue !== undefined ? ['queue', target.queue] : ['kind', target.kind as string];
      print(out, g, { scope, name, paused: true, changed }, () => (changed ? `paused ${scope} ${name}` : `${scope} ${name} was already paused`));
    });

  program
    .command('resume')
    .description('resume a paused queue (--queue) or kind (--kind): its due tasks are claimed from the next claim on')
    .option('--queue <name>', 'the queue to resume')
    .option('--kind <kind>', 'the kind to resume')
    .action(async (opts: { queue?: string; kind?: string }, cmd: Command) => {
      const g = globals(cmd);
      const target = pauseTarget(opts);
      const changed = await withStore(g, (store) => store.resume(target));
      const [scope, name] = target.queue !== undefined ? ['queue', target.queue] : ['kind', target.kind as string];
      print(out, g, { scope, name, paused: false, changed }, () => (changed ? `resumed ${scope} ${name}` : `${scope} ${name} was not paused`));
    });

  program
    .command('paused')
    .description('list the paused queues and kinds: since when, by whom, why')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const paused = await withStore(g, (store) => store.listPaused());
      print(out, g, { paused }, () => pausedText(paused));
    });

  // Rate limits (docs/contract.md#rate-limits): list them with their use now, set one, delete one.
  const limits = program
    .command('limits')
    .description('rate limits of kinds and queues (claims per window, for every process) with their use now; `limits set` and `limits delete` change them')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const rows = await withStore(g, (store) => store.listRateLimits());
      print(out, g, rows, () => rateLimitsText(rows));
    });
  limits
    .command('set')
    .description('set the rate limit of one kind or one queue: at most --limit claims in any --window (sliding, database clock)')
    .option('--kind <kind>', 'limit this kind (in every queue)')
    .option('--queue <name>', 'limit this queue (every kind)')
    .requiredOption('--limit <n>', 'claims per window, 1..10000')
    .requiredOption('--window <duration>', 'the window: 1s, 500ms, 1m… up to 1d')
    .action(async (opts: { kind?: string; queue?: string; limit: string; window: string }, cmd: Command) => {
      const g = globals(cmd);
      const scope = rateLimitScope(opts);
      const input = { ...scope, limit: parseInteger(opts.limit, '--limit'), windowMs: parseDuration(opts.window, '--window') };
      const row = await withStore(g, (store) => store.setRateLimit(input));
      print(out, g, row, () => rateLimitsText([row]));
    });
  limits
    .command('delete')
    .description('remove the rate limit of one kind or one queue')
    .option('--kind <kind>', 'the kind')
    .option('--queue <name>', 'the queue')
    .action(async (opts: { kind?: string; queue?: string }, cmd: Command) => {
      const g = globals(cmd);
      const scope = rateLimitScope(opts);
      const deleted = await withStore(g, (store) => store.deleteRateLimit(scope));
      const what = 'kind' in scope ? `kind ${scope.kind}` : `queue ${scope.queue}`;
      print(out, g, { deleted }, () => (deleted ? `rate limit of ${what} deleted` : `no rate limit of ${what}`));
      if (!deleted) throw new OutcomeError('NOT_FOUND', `no rate limit of ${what}`);
    });

  // Per-key concurrency (docs/contract.md#per-key-concurrency): list, set and delete the per-kind declarations.
  const keyLimits = limits
    .command('keys')
    .description('per-key concurrency of kinds: at most --limit CLAIMED tasks per limit key, claims rotating among the keys; `limits keys set` and `limits keys delete` change them')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const rows = await withStore(g, (store) => store.listKeyConcurrency());
      print(out, g, rows, () => (rows.length === 0 ? 'no per-key limits' : rows.map((r) => `kind ${r.kind}: at most ${r.limit} CLAIMED per limit key`).join('\n')));
    });
  keyLimits
    .command('set')
    .description('set the per-key concurrency limit of one kind (for every process)')
    .requiredOption('--kind <kind>', 'the kind')
    .requiredOption('--limit <n>', 'CLAIMED tasks per limit key, 1..1000000')
    .action(async (opts: { kind: string; limit: string }, cmd: Command) => {
      const g = globals(cmd);
      const row = await withStore(g, (store) => store.setKeyConcurrency({ kind: opts.kind, limit: parseInteger(opts.limit, '--limit') }));
      print(out, g, row, () => `kind ${row.kind}: at most ${row.limit} CLAIMED per limit key`);
    });
  keyLimits
    .command('backlog')
    .description('the per-key backlog of one kind beside its per-key limit: per limit key its due, not-yet-due and CLAIMED tasks and how long its oldest due task has waited (database clock), most due first')
    .requiredOption('--kind <kind>', 'the kind')
    .option('--top <n>', 'keys per page, 1..1000', '20')
    .option('--cursor <cursor>', 'the next page: the cursor the previous page printed')
    .action(async (opts: { kind: string; top: string; cursor?: string }, cmd: Command) => {
      const g = globals(cmd);
      const top = parseInteger(opts.top, '--top');
      if (top < 1 || top > MAX_KEY_BACKLOG_LIMIT) throw new UsageError('INVALID_OPTION', `--top: must be an integer 1..${MAX_KEY_BACKLOG_LIMIT}, got ${top}`);
      const params = { kind: opts.kind, limit: top, ...(opts.cursor === undefined ? {} : { cursor: opts.cursor }) };
      const report = await withStore(g, async (store) => keyBacklogReport(await store.keyBacklog(params), await store.listKeyConcurrency()));
      print(out, g, report, () => keyBacklogText(report));
    });
  keyLimits
    .command('delete')
    .description('remove the per-key concurrency limit of one kind')
    .requiredOption('--kind <kind>', 'the kind')
    .action(async (opts: { kind: string }, cmd: Command) => {
      const g = globals(cmd);
      const deleted = await withStore(g, (store) => store.deleteKeyConcurrency({ kind: opts.kind }));
      print(out, g, { deleted }, () => (deleted ? `per-key limit of kind ${opts.kind} deleted` : `no per-key limit of kind ${opts.kind}`));
      if (!deleted) throw new OutcomeError('NOT_FOUND', `no per-key limit of kind ${opts.kind}`);
    });

  // Per-key rate limits (docs/contract.md#per-key-rate-limits): list, set and delete the per-kind declarations.
  const keyRates = limits
    .command('key-rates')
    .description('per-key rate limits of kinds: at most --limit claims per limit key in any --window (sliding, database clock) with the keys held now; `limits key-rates set` and `limits key-rates delete` change them')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const rows = await withStore(g, (store) => store.listKeyRateLimits());
      print(out, g, rows, () => (rows.length === 0 ? 'no per-key rate limits' : rows.map(keyRateText).join('\n')));
    });
  keyRates
    .command('set')
    .description('set the per-key rate limit of one kind (for every process)')
    .requiredOption('--kind <kind>', 'the kind')
    .requiredOption('--limit <n>', 'claims per limit key per window, 1..10000')
    .requiredOption('--window <duration>', 'the window: 1s, 500ms, 1m… up to 1d')
    .action(async (opts: { kind: string; limit: string; window: string }, cmd: Command) => {
      const g = globals(cmd);
      const input = { kind: opts.kind, limit: parseInteger(opts.limit, '--limit'), windowMs: parseDuration(opts.window, '--window') };
      const row = await withStore(g, (store) => store.setKeyRateLimit(input));
      print(out, g, row, () => keyRateText(row));
    });
  keyRates
    .command('delete')
    .description('remove the per-key rate limit of one kind (and its logs)')
    .requiredOption('--kind <kind>', 'the kind')
    .action(async (opts: { kind: string }, cmd: Command) => {
      const g = globals(cmd);
      const deleted = await withStore(g, (store) => store.deleteKeyRateLimit({ kind: opts.kind }));
      print(out, g, { deleted }, () => (deleted ? `per-key rate limit of kind ${opts.kind} deleted` : `no per-key rate limit of kind ${opts.kind}`));
      if (!deleted) throw new OutcomeError('NOT_FOUND', `no per-key rate limit of kind ${opts.kind}`);
    });

  program
    .command('health')
    .description('dead rows and autovacuum per table (task, effect — unused since migration 13 —, task_history summed over its partitions), the oldest transaction holding back their cleanup, the use of the NOTIFY queue, and the kinds due with nobody claiming')
    .option('--unclaimed-after <duration>', 'report kinds whose oldest task has been due this long with none CLAIMED', '1m')
    .action(async (opts: { unclaimedAfter: string }, cmd: Command) => {
      const g = globals(cmd);
      const dueForMs = parseDuration(opts.unclaimedAfter, '--unclaimed-after');
      const [health, unclaimed] = await withStore(g, async (store) => [await store.vacuumHealth(), await store.unclaimedKinds({ dueForMs })] as const);
      print(out, g, { ...health, unclaimed }, () => `${healthText(health)}\n${unclaimedRow(unclaimed)}`);
    });

  addBulkOptions(
    program
      .command('retry [ids...]')
      .description(
        'retry a DEAD or CANCELLED task as a new task (same kind and payload, fresh attempts); idempotent. With several ids or filter options: every DEAD task they select (--state CANCELLED too), in batches; asks first unless --yes',
      )
      .option('--delay <duration>', 'due after this delay (default: now)')
      .option('--run-at <time>', 'due at this time, ISO 8601')
      .option('--max-attempts <n>', 'attempts of the new task (default: the original’s; one id only)'),
    'retry',
  ).action(async (ids: string[], opts: BulkCliOptions & { delay?: string; runAt?: string; maxAttempts?: string }, cmd: Command) => {
      const g = globals(cmd);
      if (ids.length !== 1 || hasBulkFilter(opts)) {
        if (opts.maxAttempts !== undefined) throw new UsageError('INVALID_OPTION', '--max-attempts: only with one id');
        await runBulk('retry', ids, opts, dueOptions('retry', opts), (fn) => withStore(g, fn), (value, text) => print(out, g, value, text));
        return;
      }
      const id = ids[0] as string;
      const params = {
        id,
        ...(opts.delay !== undefined ? { delayMs: parseDuration(opts.delay, '--delay') } : {}),
        ...(opts.runAt !== undefined ? { runAt: parseTime(opts.runAt, '--run-at') } : {}),
        ...(opts.maxAttempts !== undefined ? { maxAttempts: parseInteger(opts.maxAttempts, '--max-attempts') } : {}),
      };
      const result = await withStore(g, (store) => store.retry(params));
      print(out, g, result, () => retryText(id, result));
      if (result.outcome === 'NOT_FOUND' || result.outcome === 'NOT_RETRYABLE') throw new OutcomeError(result.outcome, retryText(id, result).replace(/^\S+ /, ''));
    });

  program
    .command('prune')
    .description('delete DONE, CANCELLED and DEAD tasks (and the legacy effect rows of code before migration 13): finished before a cut-off, in batches; or past a retention per state, dropping whole history partitions')
    .option('--older-than <duration>', 'finished more than this long ago, with a unit: 30s, 15m, 2h, 7d')
    .option('--before <time>', 'finished before this time, ISO 8601')
    .option('--retention <state=duration,...>', 'keep each terminal state this long after it finished: DONE=1d,DEAD=7d,CANCELLED=7d (any of the three; a state left out is kept)')
    .option('--batch-size <n>', 'rows per batch (1..10000)', '1000')
    .action(async (opts: { olderThan?: string; before?: string; retention?: string; batchSize: string }, cmd: Command) => {
      const g = globals(cmd);
      if (opts.retention !== undefined && (opts.olderThan !== undefined || opts.before !== undefined)) {
        throw new UsageError('INVALID_OPTION', 'give --retention alone: it replaces the cut-off of --older-than and --before');
      }
      if (opts.retention === undefined && (opts.olderThan === undefined) === (opts.before === undefined)) {
        throw new UsageError('INVALID_OPTION', 'give exactly one of --older-than, --before and --retention');
      }
      const params = {
        ...(opts.olderThan !== undefined ? { olderThanMs: parseDuration(opts.olderThan, '--older-than', 'required') } : {}),
        ...(opts.before !== undefined ? { before: parseTime(opts.before, '--before') } : {}),
        ...(opts.retention !== undefined ? { retention: parseRetention(opts.retention, '--retention') } : {}),
        batchSize: parseInteger(opts.batchSize, '--batch-size'),
      };
      const result = await withStore(g, (store) => store.prune(params));
      const dropped = result.partitionsDropped === undefined ? '' : `, ${plural(result.partitionsDropped, 'partition')} dropped`;
      // Effect rows exist only where code before migration 13 wrote them: named only when some were deleted.
      const effects = result.effectsDeleted === 0 ? '' : ` and ${plural(result.effectsDeleted, 'legacy effect row')}`;
      const throttle = result.throttleRowsDeleted === undefined ? '' : `, ${plural(result.throttleRowsDeleted, 'reopened throttle window')} deleted`;
      print(out, g, result, () => `pruned ${plural(result.deleted, 'task')}${effects} in ${plural(result.batches, 'batch', 'batches')}${dropped}${throttle}`);
    });

  registerDashboard(program, async (options, cmd) => {
    const g = globals(cmd);
    await withDeployment(g, async (store, schemas) => {
      await store.stats(); // the database and the schema answer before anything listens
      await serveDashboard(g.groups === undefined ? (store as PostgresStore<PgTx>) : frontDashboardStore(store as ShardedStore<PgTx>), schemas.join(', '), options, out);
    });
  });

  return program;
}

/** Runs the CLI on `argv` (without node and script); resolves to the exit code. */
export async function run(argv: readonly string[], out: Out = { stdout: (t) => process.stdout.write(`${t}\n`) }): Promise<number> {
  const json = wantsJson(argv);
  const program = buildProgram(out, json);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    const opts = program.opts() as Partial<GlobalOptions>;
    // The remedy for a schema not migrated: the same deployment's migrate (--groups when the command ran across groups).
    const where = opts.groups !== undefined && program.getOptionValueSource('schema') !== 'cli' ? `--groups ${opts.groups}` : `--schema ${opts.schema ?? DEFAULT_SCHEMA}`;
    return report(error, where, json);
  }
}

/**
 * A ValidationError of the store about `payload…` (too large, not storable) when the payload came from
 * `--payload-file`: the same error on the field `payloadFile…`, which the message names as `--payload-file`.
 */
function fromPayloadFile(error: unknown): unknown {
  if (!ValidationError.isInstance(error) || !/^payload\b/.test(error.field)) return error;
  const field = error.field.replace(/^payload/, 'payloadFile');
  return new ValidationError(error.code as ValidationCode, field, error.message.slice(error.field.length + 2), { cause: error });
}

/** The store's field names (`maxAttempts: …`, `states[1]: …`) as the options a user typed. */
const OPTION_OF: Readonly<Record<string, string>> = {
  maxAttempts: '--max-attempts',
  delayMs: '--delay',
  runAt: '--run-at',
  states: '--state',
  kinds: '--kind',
  queue: '--queue',
  priority: '--priority',
  key: '--key',
  limit: '--limit',
  cursor: '--cursor',
  dueFrom: '--due-from',
  dueBefore: '--due-before',
  batchSize: '--batch-size',
  olderThanMs: '--older-than',
  retention: '--retention',
  before: '--before',
  payload: '--payload',
  payloadFile: '--payload-file',
  dueForMs: '--unclaimed-after',
  ids: '<ids>',
  keyPrefix: '--key-prefix',
  finishedFrom: '--finished-from',
  finishedBefore: '--finished-before',
  all: '--all',
  filter: 'the filter',
  dueAt: '--run-at',
  'options.reason': '--reason',
  'options.by': '--by',
  'options.throttleMs': '--throttle',
  windowMs: '--window (in ms)',
};

/** A ValidationError's message (`<field>: <detail>`) with its field named by the option, when it has one. */
function asOptionText(error: ValidationError): string {
  const whole = OPTION_OF[error.field];
  if (whole !== undefined && error.field.includes('.')) return `${whole}${error.message.slice(error.field.length)}`;
  const root = /^\w+/.exec(error.field)?.[0] ?? '';
  const option = OPTION_OF[root];
  const message = option === undefined ? error.message : `${option}${error.message.slice(root.length)}`;
  return message.replace('delayMs or runAt', '--delay or --run-at').replace('dueAt or delayMs', '--run-at or --delay').replace('or all: true', 'or --all');
}

/** `where`: the global options naming the deployment (`--schema s` or `--groups s0,s1`), for the remedy. */
function report(error: unknown, where: string, json = false): number {
  const say = (code: string, message: string) => process.stderr.write(errorLine(json, code, message));
  // The store's hint names its API; on the command line the remedy is a command.
  if (StoreError.isInstance(error) && ([SqlState.UNDEFINED_TABLE, SqlState.INVALID_SCHEMA_NAME] as readonly string[]).includes((error as StoreError).sqlState ?? "")) {
    say(error.code, `${error.message.replace(/ \(hint: .*\)$/, '')}: the schema is not migrated; run: postpone ${where} migrate`);
    return 1;
  }
  if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2; // commander printed the message
  // Bad usage (the CLI's own checks, the store's ValidationError) is 2; any other typed error is 1.
  if (error instanceof UsageError || error instanceof OutcomeError || PostponeError.isInstance(error)) {
    say(error.code, ValidationError.isInstance(error) ? asOptionText(error) : error.message);
    return error instanceof UsageError || ValidationError.isInstance(error) ? 2 : 1;
  }
  say('UNEXPECTED', error instanceof Error ? error.message : String(error));
  return 1;
}

// A reader that stops early (`postpone list | head`) closes the pipe: stop quietly, as Unix tools do.
// Any other failure to write the output (a full disk) is said on stderr, with exit code 1.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
  process.stderr.write(errorLine(wantsJson(process.argv.slice(2)), 'UNEXPECTED', `cannot write the output: ${error.message}`));
  process.exit(1);
});
process.exitCode = await run(process.argv.slice(2));

/** One line of `postpone limits key-rates`. */
function keyRateText(r: { readonly kind: string; readonly limit: number; readonly windowMs: number; readonly heldKeys: number }): string {
  return `kind ${r.kind}: at most ${r.limit} ${r.limit === 1 ? 'claim' : 'claims'} per limit key per ${r.windowMs} ms (${r.heldKeys} ${r.heldKeys === 1 ? 'key' : 'keys'} held now)`;
}
