/**
 * The Citus dialect (issue 25, "Scale II"): Postpone's schema as ONE shard group of Citus's
 * schema-based sharding (Citus 12+, `citus.enable_schema_based_sharding`), so every table of the
 * schema lives on one node and every statement of the store is routed to that node whole — FOR
 * UPDATE SKIP LOCKED, the MATERIALIZED picks, the one-statement complete.
 *
 * The migrations stay the frozen texts of `./migrations.ts`; `migrationStatements` splits them into
 * single statements (`./split.ts`) and, in the Citus dialect only, replaces the few statements
 * Citus refuses by equivalents, each listed in {@link citusRewrites} with the reason. A rewrite is
 * keyed by the exact text of the statement it replaces, so a rewrite that no longer matches any
 * statement is caught by `test/sql/citus.test.ts` instead of silently doing nothing.
 */
import { DEPENDENCY_MIGRATION_VERSION } from './dependency-sql.js';
import { HISTORY_STATES, historyStateTable } from './history-sql.js';
import type { Migration } from './migrations.js';
import { literal, quoteIdent } from './quote.js';
import { NOTICE_QUEUE_LIMIT, NOW } from './sql.js';
import { splitStatements } from './split.js';
import { batchCitusRewrites } from './batch-sql.js';
import { dependencyFlagCitusRewrites } from './dependency-flag-sql.js';
import { finishHandoffCitusRewrites } from './finish-handoff-sql.js';
import { withoutFinishHandoff } from './finish-handoff.js';
import { type CitusRun, citusCompleteManyRun, citusCompleteManySplit, citusCronRun, citusCronSplit, citusInsertRun, citusInsertSplit, citusMoveRun, citusMoveSplit } from './citus-route.js';

/** Which SQL the store sends: plain PostgreSQL, or the Citus variant (see this module). */
export type Dialect = 'postgres' | 'citus';

/**
 * No parameters → zero or one `{ extversion }` row: the Citus extension installed in the connected
 * database (`13.2-1`…); none on plain PostgreSQL. Read by `migrate()` when the dialect is not given.
 */
export const CITUS_DETECT = `select extversion from pg_extension where extname = 'citus'`;

/**
 * Statements `migrate()` runs in the Citus dialect, in its transaction, before `create schema`:
 * schema-based sharding on for this transaction, so the schema created next is a distributed
 * schema (one shard group) and every table created in it a single-shard table of that group.
 */
export const CITUS_BEFORE_SCHEMA: readonly string[] = Object.freeze(['set local citus.enable_schema_based_sharding to on']);

/**
 * `$1` schema name → `{ distributed }`: true when `citus_schemas` lists the schema (it is a
 * distributed schema). A schema created before the dialect was chosen is distributed by
 * {@link citusSchemaDistribute}.
 */
export const CITUS_SCHEMA_DISTRIBUTED = `select exists (select 1 from citus_schemas where schema_name = to_regnamespace($1::text)) as distributed`;

/** `$1` schema name. Turns an existing schema and its tables into one shard group (Citus `citus_schema_distribute`). */
export const citusSchemaDistribute = `select citus_schema_distribute(to_regnamespace($1::text))`;

/** One statement Citus refuses, and what it runs instead. */
export interface CitusRewrite {
  readonly version: number;
  /** The statement of the frozen migration, exactly as `splitStatements` returns it. */
  readonly original: string;
  /** What the Citus dialect runs instead (possibly nothing). */
  readonly replacement: readonly string[];
  /** Citus's error for the original, and why the replacement leaves the same schema (or how it differs). */
  readonly why: string;
}

