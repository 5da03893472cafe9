/**
 * Lock order between batches (issue #26 item 5, README "Failure modes"):
 * `scheduleMany` with dedup keys against `completeMany` / `extendMany` over the same holders never
 * wait on each other in a cycle, whatever order the caller lists keys and ids in.
 *
 * The interleaving is forced, not hoped for: a third session locks the middle holder, so the batch
 * (ids 1, 2, 3 in id order) stops after locking id 1; `scheduleMany` then starts with keys whose
 * holders are ids 3 and 1. Had it locked id 3 before waiting for id 1, releasing the middle holder
 * would close the cycle (the batch wants id 3) and PostgreSQL would abort one of them with 40P01
 * after `deadlock_timeout` — which is what this test met before `taskInsertMany` locked holders in id
 * order.
 *
 * The second block forces the gap that was left (a holder another scheduler commits while a
 * `scheduleMany` is already running, which `on conflict do update` locked in key order): a
 * scheduler's open transaction holds a new task with key b (the smallest id), the batch
 * [m, b, a] is held up by a third session on holder m, the scheduler commits, and a `cancelMany`
 * over [holder a, b] locks them in id order. Before the key locks (`taskKeyLocks`) the batch then
 * waited for b while `cancelMany` held b and waited for holder a, which the batch held: 40P01.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { type PostgresStore, statements } from '../src/index.js';
import { DRIVERS, makeKit, migratedSchema, waitFor } from './support/kits.js';

const admin = migratedSchema('lock_order');
const KIND = 'lock-order';
const LEASE_MS = 600_000;

/**
 * Sessions of this database waiting for a lock (a row lock is waited for on the holder's transaction
 * id, which has no database); `rowOnly`: not counting waits for an advisory lock (a key lock).
 */
