/**
 * The claim of a worker that runs 2 of 20 kinds, at 1 M rows (migration 10, docs/contract.md#priorities):
 * EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of the very statement the store sends shows only index
 * scans of `task`, no filter throwing rows away (the other 18 kinds' due backlog, the not-yet-due
 * rows of higher priority and the finished history are never read), a few hundred buffers at most, and the claimed rows
 * of the two kinds in priority order. Each EXPLAIN ANALYZE runs in a transaction rolled back.
 */
import { statements } from '../src/sql/sql.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Admin, makeKit } from './support/kits.js';
import { type PlanNode, planNodes } from './support/plans.js';

const ROWS = 1_000_000;
const admin = Admin.create('claim_plan');
const kit = makeKit('pg');
let tablePages = 0;

/** The claim of `kinds` (limit 10, database clock) under EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON), rolled back; the second, warm run. */
async function explainClaim(
  kinds: readonly string[] | null,
  claimSql: string = statements(admin.schema).taskClaim,
): Promise<{ root: PlanNode; nodes: PlanNode[]; buffers: number; pickBuffers: number }> {
  const params = [null, 'w', 30_000, 10, 'default', kinds === null ? null : JSON.stringify(kinds)];
  let root: PlanNode | undefined;
  for (let run = 0; run < 2; run += 1) {
    await admin.query('begin');
    try {
      const [row] = await admin.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (analyze, buffers, format json) ${claimSql}`, params);
      root = (row!['QUERY PLAN'][0] as { Plan: PlanNode }).Plan;
    } finally {
      await admin.query('rollback');
    }
  }
  const nodes = planNodes(root!);
  const blocks = (n: PlanNode | undefined) => (n?.['Shared Hit Blocks'] ?? 0) + (n?.['Shared Read Blocks'] ?? 0);
  // The pick (levels, range scans, row locks) apart from the UPDATE's own writes of the claimed rows and their index entries.
  return { root: root!, nodes, buffers: blocks(root), pickBuffers: blocks(nodes.find((n) => n['Subplan Name'] === 'CTE picked')) };
}

beforeAll(async () => {
  await kit.store({ schema: admin.schema }).migrate();
  // One statement: 20 kinds (k0..k19, by g % 20); every 50th block of 20 rows SCHEDULED (20 000 rows,
  // 1 000 per kind), of those blocks alternately due (an hour ago and earlier) and not yet due (in an
  // hour and later); priorities -1, 0, 1 by g / 1000; the other 980 000 rows DONE history. Ids 1..ROWS
  // from the one id sequence; the backlog goes to task, the history to task_history as the store moves
  // it (finished_at = updated_at): since migration 12 task refuses a finished row.
  const cols = 'kind, queue, priority, payload, state, due_at, attempt, max_attempts, created_at, updated_at';
  await admin.query(`with src as materialized (
    select g as id, 'k' || (g % 20) as kind, 'default' as queue, (case when s.live then ((g / 1000) % 3) - 1 else 0 end)::smallint as priority,
           jsonb_build_object('n', g) as payload,
           case when s.live then 'SCHEDULED' else 'DONE' end as state,
           case when not s.live then now() - interval '2 days'
                when (g / 1000) % 2 = 0 then now() - interval '1 hour' - g * interval '1 millisecond'
                else now() + interval '1 hour' + g * interval '1 millisecond' end as due_at,
           case when s.live then 0 else 1 end as attempt, 3 as max_attempts,
           now() - interval '2 days' as created_at, now() - interval '2 days' as updated_at
      from generate_series(1, ${ROWS}) g,
           lateral (select (g / 20) % 50 = 0 as live) s
  ), live as (
    insert into ${admin.t('task')} (id, ${cols}) overriding system value
    select id, ${cols} from src where state = 'SCHEDULED'
  )
  insert into ${admin.t('task_history')} (id, ${cols}, finished_at)
  select id, ${cols}, updated_at from src where state = 'DONE'`);
  await admin.query(`select setval(pg_get_serial_sequence($1, 'id'), $2)`, [admin.t('task'), ROWS]);
  await admin.query(`vacuum analyze ${admin.t('task')}`);
  await admin.query(`analyze ${admin.t('task_history')}`);
  // The pages of live and history together (what a claim reading history would touch).
  const [row] = await admin.query<{ pages: number }>(
    `select ((select relpages from pg_class where oid = $1::regclass) + (select coalesce(sum(c.relpages), 0) from pg_partition_tree($2::regclass) p join pg_class c on c.oid = p.relid where p.isleaf))::int as pages`,
    [admin.t('task'), admin.t('task_history')],
  );
  tablePages = Number(row?.pages ?? 0);
}, 600_000);

afterAll(async () => {
  await kit.close();
  await admin.drop();
});

describe(`claim plan at ${ROWS} rows, 20 kinds`, () => {
  it('the table: history dominates; each of the 20 kinds has a due backlog and rows not yet due, in three priorities', async () => {
    const [row] = await admin.query<{ scheduled: number; due: number; kinds: number; priorities: number; done: number }>(
      `select count(*) filter (where state = 'SCHEDULED')::int as scheduled,
              count(*) filter (where state = 'SCHEDULED' and due_at <= now())::int as due,
              count(distinct kind) filter (where state = 'SCHEDULED')::int as kinds,
              count(distinct priority) filter (where state = 'SCHEDULED' and due_at <= now())::int as priorities,
              (select count(*) from ${admin.t('task_history')} where state = 'DONE')::int as done
         from ${admin.t('task')}`,
    );
    expect(row).toEqual({ scheduled: 20_000, due: expect.any(Number), kinds: 20, priorities: 3, done: 980_000 });
    expect(row!.due).toBeGreaterThan(5_000);
    expect(tablePages).toBeGreaterThan(10_000);
  });

  it('claiming 2 of the 20 kinds: index scans only, no rows removed by a filter, a few hundred buffers, highest priority first', async () => {
    const { nodes, buffers, pickBuffers, root } = await explainClaim(['k3', 'k11']);
    const taskScans = nodes.filter((n) => n['Relation Name'] === 'task' && n['Node Type'] !== 'ModifyTable');
    const kinds = taskScans.map((n) => n['Node Type']);
    const removed = taskScans.reduce((sum, n) => sum + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0), 0);
    const levelScans = taskScans.filter((n) => /due_at <=/.test(n['Index Cond'] ?? ''));
    console.log(`claim of 2 of 20 kinds at ${ROWS} rows: buffers=${buffers} pickBuffers=${pickBuffers} tablePages=${tablePages} rowsRemovedByFilter=${removed} scans=${kinds.join(',')}`);
    expect(kinds.filter((k) => !/^Index (Only )?Scan$/.test(k))).toEqual([]);
    // The range scans of the (kind, priority) levels: 2 kinds × 3 priorities, bounded by due_at in the Index Cond.
    expect(levelScans.length).toBeGreaterThan(0);
    expect(levelScans.every((n) => n['Index Name'] === 'task_claim_idx')).toBe(true);
    expect(removed).toBe(0);
    // The pick descends the index once per level (2 kinds × 3 priorities) and locks at most 10 rows in
    // each, each row on its own heap page here (~3 buffers a row: index leaf, heap, lock): about 200,
    // whatever the history or the other kinds' backlog. The UPDATE then writes 10 rows and their index entries.
    expect(pickBuffers).toBeLessThan(400);
    expect(buffers).toBeLessThan(tablePages / 30);
    expect(root['Node Type']).toBe('ModifyTable');

    // What the statement takes (for real, then rolled back): 10 rows of k3/k11, all of the highest priority present (1).
    await admin.query('begin');
    try {
      const claimed = await admin.query<{ kind: string; priority: number; dueatms: number }>(statements(admin.schema).taskClaim, [
        null,
        'w',
        30_000,
        10,
        'default',
        JSON.stringify(['k3', 'k11']),
      ]);
      expect(claimed).toHaveLength(10);
      expect(new Set(claimed.map((r) => r.kind))).toEqual(new Set(['k3', 'k11']));
      expect(claimed.every((r) => r.priority === 1 && r.dueatms <= Date.now())).toBe(true);
    } finally {
      await admin.query('rollback');
    }
  });

  it('the same claim for every kind (kinds null) stays an index walk: no filter, buffers bounded by the 20 × 3 levels (each locks up to 10 rows)', async () => {
    const { nodes, buffers, pickBuffers } = await explainClaim(null);
    const taskScans = nodes.filter((n) => n['Relation Name'] === 'task' && n['Node Type'] !== 'ModifyTable');
    const removed = taskScans.reduce((sum, n) => sum + (n['Rows Removed by Filter'] ?? 0), 0);
    console.log(`claim of every kind at ${ROWS} rows: buffers=${buffers} pickBuffers=${pickBuffers} rowsRemovedByFilter=${removed}`);
    expect(taskScans.map((n) => n['Node Type']).filter((k) => !/^Index (Only )?Scan$/.test(k))).toEqual([]);
    expect(removed).toBe(0);
    expect(buffers).toBeLessThan(tablePages / 5);
  });

  it('pause (migration 15): nothing paused costs the claim a few buffers over the statement without the check; a paused kind is not walked, a paused queue walks nothing', async () => {
    const taskScans = (nodes: PlanNode[]) => nodes.filter((n) => n['Relation Name'] === 'task' && n['Node Type'] !== 'ModifyTable');
    const removedOf = (nodes: PlanNode[]) => taskScans(nodes).reduce((sum, n) => sum + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0), 0);
    // The same claim without the pause check (what a store on a schema before 15 sends) against the one with it, nothing paused.
    const before = await explainClaim(['k3', 'k11'], statements(admin.schema, { pause: false }).taskClaim);
    const unpaused = await explainClaim(['k3', 'k11']);
    const everyBefore = await explainClaim(null, statements(admin.schema, { pause: false }).taskClaim);
    const everyUnpaused = await explainClaim(null);
    expect(taskScans(unpaused.nodes).map((n) => n['Node Type']).filter((k) => !/^Index (Only )?Scan$/.test(k))).toEqual([]);
    expect(taskScans(unpaused.nodes).filter((n) => /due_at <=/.test(n['Index Cond'] ?? '')).every((n) => n['Index Name'] === 'task_claim_idx')).toBe(true);
    expect(removedOf(unpaused.nodes)).toBe(0);
    // One probe of the empty pause table for the queue and one per kind: at most a buffer or two each.
    expect(unpaused.pickBuffers - before.pickBuffers).toBeLessThanOrEqual(2 * (2 + 1));
    expect(everyUnpaused.pickBuffers - everyBefore.pickBuffers).toBeLessThanOrEqual(2 * (20 + 1));

    await admin.query(`insert into ${admin.t('pause')} (scope, name) values ('kind', 'k3')`);
    await admin.query(`analyze ${admin.t('pause')}`);
    let kindPaused: Awaited<ReturnType<typeof explainClaim>>;
    let queuePaused: Awaited<ReturnType<typeof explainClaim>>;
    try {
      kindPaused = await explainClaim(['k3', 'k11']);
      expect(removedOf(kindPaused.nodes)).toBe(0);
      // Index scans of task_claim_idx only (and the UPDATE's primary-key lookup of the picked ids).
      const scans = taskScans(kindPaused.nodes).map((n) => `${n['Node Type']}/${n['Index Name']}`);
      expect(scans.filter((x) => !/^Index (Only )?Scan\/task_claim_idx$/.test(x) && x !== 'Index Scan/task_pkey')).toEqual([]);
      await admin.query('begin');
      try {
        const claimed = await admin.query<{ kind: string }>(statements(admin.schema).taskClaim, [null, 'w', 30_000, 10, 'default', JSON.stringify(['k3', 'k11'])]);
        expect(claimed).toHaveLength(10);
        expect(new Set(claimed.map((r) => r.kind))).toEqual(new Set(['k11']));
      } finally {
        await admin.query('rollback');
      }
      // The paused kind's levels are not walked: about half the pick of the two kinds.
      expect(kindPaused.pickBuffers).toBeLessThan(unpaused.pickBuffers);

      await admin.query(`insert into ${admin.t('pause')} (scope, name) values ('queue', 'default')`);
      await admin.query(`analyze ${admin.t('pause')}`);
      queuePaused = await explainClaim(null);
      await admin.query('begin');
      try {
        expect(await admin.query(statements(admin.schema).taskClaim, [null, 'w', 30_000, 10, 'default', null])).toEqual([]);
      } finally {
        await admin.query('rollback');
      }
      // The queue's probe is a One-Time Filter: no level is walked, no row of task read.
      expect(queuePaused.pickBuffers).toBeLessThanOrEqual(4);
    } finally {
      await admin.query(`delete from ${admin.t('pause')}`);
    }
    console.log(
      `claim plan and pauses at ${ROWS} rows: 2 of 20 kinds pickBuffers without the check ${before.pickBuffers}, with it nothing paused ${unpaused.pickBuffers}, ` +
        `k3 paused ${kindPaused.pickBuffers}; every kind without ${everyBefore.pickBuffers}, with nothing paused ${everyUnpaused.pickBuffers}, queue paused ${queuePaused.pickBuffers}`,
    );
  });
});