/**
 * The statements of the frozen migrations that Citus 13.2 refuses in a distributed schema, with
 * their replacements:
 * - migration 3: `add column … check (…)` (0A000 "cannot execute ADD COLUMN command with PRIMARY
 *   KEY, UNIQUE, FOREIGN and CHECK constraints") → the column, then the CHECK by the name PostgreSQL
 *   gives it (`task_failures_check`): the same catalog.
 * - migration 11: the history's second partition level (0A000 "distributing multi-level partitioned
 *   tables is not supported"). In Citus each state's table (`task_history_done`…) is a plain
 *   partition of `task_history` (list by state), not partitioned again by day: no `_default`, no
 *   `_legacy`, no day partitions, and `ensure_history_partitions` makes nothing (returns 0).
 *   Retention there deletes by row (as it does for a DEFAULT partition on PostgreSQL) instead of
 *   dropping day partitions.
 * - migration 18: the statement-level trigger `task_finished_notice` (XX000 "triggers are not
 *   supported on distributed tables"; Citus allows only row-level triggers, and only with
 *   `citus.enable_unsafe_triggers`, and a NOTIFY sent on the worker node would not reach the
 *   coordinator's listeners anyway). It is not created (the function `notify_task_finished` is, unused):
 *   on Citus `waitFor` hears of no finish and learns of one by its fallback read every
 *   `waitFallbackMs` (README "On a Citus coordinator").
 * - migration 20: the statement-level trigger `task_dependency_release`, for the same reason. It is
 *   not created (the function, the columns and the edge table are, unused): the Citus store refuses
 *   `schedule` with `after` (ValidationError `DEPENDENCIES_UNSUPPORTED`, docs/contract.md#dependencies).
 * - migration 21: the trigger `task_batch_members_finished`, for the same reason (`./batch-sql.ts`):
 *   not created; the store refuses batches on Citus (`BatchError` `BATCHES_UNSUPPORTED`).
 * - migration 24: the trigger `task_dependency_mark` on `task_dependency` and the flag's back-fill
 *   (`./dependency-flag-sql.ts`): not created / not run, as no edge is ever written on Citus.
 * - migration 25: the trigger `task_finished` (`./finish-handoff-sql.ts`): not created, and the
 *   Citus statements carry no hand-off column (`citusStatement`); the old triggers' drops are
 *   left out (there are none).
 * @param schema unquoted schema name
 */
export function citusRewrites(schema: string): readonly CitusRewrite[] {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const history = `${q}.task_history`;
  const rewrites: CitusRewrite[] = [
    {
      version: 3,
      original: `alter table ${task} add column failures integer not null default 0 check (failures >= 0)`,
      replacement: [
        `alter table ${task} add column failures integer not null default 0`,
        `alter table ${task} add constraint task_failures_check check (failures >= 0)`,
      ],
      why: 'Citus refuses ADD COLUMN with a CHECK (0A000); the CHECK is added apart under the name PostgreSQL gives it',
    },
    {
      version: 18,
      original: `drop trigger if exists task_finished_notice on ${task}`,
      replacement: [],
      why: 'no trigger on Citus (see the next rewrite), hence none to drop',
    },
    {
      version: 18,
      original: `create trigger task_finished_notice after delete on ${task} referencing old table as gone for each statement execute function ${q}.notify_task_finished()`,
      replacement: [],
      why: 'Citus refuses triggers on distributed tables (XX000 "triggers are not supported on distributed tables"); waitFor there learns of a finish by its fallback poll',
    },
    {
      version: DEPENDENCY_MIGRATION_VERSION,
      original: `drop trigger if exists task_dependency_release on ${task}`,
      replacement: [],
      why: 'no trigger on Citus (see the next rewrite), hence none to drop',
    },
    {
      version: DEPENDENCY_MIGRATION_VERSION,
      original: `create trigger task_dependency_release after delete on ${task} referencing old table as gone for each statement execute function ${q}.release_task_dependents()`,
      replacement: [],
      why: 'Citus refuses triggers on distributed tables (XX000); without it nothing releases a dependent, so the Citus store refuses `after` (ValidationError DEPENDENCIES_UNSUPPORTED)',
    },
  ];
  rewrites.push(...batchCitusRewrites(schema));
  rewrites.push(...dependencyFlagCitusRewrites(schema));
  rewrites.push(...finishHandoffCitusRewrites(schema));
  for (const state of HISTORY_STATES) {
    const sub = `${q}.${quoteIdent(historyStateTable(state))}`;
    rewrites.push(
      {
        version: 11,
        original: `create table if not exists ${sub} partition of ${history} for values in (${literal(state)}) partition by range (finished_at)`,
        replacement: [`create table if not exists ${sub} partition of ${history} for values in (${literal(state)})`],
        why: 'Citus refuses multi-level partitioned tables (0A000): the state table is not partitioned by day',
      },
      {
        version: 11,
        original: `create table if not exists ${q}.${quoteIdent(`${historyStateTable(state)}_default`)} partition of ${sub} default`,
        replacement: [],
        why: 'no day level, hence no DEFAULT day partition',
      },
    );
  }
  return rewrites;
}

/**
 * Statements of migration 11 replaced in the Citus dialect by a prefix match (their texts are long
 * plpgsql bodies): the day-partition function becomes one that makes nothing, and the `_legacy`
 * day partitions are not made.
 */
