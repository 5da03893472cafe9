/**
 * The list and the stats at 1 M LIVE rows (issue 24, migration 14 in `src/sql/live-index-sql.ts`): with
 * only the hot path's indexes on `task` (primary key, `task_claim_idx`, `task_claimed_idx`,
 * `task_key_idx`, plus `task_scheduled_kind_idx` and `task_error_idx`, which a first claim does not
 * write), EXPLAIN (ANALYZE, BUFFERS) of the very statements the store sends shows no sequential scan
 * of `task`, and each page reads under 5 % of its pages (plus the CLAIMED rows once per kind asked for); the stats read the live rows once; generic plans (postgres.js's
 * prepared statements) keep an index too. The live rows: 990 000 SCHEDULED of nine common kinds
 * (a third of them due), 100 of a rare kind, 2 000 CLAIMED, 1 000 SCHEDULED that failed before (a
 * last error).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminStatements } from '../src/sql/admin-sql.js';
import { Admin, makeKit } from './support/kits.js';
import type { PlanNode, } from './support/plans.js';

const admin = Admin.create('live_list_plans');
const kit = makeKit('pg');
const sql = adminStatements(admin.schema);
let taskPages = 0;
const CLAIMED = 1_987;

const explain = (text: string, params: unknown[], options?: string) => admin.explainPlan(text, params, options);

/** Sequential scans of the live table that ran (`Actual Loops` 0: a branch the state gate switched off). */
const seqScansOfTask = (nodes: PlanNode[]) => nodes.filter((n) => /Seq Scan$/.test(n['Node Type']) && n['Actual Loops'] !== 0 && n['Relation Name'] === 'task');
const indexesUsed = (nodes: PlanNode[]) => [...new Set(nodes.map((n) => n['Index Name']).filter((n): n is string => n !== undefined))].sort();

beforeAll(async () => {
  await kit.store({ schema: admin.schema }).migrate();
  await admin.query(`insert into ${admin.t('task')} (kind, payload, state, due_at, attempt, max_attempts, lease_owner, lease_until, last_error, failures)
    select case when g <= 100 then 'rare' else 'k' || (g % 9) end,
           jsonb_build_object('n', g),
           case when g % 500 = 7 then 'CLAIMED' else 'SCHEDULED' end,
           now() + ((g % 3) - 1) * interval '1 hour' + (g % 1000) * interval '1 second',
           case when g % 500 = 7 then 1 else 0 end,
           3,
           case when g % 500 = 7 then 'w1' end,
           case when g % 500 = 7 then now() + interval '1 hour' end,
           case when g % 1000 = 11 then 'boom ' || g end,
           case when g % 1000 = 11 then 1 else 0 end
      from generate_series(1, 993100) g`);
  taskPages = await admin.vacuumPages('task');
}, 600_000);

afterAll(async () => {
  await kit.close();
  await admin.drop();
});

// list parameters: $1 states, $2 kinds, $3 due from, $4 due before, $5 has error, $6 limit, $7 cursor id, $8 queue
const LIST_CASES: [string, 'listNewest' | 'listOldest' | 'listNewestByKind' | 'listOldestByKind', unknown[]][] = [
  ['newest, no filter', 'listNewest', [null, null, null, null, null, 51, null, null]],
  ['oldest, no filter, from the middle', 'listOldest', [null, null, null, null, null, 51, '500000', null]],
  ['SCHEDULED, newest', 'listNewest', [JSON.stringify(['SCHEDULED']), null, null, null, null, 51, null, null]],
  ['SCHEDULED of the rare kind, newest', 'listNewestByKind', [JSON.stringify(['SCHEDULED']), JSON.stringify(['rare']), null, null, null, 51, null, null]],
  ['SCHEDULED of kind k3, oldest, page after id 600000', 'listOldestByKind', [JSON.stringify(['SCHEDULED']), JSON.stringify(['k3']), null, null, null, 51, '600000', null]],
  ['CLAIMED, newest', 'listNewest', [JSON.stringify(['CLAIMED']), null, null, null, null, 51, null, null]],
  ['CLAIMED of kind k1', 'listNewestByKind', [JSON.stringify(['CLAIMED']), JSON.stringify(['k1']), null, null, null, 51, null, null]],
  ['any live state of kinds rare and k5', 'listNewestByKind', [null, JSON.stringify(['rare', 'k5']), null, null, null, 51, null, null]],
  ['with a last error', 'listNewest', [null, null, null, null, true, 51, null, null]],
];

