/**
 * `unclaimedKinds` on a large live table (issue #27; core `unclaimed.ts`): 300 000 SCHEDULED rows not
 * yet due in 20 kinds and three priorities, due backlogs in six kinds, 2 000 CLAIMED rows. EXPLAIN
 * (ANALYZE, BUFFERS, FORMAT JSON) of the very statement the store sends shows no sequential scan of
 * `task`, index scans of the existing `task_claim_idx` (no index of its own), and a few thousand
 * buffers, a small part of the table's pages: the walk costs descents per (queue, kind, priority) and
 * a capped count of the pairs it returns, not a read of the live rows. Generic plans (postgres.js's
 * prepared statements) keep it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminStatements } from '../src/sql/admin-sql.js';
import { Admin, makeKit } from './support/kits.js';
import { type PlanNode, planNodes } from './support/plans.js';

const FUTURE = 300_000;
const admin = Admin.create('unclaimed_plan');
const kit = makeKit('pg');
const sql = adminStatements(admin.schema).unclaimedKinds;
let tablePages = 0;

const explain = (params: unknown[], options?: string) => admin.explainPlan(sql, params, options);

beforeAll(async () => {
  await kit.store({ schema: admin.schema }).migrate();
  const cols = 'kind, queue, priority, payload, state, due_at, attempt, max_attempts, lease_owner, lease_until, created_at, updated_at';
  // Not yet due: k0..k19, priorities -1..1, due in 1 minute to 17 hours.
  await admin.query(`insert into ${admin.t('task')} (${cols})
    select 'k' || (g % 20), 'default', ((g / 1000) % 3 - 1)::smallint, jsonb_build_object('n', g), 'SCHEDULED',
           now() + (g % 1000 + 1) * interval '1 minute', 0, 3, null, null, now(), now()
      from generate_series(1, ${FUTURE}) g`);
  // Due for two hours: 100 each of k0..k5; k0..k4 have CLAIMED tasks (400 each), k5 none.
  await admin.query(`insert into ${admin.t('task')} (${cols})
    select 'k' || (g % 6), 'default', 0::smallint, '{}'::jsonb, 'SCHEDULED', now() - interval '2 hours' - g * interval '1 millisecond', 0, 3, null, null, now(), now()
      from generate_series(0, 599) g`);
  await admin.query(`insert into ${admin.t('task')} (${cols})
    select 'k' || (g % 5), 'default', 0::smallint, '{}'::jsonb, 'CLAIMED', now() - interval '2 hours', 1, 3, 'w1', now() + interval '1 hour', now(), now()
      from generate_series(1, 2000) g`);
  // A typo nobody handles: 5 000 tasks due for an hour, beyond the count cap.
  await admin.query(`insert into ${admin.t('task')} (${cols})
    select 'close-reservaton', 'default', 0::smallint, '{}'::jsonb, 'SCHEDULED', now() - interval '1 hour' - g * interval '1 millisecond', 0, 3, null, null, now(), now()
      from generate_series(1, 5000) g`);
  tablePages = await admin.vacuumPages('task');
}, 600_000);

afterAll(async () => {
  await kit.close();
  await admin.drop();
});

describe(`unclaimedKinds at ${FUTURE} live rows`, () => {
  it('answers the unclaimed pairs: k5 (due 2 h, none claimed) and the typo, its count capped at 1 000; k0..k4 are claimed', async () => {
    const store = kit.store({ schema: admin.schema });
    const found = await store.unclaimedKinds({ dueForMs: 60_000 });
    expect(found.kinds.map((k) => [k.kind, k.due])).toEqual([
      ['k5', 100],
      ['close-reservaton', 1_000],
    ]);
    expect(found.kinds.every((k) => k.queue === 'default' && k.overdueMs >= 3_600_000)).toBe(true);
  });

  it('reads task_claim_idx only, no sequential scan of task, a small part of its pages', async () => {
    const params = [null, 60_000, null, 100];
    await explain(params); // warm
    const { nodes, buffers } = await explain(params);
    const taskScans = nodes.filter((n) => n['Relation Name'] === 'task');
    const kinds = [...new Set(taskScans.map((n) => n['Node Type']))];
    const indexes = [...new Set(taskScans.map((n) => n['Index Name']))].sort();
    console.log(`unclaimedKinds at ${FUTURE} live rows: buffers=${buffers} tablePages=${tablePages} scans=${kinds.join(',')} indexes=${indexes.join(',')}`);
    expect(kinds.filter((k) => !/^Index (Only )?Scan( Backward)?$/.test(k))).toEqual([]);
    expect(indexes).toContain('task_claim_idx');
    // 21 pairs × 3 levels × a few descents, plus the two counts (1 100 index entries): a few thousand at most.
    expect(buffers).toBeLessThan(5_000);
    expect(buffers).toBeLessThan(tablePages / 2);
  });

  it('a generic plan (prepared statement, as postgres.js ends up with) has no sequential scan of task either', async () => {
    const client = await admin.pool.connect();
    try {
      await client.query(`set plan_cache_mode = force_generic_plan`);
      await client.query(`prepare unclaimed_generic(text, float8, text, int) as ${sql}`);
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (format json) execute unclaimed_generic(null, 60000, null, 100)`);
      const nodes = planNodes((rows[0]!['QUERY PLAN'][0] as { Plan: PlanNode }).Plan);
      expect(nodes.filter((n) => n['Relation Name'] === 'task' && /Seq Scan$/.test(n['Node Type']))).toEqual([]);
      expect(nodes.some((n) => n['Index Name'] === 'task_claim_idx')).toBe(true);
    } finally {
      await client.query(`deallocate all; reset plan_cache_mode`);
      client.release();
    }
  });
});