function citusRewriteByPrefix(schema: string, version: number, statement: string): readonly string[] | undefined {
  if (version !== 11) return undefined;
  const q = quoteIdent(schema);
  if (statement.startsWith(`create or replace function ${q}.ensure_history_partitions(p_now timestamptz, p_days integer) returns integer`)) {
    return [
      `create or replace function ${q}.ensure_history_partitions(p_now timestamptz, p_days integer) returns integer
language sql as $fn$ select 0 $fn$`,
    ];
  }
  if (statement.startsWith('do $do$') && statement.includes(`'_legacy'`)) return [];
  return undefined;
}

/**
 * The statements `migrate()` sends for migration `m`, one per query: its text split
 * (`splitStatements`), and in the Citus dialect the refused ones replaced ({@link citusRewrites}).
 * @param schema unquoted schema name (the one `m` was made for)
 * @throws SqlSplitError when the text cannot be split (a frozen migration never throws)
 */
export function migrationStatements(m: Migration, schema: string, dialect: Dialect): string[] {
  const statements = splitStatements(m.sql);
  if (dialect === 'postgres') return statements;
  const exact = new Map(citusRewrites(schema).filter((r) => r.version === m.version).map((r) => [r.original, r.replacement] as const));
  return statements.flatMap((one) => exact.get(one) ?? citusRewriteByPrefix(schema, m.version, one) ?? [one]);
}

/** The lease clock of `./sql.ts` (`coalesce($1, clock_timestamp())`), replaced like {@link NOW}. */
const CLOCK = 'coalesce($1::timestamptz, clock_timestamp())';

/**
 * No parameters → one `{ now }` row (ISO text): the coordinator's `clock_timestamp()`, read just before
 * a time-dependent statement of the Citus dialect and bound as its `$1` (see {@link citusStatement}).
 */
export const CITUS_CLOCK = `select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`;

/** `taskInsertMany`'s read of its `holders` pick, left out in the Citus dialect (see {@link citusStatement}). */
const HOLDERS_READ = '\n   where (select count(*) from holders) >= 0';

/**
 * `$1 + delay ms` from IMMUTABLE functions only, for use inside COALESCE (Citus refuses the STABLE
 * `timestamptz + interval` there): `to_timestamp(epoch seconds of $1 + delay / 1000)`, the same instant
 * to the microsecond (a float8 resolves today's epoch seconds to about 0.24 µs).
 */
function citusPlusMs(delay: string): string {
  return `to_timestamp(extract(epoch from ($1::timestamptz - timestamptz 'epoch'))::float8 + ${delay}::float8 / 1000)`;
}

/** `cronReconcile`'s read of the schedules that existed before its upsert (see {@link citusStatement}). */
const CRON_EXISTED = '), existed as (';

/** The RETURNING of `throttleGate` (`./dedup-sql.ts`), exactly as it ends that statement. */
const THROTTLE_GATE_RETURNING = `returning d.kind, d.key, d.closed_until > ${NOW} as throttled, d.task_id::text as taskid,
          floor(extract(epoch from d.due_at) * 1000)::float8 as dueatms`;

/**
 * `throttleRecord`'s (`./dedup-sql.ts`) `closed_until`, now + `throttleMs` of the input row, after
 * the NOW rewrite. Citus refuses the STABLE `timestamptz + interval` with a column reference in an
 * UPDATE (0A000 "STABLE functions used in UPDATE queries cannot be called with column references"):
 * the Citus form computes the same instant with `citusPlusMs`.
 */
const THROTTLE_CLOSES = /closed_until = \$1::timestamptz \+ \((x\."throttleMs")::float8 \* interval '1 millisecond'\)/;

/** How `rateLimitSet` (`./rate-limit-sql.ts`) starts and where its RETURNING begins. */
const RATE_LIMIT_SET = /^(insert into \S+\.rate_limit as r \(scope, name, max_starts, window_ms\) values [^\n]*\non conflict [^\n]*)\nreturning (r\.scope, r\.name, r\.max_starts as maxstarts, [\s\S]*)$/;

/**
 * The INSERTs whose RETURNING Citus refuses, as a data-modifying CTE whose result the coordinator
 * reads: `throttleGate` (its INSERT … SELECT runs through the coordinator, and the `$1` of its
 * RETURNING reaches the worker unbound: 08P01 "bind message supplies 0 parameters", Citus 13.2.2)
 * and `rateLimitSet` (0A000 "subqueries are not supported within INSERT queries": its `used` and
 * `reopensatms` read the log with subqueries). The same rows and columns; the computed ones are
 * computed from the returned row instead of inside the INSERT. Other texts come back unchanged.
 */
