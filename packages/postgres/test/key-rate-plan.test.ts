/**
 * What a claim of a kind with a per-key rate limit costs (docs/contract.md#per-key-rate-limits), at
 * 20 000 due tasks of the kind over 100 limit keys: EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of the
 * statements the store sends — `taskClaimKeyRated` (the keyed claim with the keys' logs) against
 * `taskClaimKeyed` (the keyed claim of per-key concurrency alone) on the same batch, and `keyRateHeld`
 * (the read after a short claim) with every key's window full — shows the per-key probes on
 * `task_limit_key_idx` and no sequential scan of `task` beyond the keyed claim's own (its probe for
 * due tasks without a key), and prints the buffers. Each EXPLAIN ANALYZE runs in a transaction rolled back; the figures printed
 * are the warm second run's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyLimitStatements } from '../src/sql/key-limit-sql.js';
import { keyRateStatements } from '../src/sql/key-rate-sql.js';
import { Admin, makeKit } from './support/kits.js';
import { type PlanNode, planNodes } from './support/plans.js';

const KEYS = 100;
const PER_KEY = 200;
const LIMIT = 10;
const admin = Admin.create('key_rate_plan');
const kit = makeKit('pg');

/** `fn` on one connection of the admin pool inside a transaction rolled back. */
async function rolledBack<T>(fn: (q: <R>(text: string, params?: unknown[]) => Promise<R[]>) => Promise<T>): Promise<T> {
  const client = await admin.pool.connect();
  try {
    await client.query('begin');
    try {
      return await fn(async <R>(text: string, params: unknown[] = []) => (await client.query(text, params)).rows as R[]);
    } finally {
      await client.query('rollback');
    }
  } finally {
    client.release();
  }
}

/** EXPLAIN (ANALYZE, BUFFERS) of `sql` after the `before` statements, in one transaction rolled back; the second run's plan and time. */
async function explain(sql: string, params: unknown[], before: [string, unknown[]][] = []): Promise<{ nodes: PlanNode[]; buffers: number; rows: number; ms: number }> {
  let out: { nodes: PlanNode[]; buffers: number; rows: number; ms: number } | undefined;
  for (let run = 0; run < 2; run += 1) {
    out = await rolledBack(async (q) => {
      for (const [text, args] of before) await q(text, args);
      const [row] = await q<{ 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] }>(`explain (analyze, buffers, format json) ${sql}`, params);
      const plan = row!['QUERY PLAN'][0];
      return { nodes: planNodes(plan.Plan), buffers: (plan.Plan['Shared Hit Blocks'] ?? 0) + (plan.Plan['Shared Read Blocks'] ?? 0), rows: plan.Plan['Actual Rows'] ?? 0, ms: plan['Execution Time'] };
    });
  }
  return out!;
}

beforeAll(async () => {
  await kit.store({ schema: admin.schema }).migrate();
  await admin.query(`insert into ${admin.t('task')} (kind, payload, state, due_at, max_attempts, limit_key)
    select 'keyed', jsonb_build_object('n', g), 'SCHEDULED', now() - interval '1 hour' - g * interval '1 millisecond', 3, 'key-' || (g % ${KEYS})
      from generate_series(1, ${KEYS * PER_KEY}) g`);
  await admin.query(`insert into ${admin.t('key_limit')} (kind, max_claimed) values ('keyed', 1000)`);
  await admin.query(`insert into ${admin.t('key_rate_limit')} (kind, max_starts, window_ms) values ('keyed', 5, 60000)`);
  await admin.query(`vacuum analyze ${admin.t('task')}`);
}, 300_000);
afterAll(async () => {
  await kit.close();
  await admin.drop();
});

describe(`a claim of a kind with a per-key rate limit at ${KEYS * PER_KEY} due tasks over ${KEYS} keys`, () => {
  it('probes the keys through task_limit_key_idx, no sequential scan beyond the keyed claim’s; prints its buffers against the keyed claim without rate limits, and the held-back read with every key full', async () => {
    const keyed = keyLimitStatements(admin.schema);
    const rate = keyRateStatements(admin.schema);
    const kinds = JSON.stringify(['keyed']);
    const args = [null, 'w', 30_000, LIMIT, 'default', kinds, '{}', '{}', null, kinds];
    const rated = await explain(keyed.taskClaimKeyRated, args);
    const plain = await explain(keyed.taskClaimKeyed, args);
    // Every key's window full: 5 claims logged now per key.
    const fill = `insert into ${admin.t('key_rate_log')} (kind, limit_key, starts, last_start)
      select 'keyed', 'key-' || k, array_fill(now(), array[5]), now() from generate_series(0, ${KEYS - 1}) k`;
    const held = await explain(rate.keyRateHeld, [null, kinds, 'default'], [[fill, []]]);
    // The answer itself: held back, and the windows reopen within the minute.
    const answer = await rolledBack(async (q) => {
      await q(fill);
      return (await q<{ held: boolean; reopeninms: number }>(rate.keyRateHeld, [null, kinds, 'default']))[0];
    });
    expect(answer?.held).toBe(true);
    expect(answer?.reopeninms).toBeGreaterThan(50_000);
    expect(answer?.reopeninms).toBeLessThanOrEqual(60_000);
    const taskScans = (nodes: PlanNode[]) => nodes.filter((n) => n['Relation Name'] === 'task').map((n) => n['Node Type']);
    console.log(
      `key-rate plan: rated keyed claim of ${rated.rows} ${rated.buffers} buffers ${rated.ms.toFixed(2)} ms; keyed claim without rate ${plain.rows} ${plain.buffers} buffers ${plain.ms.toFixed(2)} ms; ` +
        `held-back read (all ${KEYS} keys full) ${held.buffers} buffers ${held.ms.toFixed(2)} ms`,
    );
    expect(rated.rows).toBe(LIMIT);
    expect(plain.rows).toBe(LIMIT);
    expect(held.rows).toBe(1);
    // The per-key probes go through task_limit_key_idx; the only sequential scan of task is the probe
    // for due tasks without a key, which the keyed claim of per-key concurrency makes the same way
    // (the planner's choice when no task of the kind lacks a key: it reads 0 rows).
    const seqScans = (nodes: PlanNode[]) => taskScans(nodes).filter((t) => t === 'Seq Scan').length;
    expect(held.nodes.some((n) => n['Index Name'] === 'task_limit_key_idx')).toBe(true);
    expect(rated.nodes.some((n) => n['Index Name'] === 'task_limit_key_idx')).toBe(true);
    expect(seqScans(held.nodes)).toBeLessThanOrEqual(seqScans(plain.nodes));
    expect(seqScans(rated.nodes)).toBeLessThanOrEqual(seqScans(plain.nodes));
  });
});