async function waiting(rowOnly = false): Promise<number> {
  const [row] = await admin.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query like '%' || $1 || '%'
        and (not $2::boolean or wait_event <> 'advisory')`,
    [admin.schema, rowOnly],
  );
  return row?.n ?? 0;
}

async function deadlocks(): Promise<number> {
  // The counter of this database as the statistics collector last flushed it (PostgreSQL 17 §27.2.2).
  const [row] = await admin.query<{ n: number }>('select deadlocks::int as n from pg_stat_database where datname = current_database()');
  return row?.n ?? -1;
}

const BATCHES = ['completeMany', 'extendMany'] as const;
const KEY_ORDERS = [
  ['a', 'b'],
  ['b', 'a'],
] as const;

describe.each(DRIVERS)('lock order of batches (%s)', (driver) => {
  const kit = makeKit(driver);
  afterAll(() => kit.close());

  describe.each(BATCHES)('%s against scheduleMany', (batch) => {
    it.each(KEY_ORDERS)('keys listed %s, %s: both statements succeed, no deadlock', async (...keys) => {
      await admin.truncate();
      const store: PostgresStore<any> = kit.store({ schema: admin.schema });
      try {
        // ids follow scheduling order: 1 holds key b, 2 the blocker, 3 key a (key order ≠ id order).
        const holderB = await store.schedule({ kind: KIND, key: 'b', payload: {} });
        const middle = await store.schedule({ kind: KIND, key: 'm', payload: {} });
        const holderA = await store.schedule({ kind: KIND, key: 'a', payload: {} });
        expect(BigInt(holderB.id) < BigInt(middle.id) && BigInt(middle.id) < BigInt(holderA.id)).toBe(true);
        const claimed = await store.claim({ owner: 'w', limit: 3, leaseMs: LEASE_MS, kinds: [KIND] });
        expect(claimed.map((c) => c.id).sort()).toEqual([holderB.id, middle.id, holderA.id].sort());
        const items = [holderB, middle, holderA].map((t) => ({ id: t.id, attempt: 1, owner: 'w' }));

        const blocker = await admin.pool.connect();
        try {
          await blocker.query('begin');
          await blocker.query(`select id from ${admin.t('task')} where id = $1::bigint for update`, [middle.id]);
          const batchDone =
            batch === 'completeMany' ? store.completeMany(items) : store.extendMany({ items: items.map(({ id, attempt }) => ({ id, attempt })), leaseMs: LEASE_MS });
          const settledBatch = Promise.allSettled([batchDone]);
          await waitFor(async () => (await waiting()) === 1, `${batch} waiting for the middle holder`);
          const scheduled = store.scheduleMany(keys.map((key) => ({ kind: KIND, key, payload: { again: key } })));
          const settledSchedule = Promise.allSettled([scheduled]);
          await waitFor(async () => (await waiting()) === 2, 'scheduleMany waiting for a holder');
          await blocker.query('commit');
          const [[batchOutcome], [scheduleOutcome]] = await Promise.all([settledBatch, settledSchedule]);
          expect(batchOutcome).toMatchObject({ status: 'fulfilled' });
          expect(scheduleOutcome).toMatchObject({ status: 'fulfilled' });
          const results = (scheduleOutcome as PromiseFulfilledResult<Awaited<typeof scheduled>>).value;
          const holderOf = { a: holderA.id, b: holderB.id } as const;
          if (batch === 'completeMany') {
            expect((batchOutcome as PromiseFulfilledResult<unknown>).value).toEqual(['DONE', 'DONE', 'DONE']);
            // The holders moved to history before scheduleMany went on: its keys were free again.
            expect(results.map((r) => r.created)).toEqual([true, true]);
            expect(results.every((r, i) => r.id !== holderOf[keys[i]!])).toBe(true);
          } else {
            expect((batchOutcome as PromiseFulfilledResult<unknown>).value).toEqual([true, true, true]);
            // Still CLAIMED: `keep` returns each holder.
            expect(results.map((r) => r.created)).toEqual([false, false]);
            expect(results.map((r) => r.id)).toEqual(keys.map((k) => holderOf[k]));
          }
        } finally {
          await blocker.query('rollback').catch(() => {});
          blocker.release();
        }
      } finally {
        await store.close();
      }
    });
  });
});

describe.each(DRIVERS)('a holder committed while scheduleMany runs (%s)', (driver) => {
  const kit = makeKit(driver);
  afterAll(() => kit.close());

  it('scheduleMany [m, b, a] against cancelMany [a, b] with b committed meanwhile: both succeed, no deadlock', { timeout: 30_000 }, async () => {
    await admin.truncate();
    const store: PostgresStore<any> = kit.store({ schema: admin.schema });
    const deadlocksBefore = await deadlocks();
    let commitB: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      commitB = resolve;
    });
    let heldB: (id: string) => void = () => {};
    const bScheduled = new Promise<string>((resolve) => {
      heldB = resolve;
    });
    // b: drawn first (id 1), committed only when the gate opens.
    const scheduler = kit.inTransaction(async (tx) => {
      const [b] = await store.scheduleMany([{ kind: KIND, key: 'b', payload: { by: 'scheduler' } }], { tx });
      heldB((b as { id: string }).id);
      await gate;
    }, 'commit');
    const blocker = await admin.pool.connect();
    try {
      const bId = await bScheduled;
      const holderA = await store.schedule({ kind: KIND, key: 'a', payload: {} });
      const holderM = await store.schedule({ kind: KIND, key: 'm', payload: {} });
      expect(BigInt(bId) < BigInt(holderA.id) && BigInt(holderA.id) < BigInt(holderM.id)).toBe(true);

      await blocker.query('begin');
      await blocker.query(`select id from ${admin.t('task')} where id = $1::bigint for update`, [holderM.id]);
      const batch = Promise.allSettled([store.scheduleMany(['m', 'b', 'a'].map((key) => ({ kind: KIND, key, payload: { again: key } })))]);
      // Before the fix: waiting for holder m with a lock on holder a. After: waiting for key b's lock.
      await waitFor(async () => (await waiting()) === 1, 'scheduleMany waiting');
      commitB();
      await scheduler;
      // Now waiting for holder m in both cases (after the fix: with b and a locked, in id order).
      await waitFor(async () => (await waiting(true)) === 1, 'scheduleMany waiting for holder m');
      const cancel = Promise.allSettled([store.cancelMany({ ids: [holderA.id, bId] })]);
      await waitFor(async () => (await waiting(true)) === 2, 'cancelMany waiting');
      await blocker.query('commit');
      const [[batchOutcome], [cancelOutcome]] = await Promise.all([batch, cancel]);
      expect(batchOutcome).toMatchObject({ status: 'fulfilled' });
      expect(cancelOutcome).toMatchObject({ status: 'fulfilled' });
      const scheduled = (batchOutcome as PromiseFulfilledResult<Awaited<ReturnType<typeof store.scheduleMany>>>).value;
      // The batch ran first (cancelMany waited for it): `keep` returned the three holders.
      expect(scheduled.map((r) => [r.id, r.created])).toEqual([
        [holderM.id, false],
        [bId, false],
        [holderA.id, false],
      ]);
      const cancelled = (cancelOutcome as PromiseFulfilledResult<Awaited<ReturnType<typeof store.cancelMany>>>).value;
      expect(cancelled.counts.CANCELLED).toBe(2);
      const left = await admin.query<{ key: string }>(`select key from ${admin.t('task')} order by id`);
      expect(left.map((r) => r.key)).toEqual(['m']);
      await waitFor(async () => (await deadlocks()) >= deadlocksBefore, 'statistics');
      expect((await deadlocks()) - deadlocksBefore).toBe(0);
    } finally {
      commitB();
      await scheduler.catch(() => {});
      await blocker.query('rollback').catch(() => {});
      blocker.release();
      await store.close();
    }
  });
});

describe('the key locks are taken in one order', () => {
  it('taskKeyLocks and the keylocks of taskInsertMany call pg_advisory_xact_lock above the sort by lock key', async () => {
    const s = statements(admin.schema);
    const batch = JSON.stringify(['b', 'a', 'c'].map((key) => ({ kind: KIND, key })));
    const plan = async (text: string, params: unknown[]) => {
      const rows = await admin.query<{ 'QUERY PLAN': string }>(`explain (verbose, costs off) ${text}`, params);
      return rows.map((r) => r['QUERY PLAN']);
    };
    // A generic plan would not show constants; the parameters are given, as the store does.
    const locks = await plan(s.taskKeyLocks, [batch]);
    const lockAt = locks.findIndex((l) => l.includes('pg_advisory_xact_lock'));
    const sortAt = locks.findIndex((l) => l.includes('Sort Key: (hashtextextended'));
    expect(lockAt).toBeGreaterThanOrEqual(0);
    expect(sortAt).toBeGreaterThan(lockAt);
    const insert = await plan(s.taskInsertMany, [null, JSON.stringify(['b', 'a'].map((key) => ({ kind: KIND, key, payload: null, delayMs: 0, runAt: null, maxAttempts: 3, traceContext: null, retry: null, queue: 'default', priority: 0 }))), null, 'keep']);
    const cte = insert.findIndex((l) => l.includes('CTE keylocks'));
    const insertLock = insert.findIndex((l, i) => i > cte && l.includes('pg_advisory_xact_lock'));
    const insertSort = insert.findIndex((l, i) => i > insertLock && l.includes('Sort Key: (hashtextextended'));
    expect(cte).toBeGreaterThanOrEqual(0);
    expect(insertLock).toBeGreaterThan(cte);
    expect(insertSort).toBeGreaterThan(insertLock);
  });
});