function citusReturning(plain: string): string {
  if (plain.startsWith('insert into ') && plain.endsWith(`\n${THROTTLE_GATE_RETURNING}`)) {
    const head = plain.slice(0, plain.length - THROTTLE_GATE_RETURNING.length - 1);
    return `with gate as (${head}
returning d.kind, d.key, d.closed_until, d.task_id, d.due_at)
select g.kind, g.key, g.closed_until > ${NOW} as throttled, g.task_id::text as taskid,
       floor(extract(epoch from g.due_at) * 1000)::float8 as dueatms
  from gate g`;
  }
  const set = RATE_LIMIT_SET.exec(plain);
  const [insert, columns] = [set?.[1], set?.[2]];
  if (insert === undefined || columns === undefined) return plain;
  // `updated_at = now()` becomes the proposed row's `updated_at` (its default: the same `now()`),
  // since Citus refuses a non-IMMUTABLE function in DO UPDATE SET (0A000).
  return `with r as (${insert.replace(', updated_at = now()', ', updated_at = excluded.updated_at')}\nreturning r.*)\nselect ${columns} from r`;
}

/** A statement in the Citus dialect, and whether its `$1` must be the database's time (never null). */
export interface CitusStatement {
  readonly text: string;
  /** True when the plain statement reads `$1` as "now, or null for the database clock". */
  readonly needsNow: boolean;
  /**
   * The 0-based index of the notify channel parameter when the plain statement sends NOTIFYs:
   * the Citus form returns each notice's payload (JSON text) in its `notified` column instead, and
   * the caller sends them from the coordinator ({@link CITUS_NOTIFY}); undefined when it sends none.
   */
  readonly channelParam: number | undefined;
  /**
   * Set for the statements Citus must be sent as several so that each is routed to the shard
   * group's one node (`./citus-route.ts`: schedule, fail, release, snooze, cancel, reclaim, completeMany, a cron occurrence): run it
   * instead of sending `text`, with the same (bound) parameters; it returns the rows `text` would.
   * `text` stays the one-statement form (what the statement would be without the outage concern).
   */
  readonly run?: CitusRun;
}

/**
 * `$1` channel, `$2` payloads (a JSON array of text) → no rows: the NOTIFYs a Citus-form statement
 * returned, sent from the coordinator (where the listeners are) in the caller's transaction (delivered
 * at its commit) or right after an autocommit statement committed. Left out while the NOTIFY queue is
 * half full, as the plain statements do (`notice()` of `./sql.ts`).
 */
export const CITUS_NOTIFY = `select pg_notify($1::text, p) from jsonb_array_elements_text($2::text::jsonb) p where pg_notification_queue_usage() < ${NOTICE_QUEUE_LIMIT}`;

/** `notice()` of `./sql.ts` after the epoch rewrite: channel, op, row alias, epoch-ms expression. */
const NOTICE_CALL =
  /case when \(select pg_notification_queue_usage\(\)\) < [0-9.]+ then pg_notify\((\$(\d+)::text), json_build_object\('op', '(\w+)', 'id', (\w+)\.id::text, 'dueAtMs', (floor\(extract\(epoch from \(\w+\.due_at - timestamptz 'epoch'\)\) \* 1000\)::float8)\)::text\) is null end/g;

