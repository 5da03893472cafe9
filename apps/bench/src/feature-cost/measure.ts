/**
 * What plain tasks (no `limitKey`, no `after`, no batch, no limits declared) cost on the schema and
 * code of today against the schema and code from before the flow-control and composition features
 * (issues #28 and #29: pause 15, dedup modes 16, rate limits 17, progress and finish notices 18,
 * per-key concurrency 19, dependencies 20, batches 21), on ONE server in ONE run:
 *
 * - `before`: an older commit (default: the last one with schema version 14) built from git
 *   (`./old-build.ts`); its own `migrate()`, `scheduleMany`, `taskClaim` and `taskCompleteManyFenced`.
 * - `latest`: this commit's `migrate()` and statements.
 * - `latest-pre-25`: this commit's, with the AFTER DELETE triggers as migration 24 left them put
 *   back after `migrate()` — `task_finished_notice` (18) and `task_dependency_release` (20),
 *   statement-level with a transition table, and `task_batch_members_finished` (21), row-level —
 *   in place of migration 25's `task_finished`: what the finish hand-off saves.
 * - `latest-bare`: this commit's, then the objects the features added on the hot path dropped —
 *   the trigger `task_finished` (25) and the partial index `task_limit_key_idx` (19) — so the
 *   statements are today's and only the schema objects differ. It tells the objects' share of a
 *   difference from the statements' share.
 *
 * Each run: a fresh schema, `tasks` due tasks (`scheduleMany`, kind `fc`), `VACUUM ANALYZE` of the
 * live table, one EXPLAIN (ANALYZE, BUFFERS) probe of the claim and of the completion (limit =
 * `batch`, in a transaction that commits; the completion's trigger lines name each trigger's time and
 * calls), then a CHECKPOINT, `pg_stat_statements_reset()` and `processes` forked loops of claim +
 * completeMany (`./child.ts`) until the queue is empty. Load-independent figures from the drain:
 * WAL bytes per task (`pg_current_wal_lsn()` around it; nothing else writes to this server), and
 * per statement from `pg_stat_statements` (PostgreSQL 17 §F.32; `track = top`, so a trigger's work
 * counts in the statement that fired it): calls, server execution time, shared buffers hit + read,
 * WAL bytes. Rounds alternate the variants' order (A B C, then C B A) to cancel drifts of the load.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { FINISH_HANDOFF_MIGRATION_VERSION, migrations, quoteIdent, SCHEMA_VERSION, statements } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import type { FeatureCostChildConfig, FeatureCostChildMessage } from './child.js';
import { importOld, type OldCode } from './old-build.js';

const CHILD_SCRIPT = fileURLToPath(new URL('./child.js', import.meta.url));
const KIND = 'fc';

export type VariantName = 'before' | 'latest' | 'latest-pre-25' | 'latest-bare';
/** The variants run by default (all of them). */
export const VARIANTS: readonly VariantName[] = ['before', 'latest', 'latest-pre-25', 'latest-bare'];
export const ALL_VARIANTS: readonly VariantName[] = VARIANTS;

export interface FeatureCostParams {
  readonly url: string;
  /** Due tasks per run. */
  readonly tasks: number;
  readonly processes: number;
  /** Claim limit = completion batch. */
  readonly batch: number;
  readonly rounds: number;
  readonly old: OldCode;
  /** Default {@link VARIANTS}. */
  readonly variants?: readonly VariantName[];
}

/** The store calls a run needs, from either code. */
interface StoreLike {
  migrate(): Promise<unknown>;
  scheduleMany(inputs: readonly { kind: string; payload: unknown }[]): Promise<unknown>;
  close(): Promise<void>;
}

interface VariantCode {
  readonly schemaVersion: number;
  createStore(url: string, schema: string): StoreLike;
  texts(schema: string): { readonly claim: string; readonly complete: string };
  /** Run after `migrate()`: drops for `latest-bare`. */
  readonly strip?: (admin: pg.Client, schema: string) => Promise<void>;
}

