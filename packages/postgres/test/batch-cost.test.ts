/**
 * What batches (migration 21, docs/contract.md#batches) cost a task that is in none: the completion
 * of such a task runs the statement-level trigger `task_batch_members_finished`, which returns after
 * one scan of the statement's transition table. Asserted: the trigger fires once per statement and
 * never reaches the batch path (`task_batch_settle` is never called, counted by
 * `pg_stat_user_functions` with `track_functions = 'pl'`) for tasks outside a batch, and is reached for
 * members. Printed, not asserted (timing): the trigger's own time from EXPLAIN ANALYZE ("Triggers")
 * for single completes and for one completeMany-sized statement, next to migration 18's trigger.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statements } from '../src/index.js';
import { Admin, makeKit } from './support/kits.js';

const admin = Admin.create('batch_cost');
const kit = makeKit('pg');

beforeAll(async () => {
  await kit.store({ schema: admin.schema }).migrate();
});
afterAll(async () => {
  await kit.close();
  await admin.drop();
});

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

async function settleCalls(): Promise<number> {
  await admin.query('select pg_stat_clear_snapshot()');
  const [row] = await admin.query<{ n: string | null }>(`select sum(calls)::text as n from pg_stat_user_functions where schemaname = $1 and funcname = 'task_batch_settle'`, [admin.schema]);
  return Number(row?.n ?? 0);
}

describe('batches cost a task outside a batch one early-returning trigger call per statement', () => {
  it('single completes and one 500-row statement: the trigger fires once each and never reaches the batch path; members do', { timeout: 120_000 }, async () => {
    const store = kit.store({ schema: admin.schema });
    const sql = statements(admin.schema);
    const N = 300;
    await store.scheduleMany(Array.from({ length: N + 500 }, (_, i) => ({ kind: 'plain', payload: { i } })));
    const claimed = await store.claim({ owner: 'w', limit: 1_000, leaseMs: 600_000 });
    expect(claimed).toHaveLength(N + 500);
    await admin.query(`set track_functions = 'pl'`);
    const before = await settleCalls();
    const batchMs: number[] = [];
    const noticeMs: number[] = [];
    for (const c of claimed.slice(0, N)) {
      const triggers = await triggersOf(sql.taskCompleteFenced, [null, c.id, c.attempt, '1', 'w']);
      const mine = triggers.find((t) => t['Trigger Name'] === 'task_batch_members_finished');
      expect(mine?.Calls).toBe(1);
      batchMs.push(mine?.Time ?? Number.NaN);
      noticeMs.push(triggers.find((t) => t['Trigger Name'] === 'task_finished_notice')?.Time ?? Number.NaN);
    }
    const items = claimed.slice(N).map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w', result: 1 }));
    const many = await triggersOf(sql.taskCompleteManyFenced, [null, JSON.stringify(items)]);
    const manyMine = many.find((t) => t['Trigger Name'] === 'task_batch_members_finished');
    expect(manyMine?.Calls).toBe(1);
    // Give the statistics collector the calls (pg_stat_user_functions is flushed at transaction end).
    await admin.query('select pg_stat_force_next_flush()');
    expect(await settleCalls()).toBe(before);
    console.log(
      `batch trigger on tasks outside a batch: single complete median ${(median(batchMs) * 1000).toFixed(0)} µs (migration 18's trigger ${(median(noticeMs) * 1000).toFixed(0)} µs) over ${N}; one 500-row completeMany ${((manyMine?.Time ?? 0) * 1000).toFixed(0)} µs`,
    );

    // A member's completion reaches it.
    const id = await store.createBatch({ callback: { kind: 'after' } });
    const [member] = await store.scheduleInBatch(id, [{ kind: 'member' }]);
    const [c] = await store.claim({ owner: 'w', limit: 1, leaseMs: 600_000, kinds: ['member'] });
    expect(c?.id).toBe(member?.id);
    await triggersOf(sql.taskCompleteFenced, [null, c?.id, c?.attempt, '1', 'w']);
    await admin.query('select pg_stat_force_next_flush()');
    expect(await settleCalls()).toBe(before + 1);
    expect(await store.getBatch(id)).toMatchObject({ done: 1, remaining: 0, state: 'OPEN' });
    await store.close();
  });
});