/**
 * The Citus form of a plain statement of `./sql.ts` (and the admin, bulk, cron, renew and history
 * statements built the same way). Same parameters, same result columns and values; it differs where
 * Citus would refuse the statement or run it elsewhere than on the shard group's node:
 * - Time: `coalesce($1, now())` and `coalesce($1, clock_timestamp())` become `$1` itself, and the
 *   caller binds the coordinator's `clock_timestamp()` ({@link CITUS_CLOCK}) when it had null. Citus
 *   refuses a VOLATILE function in an UPDATE (0A000 "functions used in UPDATE queries on distributed
 *   tables must not be VOLATILE") and any non-IMMUTABLE one inside CASE/COALESCE; with a constant
 *   `$1` the whole statement — recursive CTEs of the claim walk included — is routed to the one
 *   node of the shard group. The database clock stays the only clock: the coordinator's. A lease
 *   then starts at the time read just before the statement, not at the write (one round trip
 *   earlier): leases are shortened by that round trip, never lengthened.
 * - Epoch milliseconds: `floor(extract(epoch from x) * 1000)` becomes `floor(extract(epoch from
 *   (x - timestamptz 'epoch')) * 1000)`: the same number (an interval's epoch is its length in
 *   seconds), from IMMUTABLE operators, which Citus accepts in RETURNING.
 * - `taskInsertMany` no longer reads its `holders` pick: Citus plans that statement recursively
 *   (its `input` draws ids with `nextval`, which the coordinator evaluates), and the FOR UPDATE pick
 *   read back inside the INSERT fails on the coordinator with 22P02 `invalid input syntax for type
 *   bigint: "PGCOPY"` (Citus 13.2.2). So on Citus a batch does not lock the live holders of its keys
 *   in id order before it inserts: two batches meeting each other's keys in opposite orders can
 *   deadlock (40P01, no verdict: retried), where on PostgreSQL they cannot (README "Failure modes").
 * - `throttleGate` and `rateLimitSet` return through a data-modifying CTE (see `citusReturning`);
 *   `throttleRecord`'s window end is computed from IMMUTABLE functions (`THROTTLE_CLOSES`).
 * - `cronReconcile`'s `existed` CTE is MATERIALIZED: Citus plans that statement in steps, and the
 *   inlined read ran after the upsert, saw its rows, and reported `changed` for an `added` schedule.
 * - NOTIFY: a pushed-down statement runs on the worker node, and a `pg_notify` there reaches only
 *   that node's listeners (and Citus refuses it in RETURNING, 0A000). The Citus form returns each
 *   notice's payload (the same JSON text, built with IMMUTABLE `||`) in the `notified` column, and
 *   the caller sends them from the coordinator ({@link CITUS_NOTIFY}) — in the same transaction, or
 *   just after an autocommit statement committed (a notice is a hint: workers also poll).
 * - Routing during another node's outage: schedule, fail, release, snooze, cancel, reclaim, completeMany and a cron occurrence carry a
 *   `run` that sends them as statements Citus routes to the group's one node (`./citus-route.ts`).
 * Statements without any of these come back unchanged.
 * @param plain a statement's text as `./sql.ts` builds it
 */
export function citusStatement(given: string): CitusStatement {
  // No trigger reads the finish hand-off on Citus: the statements are sent without it, as before migration 25.
  const plain = withoutFinishHandoff(given);
  const needsNow = plain.includes(NOW) || plain.includes(CLOCK);
  let channelParam: number | undefined;
  const text = citusReturning(plain)
    .replaceAll(NOW, '$1::timestamptz')
    .replaceAll(CLOCK, '$1::timestamptz')
    .replace(/floor\(extract\(epoch from ([^()]+)\) \* 1000\)/g, "floor(extract(epoch from ($1 - timestamptz 'epoch')) * 1000)")
    .replace(HOLDERS_READ, '')
    .replace(CRON_EXISTED, '), existed as materialized (')
    .replace(THROTTLE_CLOSES, (_all, delay: string) => `closed_until = ${citusPlusMs(delay)}`)
    .replace(/coalesce\((\$\d+::timestamptz), \$1::timestamptz \+ \((\$\d+(?:::float8)?)::float8 \* interval '1 millisecond'\)\)/g, (_all, given: string, delay: string) => `coalesce(${given}, ${citusPlusMs(delay)})`)
    .replace(NOTICE_CALL, (_all, channel: string, index: string, op: string, row: string, epochMs: string) => {
      channelParam = Number(index) - 1;
      return `case when ${channel} is not null then '{"op":"${op}","id":"' || ${row}.id::text || '","dueAtMs":' || (${epochMs})::text || '}' end`;
    });
  return { text, needsNow, channelParam, ...routed(plain, channelParam) };
}

/** The multi-statement runner of `plain` when it has one (`./citus-route.ts`), its steps in this dialect. */
function routed(plain: string, channelParam: number | undefined): { run?: CitusRun } {
  const insert = citusInsertSplit(plain);
  if (insert !== undefined) return { run: citusInsertRun({ ids: citusStatement(insert.ids).text, upsert: { keep: citusStatement(insert.upsert.keep).text, replace: citusStatement(insert.upsert.replace).text } }) };
  const many = citusCompleteManySplit(plain);
  if (many !== undefined) return { run: citusCompleteManyRun(citusStatement(many).text) };
  if (channelParam === undefined) return {};
  const cron = citusCronSplit(plain, channelParam + 1);
  if (cron !== undefined) return { run: citusCronRun({ ...cron, text: citusStatement(cron.text).text }) };
  const split = citusMoveSplit(plain, channelParam + 1);
  if (split === undefined) return {};
  return { run: citusMoveRun(plain, { ...split, live: citusStatement(split.live).text, finish: citusStatement(split.finish).text }) };
}