/** One EXPLAIN (ANALYZE, BUFFERS) probe of a statement. */
export interface Probe {
  readonly rows: number;
  readonly buffers: number;
  readonly ms: number;
  /** The AFTER triggers the statement fired: name, calls, ms. */
  readonly triggers: readonly { readonly name: string; readonly calls: number; readonly ms: number }[];
}

/** Per-statement figures of the drain, from `pg_stat_statements`. */
export interface StatementFigures {
  readonly calls: number;
  /** Server execution time per call, µs. */
  readonly usPerCall: number;
  /** Shared buffers hit + read per call. */
  readonly buffersPerCall: number;
  /** WAL bytes per call. */
  readonly walPerCall: number;
}

export interface FeatureCostRun {
  readonly round: number;
  readonly variant: VariantName;
  readonly schemaVersion: number;
  readonly tasks: number;
  readonly seconds: number;
  readonly tasksPerS: number;
  /** Whole server, drain only. */
  readonly walPerTask: number;
  /** Claim + completion server time per task, µs (pg_stat_statements). */
  readonly serverUsPerTask: number;
  readonly buffersPerTask: number;
  readonly claim: StatementFigures;
  readonly complete: StatementFigures;
  readonly claimProbe: Probe;
  readonly completeProbe: Probe;
  /** 1-minute load average at the start of the drain. */
  readonly load1: number;
}

export interface StatementTexts {
  readonly variant: VariantName;
  readonly claim: string;
  readonly complete: string;
}

async function variantCode(old: OldCode): Promise<Record<VariantName, VariantCode>> {
  type OldIndex = { SCHEMA_VERSION: number; statements(schema: string): { taskClaim: string; taskCompleteManyFenced: string } };
  type OldPg = { createPgStore(o: { connectionString: string; schema: string }): StoreLike };
  const oldIndex = await importOld<OldIndex>(old, 'dist/index.js');
  const oldPg = await importOld<OldPg>(old, 'dist/drivers/pg.js');
  const latest: VariantCode = {
    schemaVersion: SCHEMA_VERSION,
    createStore: (url, schema) => createPgStore({ connectionString: url, schema }),
    texts: (schema) => {
      const sql = statements(schema);
      return { claim: sql.taskClaim, complete: sql.taskCompleteManyFenced };
    },
  };
  return {
    before: {
      schemaVersion: oldIndex.SCHEMA_VERSION,
      createStore: (url, schema) => oldPg.createPgStore({ connectionString: url, schema }),
      texts: (schema) => {
        const sql = oldIndex.statements(schema);
        return { claim: sql.taskClaim, complete: sql.taskCompleteManyFenced };
      },
    },
    latest,
    'latest-pre-25': {
      ...latest,
      strip: async (admin, schema) => {
        // The three triggers' CREATE statements as migrations 18, 20 and 21 wrote them (their functions, on 22's clock with 24's flag, are still defined).
        const creates = migrations(schema)
          .filter((m) => m.version < FINISH_HANDOFF_MIGRATION_VERSION)
          .flatMap((m) => m.sql.split('\n').filter((line) => /^create trigger (task_finished_notice|task_dependency_release|task_batch_members_finished) /.test(line)));
        if (creates.length !== 3) throw new Error(`feature-cost: expected the 3 CREATE TRIGGER statements of migrations 18, 20 and 21, found ${creates.length}`);
        await admin.query(`drop trigger task_finished on ${quoteIdent(schema)}.task; ${creates.join('\n')}`);
      },
    },
    'latest-bare': {
      ...latest,
      strip: async (admin, schema) => {
        const q = quoteIdent(schema);
        await admin.query(
          `drop trigger if exists task_finished on ${q}.task; drop index if exists ${q}.task_limit_key_idx`,
        );
      },
    },
  };
}

/** The statement texts each variant sends for plain tasks (schema name `fc`). */
export async function statementTexts(old: OldCode): Promise<StatementTexts[]> {
  const code = await variantCode(old);
  return VARIANTS.filter((v) => v !== 'latest-bare').map((variant) => ({ variant, ...code[variant].texts('fc') }));
}