describe('list and stats at 1 M live rows', () => {
  it('the live table is large and holds the hot-path indexes only', async () => {
    const counts = await admin.query<{ state: string; n: number }>(`select state, count(*)::int as n from ${admin.t('task')} group by state order by state`);
    const indexes = await admin.query<{ name: string }>(`select indexrelid::regclass::text as name from pg_index where indrelid = $1::regclass`, [admin.t('task')]);
    expect(indexes.map((i) => i.name.replace(/^.*\./, '')).sort()).toEqual(['task_claim_idx', 'task_claimed_idx', 'task_error_idx', 'task_key_idx', 'task_limit_key_idx', 'task_pkey', 'task_scheduled_kind_idx']);
    expect(Object.fromEntries(counts.map((c) => [c.state, c.n]))).toEqual({ CLAIMED, SCHEDULED: 991_113 });
    expect(taskPages).toBeGreaterThan(10_000);
  });

  it.each(LIST_CASES)('list (%s): index scans only, a page reads under 5 %% of the table (plus the CLAIMED rows for a kind)', async (name, statement, params) => {
    const { nodes, buffers, root } = await explain(sql[statement], params);
    // A kind among the CLAIMED rows is a filter on them (task_claimed_idx): at most one page each, and
    // they are at most the fleet's concurrency (here 1 987, a row every 500, each on its own page), read once per kind.
    const bound = taskPages / 20 + (statement.endsWith('ByKind') && params[0] !== JSON.stringify(['SCHEDULED']) ? CLAIMED * (JSON.parse(String(params[1])) as string[]).length : 0);
    if (seqScansOfTask(nodes).length > 0 || buffers >= bound) {
      const text = await admin.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${sql[statement]}`, params);
      console.log(`${name}\n${text.map((r) => r['QUERY PLAN']).join('\n')}`);
    }
    console.log(`live list ${name}: rows=${root['Actual Rows']} buffers=${buffers} taskPages=${taskPages} indexes=${indexesUsed(nodes).join(',')}`);
    expect(seqScansOfTask(nodes)).toEqual([]);
    expect(root['Actual Rows']).toBe(51);
    expect(buffers, `buffers of ${name} (task: ${taskPages} pages)`).toBeLessThan(bound);
    const generic = await explain(sql[statement], [], 'generic_plan');
    expect(generic.nodes.filter((n) => /Seq Scan$/.test(n['Node Type']) && n['Relation Name'] === 'task')).toEqual([]);
    console.log(`live list ${name}, generic plan: indexes=${indexesUsed(generic.nodes).join(',')}`);
  });

  it('stats read the live rows once, correctly counted', async () => {
    // Counting a backlog reads it (before migration 14, index-only through task_state_kind_id_idx; now the
    // planner reads the table or task_claim_idx, whichever is cheaper): bounded by the live rows, never by history.
    const { nodes, buffers } = await explain(sql.stats, [null]);
    console.log(`live stats: buffers=${buffers} taskPages=${taskPages} nodes=${nodes.map((n) => `${n['Node Type']}/${n['Index Name'] ?? n['Relation Name'] ?? ''}`).join(',')}`);
    expect(nodes.filter((n) => (n['Relation Name'] ?? '').startsWith('task_history_done'))).toEqual([]);
    const store = kit.store({ schema: admin.schema });
    const stats = await store.stats();
    expect({ scheduled: stats.scheduled, claimed: stats.claimed, dead: stats.dead }).toEqual({ scheduled: 991_113, claimed: CLAIMED, dead: 0 });
    expect(stats.byKind.find((k) => k.kind === 'rare')?.scheduled).toBe(99); // g = 7 is CLAIMED
  });
});
