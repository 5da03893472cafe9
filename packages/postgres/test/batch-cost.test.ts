/**
 * What batches (migration 21, docs/contract.md#batches) cost a task that is in none: the row-level
 * trigger `task_batch_members_finished` has `WHEN (old.batch_id is not null)`, evaluated as each row
 * is deleted, so for such a task it is never queued and never fired (PostgreSQL 17 CREATE TRIGGER:
 * "In AFTER triggers, the WHEN condition is evaluated just after the row update occurs, and it
 * determines whether an event is queued to fire the trigger at the end of statement"). Asserted from
 * EXPLAIN ANALYZE ("Triggers": no entry for it, while migration 18's statement trigger fires once) for
 * single completes and one 500-row completeMany statement, and by `pg_stat_user_functions`
 * (`track_functions = 'pl'`): no call of the batch functions; a member's completion calls them.
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

/** Calls of the settle: `task_batch_settle` (migration 21; the seal's) and `task_batch_settle_at` (migration 22; the trigger's). */
async function settleCalls(): Promise<number> {
  await admin.query('select pg_stat_clear_snapshot()');
  const [row] = await admin.query<{ n: string | null }>(
    `select sum(calls)::text as n from pg_stat_user_functions where schemaname = $1 and funcname in ('task_batch_settle', 'task_batch_settle_at')`,
    [admin.schema],
  );
  return Number(row?.n ?? 0);
}

describe('batches cost a task outside a batch nothing: the member trigger is never fired for it', () => {
  it('single completes and one 500-row statement: the batch trigger is not fired, no batch function called; a member fires it once', { timeout: 120_000 }, async () => {
    const store = kit.store({ schema: admin.schema });
    const sql = statements(admin.schema);
    const N = 300;
    await store.scheduleMany(Array.from({ length: N + 500 }, (_, i) => ({ kind: 'plain', payload: { i } })));
    const claimed = await store.claim({ owner: 'w', limit: 1_000, leaseMs: 600_000 });
    expect(claimed).toHaveLength(N + 500);
    await admin.query(`set track_functions = 'pl'`);
    const before = await settleCalls();
    const noticeMs: number[] = [];
    for (const c of claimed.slice(0, N)) {
      const triggers = await triggersOf(sql.taskCompleteFenced, [null, c.id, c.attempt, '1', 'w']);
      expect(triggers.find((t) => t['Trigger Name'] === 'task_batch_members_finished')).toBeUndefined();
      expect(triggers.find((t) => t['Trigger Name'] === 'task_finished_notice')?.Calls).toBe(1);
      noticeMs.push(triggers.find((t) => t['Trigger Name'] === 'task_finished_notice')?.Time ?? Number.NaN);
    }
    const items = claimed.slice(N).map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w', result: 1 }));
    const many = await triggersOf(sql.taskCompleteManyFenced, [null, JSON.stringify(items)]);
    expect(many.find((t) => t['Trigger Name'] === 'task_batch_members_finished')).toBeUndefined();
    expect(many.find((t) => t['Trigger Name'] === 'task_finished_notice')?.Calls).toBe(1);
    // Give the statistics collector the calls (pg_stat_user_functions is flushed at transaction end).
    await admin.query('select pg_stat_force_next_flush()');
    expect(await settleCalls()).toBe(before);
    console.log(`batch trigger on tasks outside a batch: fired 0 times over ${N} completes and one 500-row completeMany (migration 18's trigger: median ${(median(noticeMs) * 1000).toFixed(0)} µs per complete)`);

    // A member's completion reaches it.
    const id = await store.createBatch({ callback: { kind: 'after' } });
    const [member] = await store.scheduleInBatch(id, [{ kind: 'member' }]);
    const [c] = await store.claim({ owner: 'w', limit: 1, leaseMs: 600_000, kinds: ['member'] });
    expect(c?.id).toBe(member?.id);
    const fired = await triggersOf(sql.taskCompleteFenced, [null, c?.id, c?.attempt, '1', 'w']);
    expect(fired.find((t) => t['Trigger Name'] === 'task_batch_members_finished')?.Calls).toBe(1);
    await admin.query('select pg_stat_force_next_flush()');
    expect(await settleCalls()).toBe(before + 1);
    expect(await store.getBatch(id)).toMatchObject({ done: 1, remaining: 0, state: 'OPEN' });
    await store.close();
  });
});