type PlanNode = { 'Shared Hit Blocks'?: number; 'Shared Read Blocks'?: number; 'Actual Rows'?: number };
type ExplainOut = { Plan: PlanNode; 'Execution Time': number; Triggers?: { 'Trigger Name': string; Calls: number; Time: number }[] };

async function explain(client: pg.Client, name: string, values: string): Promise<Probe> {
  const { rows } = await client.query<{ 'QUERY PLAN': ExplainOut[] }>(`explain (analyze, buffers, format json) execute ${name}(${values})`);
  const out = rows[0]?.['QUERY PLAN'][0] as ExplainOut;
  return {
    rows: Number(out.Plan['Actual Rows'] ?? 0),
    buffers: Number(out.Plan['Shared Hit Blocks'] ?? 0) + Number(out.Plan['Shared Read Blocks'] ?? 0),
    ms: out['Execution Time'],
    triggers: (out.Triggers ?? []).map((t) => ({ name: t['Trigger Name'], calls: t.Calls, ms: t.Time })),
  };
}

async function walNow(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ wal: number }>(`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as wal`);
  return Number(rows[0]?.wal);
}

async function drain(url: string, texts: { claim: string; complete: string }, params: FeatureCostParams): Promise<{ seconds: number; completed: number }> {
  const procs: ChildProcess[] = [];
  const state = { ready: 0, done: 0, completed: 0, error: '' };
  const wait = async (what: string, n: () => number, timeoutMs: number) => {
    const until = performance.now() + timeoutMs;
    while (n() < params.processes) {
      if (state.error) throw new Error(state.error);
      if (performance.now() > until) throw new Error(`feature-cost: ${what} not reached in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  try {
    for (let i = 0; i < params.processes; i++) {
      const config: FeatureCostChildConfig = { url, claimSql: texts.claim, completeSql: texts.complete, kind: KIND, batch: params.batch, owner: `fc-${i + 1}`, leaseMs: 600_000 };
      const proc = fork(CHILD_SCRIPT, [], { env: { ...process.env, POSTPONE_FEATURE_COST_CHILD: JSON.stringify(config) }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      proc.on('message', (m: FeatureCostChildMessage) => {
        if (m.type === 'ready') state.ready++;
        else if (m.type === 'error') state.error ||= m.message;
        else {
          state.done++;
          state.completed += m.completed;
        }
      });
      proc.on('exit', (code) => {
        if (code !== 0 && code !== null && state.done < params.processes) state.error ||= `feature-cost process exited with code ${code}`;
      });
      procs.push(proc);
    }
    await wait('processes ready', () => state.ready, 60_000);
    const t0 = performance.now();
    for (const p of procs) p.send({ type: 'go' });
    await wait('processes done', () => state.done, 300_000);
    return { seconds: (performance.now() - t0) / 1000, completed: state.completed };
  } finally {
    for (const p of procs) if (p.connected) p.disconnect();
    const until = performance.now() + 10_000;
    while (procs.some((p) => p.exitCode === null && p.signalCode === null) && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  }
}

/**
 * The drain's entry of a statement in `pg_stat_statements`, found by its first line and schema: the
 * module keeps the text with its constants replaced by `$n` (§F.32.1), so it is not the text sent.
 */
async function statementFigures(admin: pg.Client, text: string, schema: string): Promise<StatementFigures> {
  const first = text.split('\n')[0] ?? text;
  const { rows } = await admin.query<{ calls: string; ms: number; buffers: string; wal: string }>(
    `select sum(calls)::text as calls, sum(total_exec_time)::float8 as ms, sum(shared_blks_hit + shared_blks_read)::text as buffers, sum(wal_bytes)::text as wal
       from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
        and left(query, length($1)) = $1 and strpos(query, $2) > 0`,
    [first, `${schema}.task`],
  );
  const r = rows[0];
  const calls = Number(r?.calls ?? 0);
  if (calls === 0) throw new Error('feature-cost: pg_stat_statements has no entry for a statement of the drain');
  return { calls, usPerCall: (Number(r?.ms) * 1000) / calls, buffersPerCall: Number(r?.buffers) / calls, walPerCall: Number(r?.wal) / calls };
}

async function runOne(admin: pg.Client, code: VariantCode, variant: VariantName, round: number, params: FeatureCostParams): Promise<FeatureCostRun> {
  const schema = `fc_${variant.replaceAll('-', '_')}_${round}`;
  const q = quoteIdent(schema);
  await admin.query(`drop schema if exists ${q} cascade`);
  const store = code.createStore(params.url, schema);
  try {
    await store.migrate();
    await code.strip?.(admin, schema);
    for (let i = 0; i < params.tasks; i += 5_000) await store.scheduleMany(Array.from({ length: Math.min(5_000, params.tasks - i) }, () => ({ kind: KIND, payload: {} })));
  } finally {
    await store.close();
  }
  await admin.query(`vacuum analyze ${q}.task`);
  const texts = code.texts(schema);
  // The probes: one claim and one completion of `batch` tasks, as the loop sends them, committed.
  await admin.query('begin');
  await admin.query(`prepare fc_probe_claim as ${texts.claim}`);
  await admin.query(`prepare fc_probe_complete as ${texts.complete}`);
  const claimProbe = await explain(admin, 'fc_probe_claim', `null, 'fc-probe', 600000, ${params.batch}, 'default', '["${KIND}"]'`);
  const { rows: claimed } = await admin.query<{ id: string; attempt: number }>(`select id::text as id, attempt from ${q}.task where lease_owner = 'fc-probe'`);
  const items = JSON.stringify(claimed.map((r) => ({ id: r.id, attempt: r.attempt, owner: 'fc-probe', result: null })));
  const completeProbe = await explain(admin, 'fc_probe_complete', `null, '${items.replaceAll("'", "''")}'`);
  await admin.query('commit');
  await admin.query('deallocate all');
  if (claimProbe.rows !== params.batch || completeProbe.rows !== params.batch) throw new Error(`feature-cost: the probes handled ${claimProbe.rows} / ${completeProbe.rows} rows, expected ${params.batch}`);
  await admin.query('checkpoint');
  await admin.query('select pg_stat_statements_reset()');
  const load1 = loadavg()[0] ?? 0;
  const wal0 = await walNow(admin);
  const { seconds, completed } = await drain(params.url, texts, params);
  const wal = (await walNow(admin)) - wal0;
  const expected = params.tasks - params.batch;
  if (completed !== expected) throw new Error(`feature-cost: ${variant} completed ${completed} of ${expected} tasks`);
  const claim = await statementFigures(admin, texts.claim, q);
  const complete = await statementFigures(admin, texts.complete, q);
  await admin.query(`drop schema ${q} cascade`);
  return {
    round,
    variant,
    schemaVersion: code.schemaVersion,
    tasks: completed,
    seconds,
    tasksPerS: completed / seconds,
    walPerTask: wal / completed,
    serverUsPerTask: (claim.usPerCall * claim.calls + complete.usPerCall * complete.calls) / completed,
    buffersPerTask: (claim.buffersPerCall * claim.calls + complete.buffersPerCall * complete.calls) / completed,
    claim,
    complete,
    claimProbe,
    completeProbe,
    load1,
  };
}

/** Runs every variant `rounds` times, alternating their order; `onRun` sees each run as it ends. */
export async function runFeatureCost(params: FeatureCostParams, onRun: (run: FeatureCostRun) => void = () => {}): Promise<FeatureCostRun[]> {
  const code = await variantCode(params.old);
  const admin = new pg.Client({ connectionString: params.url, application_name: 'postpone-bench-feature-cost-admin' });
  await admin.connect();
  try {
    await admin.query('create extension if not exists pg_stat_statements');
    const runs: FeatureCostRun[] = [];
    for (let round = 1; round <= params.rounds; round++) {
      const variants = params.variants ?? VARIANTS;
      const order = round % 2 === 1 ? variants : [...variants].reverse();
      for (const variant of order) {
        const run = await runOne(admin, code[variant], variant, round, params);
        runs.push(run);
        onRun(run);
      }
    }
    return runs;
  } finally {
    await admin.end();
  }
}
