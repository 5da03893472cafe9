/**
 * `boundary_partial_due_index` (docs/contract.md#evidence; seed chapter "原子领取"): on a table of 40 000 tasks of
 * which 20 000 are not yet due and none is due, `EXPLAIN (ANALYZE, BUFFERS)` of the claim with
 * `now()` and with `clock_timestamp()`. Expected shapes: `now()` → Index Cond on `task_claim_idx`, a
 * couple of buffers; `clock_timestamp()` → a Filter that removes every not-due row, two orders of
 * magnitude more buffers (seed: 2 vs 304).
 *
 * Each EXPLAIN ANALYZE runs inside a transaction that is rolled back (EXPLAIN ANALYZE executes the
 * UPDATE; with nothing due it changes nothing, and the rollback makes sure of it). The figures are
 * taken from a second, warm run.
 */
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import { type ExplainJson, parseExplainRows, type ScanSummary, summarizeDueScan } from '../curves/db/explain.js';
import { insertFinishedHistory, vacuumAnalyze } from '../curves/db/history.js';
import { CLAIM_PROBE_PARAMS, claimSql, clockTimestampClaimSql } from './claim-variants.js';

export interface PartialIndexOptions {
  readonly url: string;
  /** A schema of its own (created and migrated here). */
  readonly schema: string;
  /** Tasks in the table (default 40 000). */
  readonly tasks?: number;
  /** Of which not yet due (default 20 000); the rest are finished history. */
  readonly notDue?: number;
}

export interface PartialIndexResult {
  readonly tasks: number;
  readonly notDue: number;
  readonly finished: number;
  readonly now: ScanSummary;
  readonly clock: ScanSummary;
  /** `EXPLAIN (ANALYZE, BUFFERS)` text of each, for the report. */
  readonly nowText: string;
  readonly clockText: string;
}

/** Rows per `scheduleMany` call (one statement each). */
const CHUNK = 10_000;

async function explain(client: pg.Client, sql: string, format: 'json' | 'text'): Promise<pg.QueryResult> {
  await client.query('begin');
  try {
    return await client.query(`explain (analyze, buffers, format ${format}) ${sql}`, [...CLAIM_PROBE_PARAMS]);
  } finally {
    await client.query('rollback');
  }
}

async function measure(client: pg.Client, sql: string): Promise<{ summary: ScanSummary; text: string }> {
  await explain(client, sql, 'json'); // warm the cache; the second run is the one reported
  const json: ExplainJson = parseExplainRows((await explain(client, sql, 'json')).rows);
  const text = (await explain(client, sql, 'text')).rows.map((r: Record<string, unknown>) => String(r['QUERY PLAN'])).join('\n');
  return { summary: summarizeDueScan(json), text };
}

/** Builds the table and measures both plans. The schema is left in place (the caller drops it). */
export async function measurePartialDueIndex(options: PartialIndexOptions): Promise<PartialIndexResult> {
  const tasks = options.tasks ?? 40_000;
  const notDue = options.notDue ?? 20_000;
  const finished = tasks - notDue;
  const store = createPgStore({ connectionString: options.url, schema: options.schema });
  try {
    await store.migrate();
    for (let i = 0; i < notDue; i += CHUNK) {
      const n = Math.min(CHUNK, notDue - i);
      await store.scheduleMany(Array.from({ length: n }, (_, k) => ({ kind: 'bench_not_due', payload: { n: i + k }, delayMs: 3_600_000 })));
    }
  } finally {
    await store.close();
  }
  const client = new pg.Client({ connectionString: options.url, application_name: 'postpone-bench-explain' });
  await client.connect();
  try {
    await insertFinishedHistory(client, options.schema, finished);
    await vacuumAnalyze(client, options.schema);
    const now = await measure(client, claimSql(options.schema));
    const clock = await measure(client, clockTimestampClaimSql(options.schema));
    return { tasks, notDue, finished, now: now.summary, clock: clock.summary, nowText: now.text, clockText: clock.text };
  } finally {
    await client.end();
  }
}

/** The shape the seed shows: Index Cond with `now()`, a Filter removing every not-due row with `clock_timestamp()`. */
export function partialIndexShapeHolds(r: PartialIndexResult): boolean {
  return (
    r.now.indexCond !== null &&
    /due_at/.test(r.now.indexCond) &&
    /now\(\)/.test(r.now.indexCond) &&
    r.clock.filter !== null &&
    /clock_timestamp\(\)/.test(r.clock.filter) &&
    r.clock.rowsRemovedByFilter === r.notDue &&
    r.now.buffers < r.clock.buffers
  );
}
