/**
 * What batches (migration 21, docs/contract.md#batches) cost a task that is in none. Since migration
 * 25 no trigger on `task` is row-level or has a transition table: one statement-level trigger
 * `task_finished` fires once per DELETE statement and reads what the statement handed over
 * (`../src/sql/finish-handoff-sql.ts`); a task outside a batch, without dependents and with nobody
 * waiting hands over nothing, so the trigger returns at once and calls none of the finish functions.
 * Asserted from EXPLAIN ANALYZE ("Triggers": `task_finished` once, no other) for single completes and
 * one 500-row completeMany statement, and by `pg_stat_user_functions` (`track_functions = 'pl'`): no
 * call of the batch, release or notice functions; a member's completion calls the batch one once.
 */
import { describe, expect, it } from 'vitest';
import { statements } from '../src/index.js';
import { migratedKit } from './support/kits.js';

const { admin, kit } = migratedKit('batch_cost');

interface TriggerTime {
  readonly 'Trigger Name': string;
  readonly Time: number;
  readonly Calls: number;
}

/** Runs `text` under EXPLAIN (ANALYZE, FORMAT JSON) in `track_functions = 'pl'` and returns its trigger timings. */
async function triggersOf(text: string, params: unknown[]): Promise<TriggerTime[]> {
  const [row] = await admin.query<{ 'QUERY PLAN': [{ Triggers?: TriggerTime[] }] }>(`explain (analyze, format json) ${text}`, params);
  return row?.['QUERY PLAN'][0].Triggers ?? [];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** Calls of `names`, functions of the schema (`pg_stat_user_functions`). */
async function callsOf(...names: string[]): Promise<number> {
  await admin.query('select pg_stat_clear_snapshot()');
  const [row] = await admin.query<{ n: string | null }>(`select sum(calls)::text as n from pg_stat_user_functions where schemaname = $1 and funcname = any($2::text[])`, [admin.schema, names]);
  return Number(row?.n ?? 0);
}

/** The settle (`task_batch_settle` of 21, the seal's; `task_batch_settle_at` of 22, the trigger's) and the finish functions of migration 25. */
const FINISH_WORK = ['task_batch_settle', 'task_batch_settle_at', 'task_finished_batches', 'task_finished_dependents', 'task_finished_notice'];

describe('batches cost a task outside a batch nothing: the finish trigger calls no function for it', () => {
  it('single completes and one 500-row statement: one trigger call per statement, no finish function called; a member calls the batch function once', { timeout: 120_000 }, async () => {
    const store = kit.store({ schema: admin.schema });
    const sql = statements(admin.schema);
    const N = 300;
    await store.scheduleMany(Array.from({ length: N + 500 }, (_, i) => ({ kind: 'plain', payload: { i } })));
    const claimed = await store.claim({ owner: 'w', limit: 1_000, leaseMs: 600_000 });
    expect(claimed).toHaveLength(N + 500);
    await admin.query(`set track_functions = 'pl'`);
    const before = await callsOf(...FINISH_WORK);
    const noticeMs: number[] = [];
    for (const c of claimed.slice(0, N)) {
      const triggers = await triggersOf(sql.taskCompleteFenced, [null, c.id, c.attempt, '1', 'w']);
      expect(triggers.map((t) => [t['Trigger Name'], t.Calls])).toEqual([['task_finished', 1]]);
      noticeMs.push(triggers[0]?.Time ?? Number.NaN);
    }
    const items = claimed.slice(N).map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w', result: 1 }));
    const many = await triggersOf(sql.taskCompleteManyFenced, [null, JSON.stringify(items)]);
    expect(many.map((t) => [t['Trigger Name'], t.Calls])).toEqual([['task_finished', 1]]);
    // Give the statistics collector the calls (pg_stat_user_functions is flushed at transaction end).
    await admin.query('select pg_stat_force_next_flush()');
    expect(await callsOf(...FINISH_WORK)).toBe(before);
    console.log(`finish functions on tasks outside a batch: called 0 times over ${N} completes and one 500-row completeMany (the trigger task_finished: median ${(median(noticeMs) * 1000).toFixed(0)} µs per complete)`);

    // A member's completion reaches it.
    const id = await store.createBatch({ callback: { kind: 'after' } });
    const [member] = await store.scheduleInBatch(id, [{ kind: 'member' }]);
    const [c] = await store.claim({ owner: 'w', limit: 1, leaseMs: 600_000, kinds: ['member'] });
    expect(c?.id).toBe(member?.id);
    const fired = await triggersOf(sql.taskCompleteFenced, [null, c?.id, c?.attempt, '1', 'w']);
    expect(fired.map((t) => [t['Trigger Name'], t.Calls])).toEqual([['task_finished', 1]]);
    await admin.query('select pg_stat_force_next_flush()');
    expect(await callsOf('task_batch_settle_at')).toBe(1);
    expect(await callsOf('task_finished_batches')).toBe(1);
    expect(await store.getBatch(id)).toMatchObject({ done: 1, remaining: 0, state: 'OPEN' });
    await store.close();
  });
});
