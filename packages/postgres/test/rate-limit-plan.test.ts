/**
 * What a rate-limited claim costs (docs/contract.md#rate-limits), at 100 000 due tasks of the limited
 * kind and 100 000 of another: EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of the statements the store
 * sends — `rateLimitLock` (the limit's row, by its primary key) and `taskClaimLimited` — shows only
 * index scans of `task` (the backlog is never read beyond the claimed rows) and a few hundred buffers,
 * against the unlimited `taskClaim` of the same batch. Each EXPLAIN ANALYZE runs in a transaction
 * rolled back; the figures printed are the warm second run's.
 */
import { rateLimitStatements } from '../src/sql/rate-limit-sql.js';
import { statements } from '../src/sql/sql.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Admin, makeKit } from './support/kits.js';
import { type PlanNode, planNodes } from './support/plans.js';

const PER_KIND = 100_000;
const LIMIT = 10;
const admin = Admin.create('rate_limit_plan');
const kit = makeKit('pg');

/** EXPLAIN (ANALYZE, BUFFERS) of `sql` after the `before` statements, in one transaction rolled back; the second run's plan and time. */
async function explain(sql: string, params: unknown[], before: [string, unknown[]][] = []): Promise<{ nodes: PlanNode[]; buffers: number; rows: number; ms: number }> {
  let out: { nodes: PlanNode[]; buffers: number; rows: number; ms: number } | undefined;
  for (let run = 0; run < 2; run += 1) {
    await admin.query('begin');
    try {
      for (const [text, args] of before) await admin.query(text, args);
      const [row] = await admin.query<{ 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] }>(`explain (analyze, buffers, format json) ${sql}`, params);
      const plan = row!['QUERY PLAN'][0];
      const nodes = planNodes(plan.Plan);
      out = { nodes, buffers: (plan.Plan['Shared Hit Blocks'] ?? 0) + (plan.Plan['Shared Read Blocks'] ?? 0), rows: plan.Plan['Actual Rows'] ?? 0, ms: plan['Execution Time'] };
    } finally {
      await admin.query('rollback');
    }
  }
  return out!;
}

beforeAll(async () => {
  await kit.store({ schema: admin.schema }).migrate();
  await admin.query(`insert into ${admin.t('task')} (kind, payload, state, due_at, max_attempts)
    select case when g % 2 = 0 then 'limited' else 'free' end, jsonb_build_object('n', g), 'SCHEDULED', now() - interval '1 hour' - g * interval '1 millisecond', 3
      from generate_series(1, ${2 * PER_KIND}) g`);
  await admin.query(`insert into ${admin.t('rate_limit')} (scope, name, max_starts, window_ms) values ('kind', 'limited', 1000, 1000)`);
  await admin.query(`vacuum analyze ${admin.t('task')}`);
}, 300_000);
afterAll(async () => {
  await kit.close();
  await admin.drop();
});

describe(`a rate-limited claim at ${2 * PER_KIND} due tasks`, () => {
  it('reads the limit row by its key and the claimed rows through task_claim_idx only; its buffers stay near the unlimited claim', async () => {
    const sql = statements(admin.schema);
    const rate = rateLimitStatements(admin.schema);
    const kinds = JSON.stringify(['limited']);
    const lockParams = [null, JSON.stringify([['kind', 'limited']])];
    const lock = await explain(rate.rateLimitLock, lockParams);
    const limited = await explain(rate.taskClaimLimited, [null, 'w', 30_000, LIMIT, 'default', kinds, '{}', JSON.stringify({ limited: 1000 }), null], [[rate.rateLimitLock, lockParams]]);
    const plain = await explain(sql.taskClaim, [null, 'w', 30_000, LIMIT, 'default', kinds]);
    const rooms = await explain(rate.rateLimitRooms, lockParams);
    const taskScans = (nodes: PlanNode[]) => nodes.filter((n) => n['Relation Name'] === 'task').map((n) => n['Node Type']);
    console.log(
      `rate-limit plan: lock ${lock.buffers} buffers ${lock.ms.toFixed(2)} ms; limited claim of ${limited.rows} ${limited.buffers} buffers ${limited.ms.toFixed(2)} ms; ` +
        `unlimited claim of ${plain.rows} ${plain.buffers} buffers ${plain.ms.toFixed(2)} ms; rooms read ${rooms.buffers} buffers ${rooms.ms.toFixed(2)} ms`,
    );
    expect(limited.rows).toBe(LIMIT);
    expect(plain.rows).toBe(LIMIT);
    expect(lock.nodes.some((n) => n['Index Name'] === 'rate_limit_pkey' || n['Relation Name'] === 'rate_limit')).toBe(true);
    // No sequential scan of the task table: the backlog is read only where claimed.
    expect(taskScans(limited.nodes).every((t) => t !== 'Seq Scan')).toBe(true);
    expect(taskScans(limited.nodes).length).toBeGreaterThan(0);
    expect(limited.buffers).toBeLessThan(plain.buffers + 200);
    expect(lock.buffers).toBeLessThan(50);
  });
});
