/**
 * `vacuumHealth()` on the partitioned history (docs/contract.md#vacuum): `task_history` is one
 * entry summed over its leaf partitions — live and dead rows, updates, vacuum counts, the latest
 * vacuum — with the number of partitions, on both drivers. Rows reach it as the store moves them
 * (complete, fail, cancel on three UTC days of a test clock), some are deleted by row (prune with a
 * cut-off), then ANALYZE and VACUUM give figures that must equal what the tables hold.
 */
import { TestClock } from '@postpone/core';
import { afterAll, describe, expect, it } from 'vitest';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

const DAY_MS = 86_400_000;
const PER_DAY = 12;

describe.each(DRIVERS)('vacuumHealth of task_history on %s', (driver) => {
  const admin = Admin.create(`vh_${driver}`);
  const kit = makeKit(driver);
  afterAll(async () => {
    await kit.close();
    await admin.drop();
  });

  it('reports task_history as one entry over its partitions: live rows after ANALYZE, dead rows after deletes, vacuums, partitions', async () => {
    // Days after the migration's real day, so every day gets its own partitions (not `_legacy`).
    const start = Math.floor(Date.now() / DAY_MS) * DAY_MS + 3 * DAY_MS + 3_600_000;
    const clock = new TestClock(start);
    const store = kit.store({ schema: admin.schema, clock });
    try {
      await store.migrate();
      // Three UTC days; each: PER_DAY tasks, a third DONE, a third DEAD, a third CANCELLED.
      const deadIds: string[] = [];
      for (let day = 0; day < 3; day++) {
        const ids = (await store.scheduleMany(Array.from({ length: PER_DAY }, (_, i) => ({ kind: 'vh', payload: { day, i }, maxAttempts: 1 })))).map((t) => t.id);
        const claimed = await store.claim({ owner: 'w', limit: (2 * PER_DAY) / 3, leaseMs: 60_000, kinds: ['vh'] });
        expect(claimed).toHaveLength((2 * PER_DAY) / 3);
        for (const [i, c] of claimed.entries()) {
          if (i % 2 === 0) expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w' })).toBe('DONE');
          else {
            expect(await store.fail({ id: c.id, attempt: c.attempt, error: 'e', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
            deadIds.push(c.id);
          }
        }
        const claimedIds = new Set(claimed.map((c) => c.id));
        for (const id of ids.filter((id) => !claimedIds.has(id))) expect(await store.cancel(id)).toBe('CANCELLED');
        clock.tick(DAY_MS);
      }
      expect(await admin.count()).toBe(0);
      expect(await admin.count('task_history')).toBe(3 * PER_DAY);
      // One update of a history row (the last day's, which stays): retry records `retried_as` on the DEAD task; the new task is live.
      expect((await store.retry({ id: deadIds.at(-1) as string })).outcome).toBe('RETRIED');
      // The first day's history deleted by row (a cut-off prune): dead rows in that day's partitions.
      const pruned = await store.prune({ before: new Date(start + DAY_MS - 3_600_000) });
      expect(pruned.deleted).toBe(PER_DAY);
      const remaining = await admin.count('task_history');
      expect(remaining).toBe(2 * PER_DAY);
      const [leaves] = await admin.query<{ n: number }>(`select count(*)::int as n from pg_partition_tree($1::regclass) where isleaf`, [admin.t('task_history')]);
      const historyOf = async () => (await store.vacuumHealth()).tables.find((t) => t.table === 'task_history');
      // Each backend sends its counters when it goes idle, at most once a second (PostgreSQL 17 §27.2.2):
      // wait until every store connection's have arrived — 36 inserted − 12 deleted live, the 12
      // deleted and the updated row's old version dead, 1 update — so none lands after the ANALYZE.
      const settled = (h: Awaited<ReturnType<typeof historyOf>>) => h?.liveRows === remaining && h.deadRows === PER_DAY + 1 && h.updates === 1;
      let history = await historyOf();
      for (let i = 0; i < 100 && !settled(history); i++) {
        await new Promise((r) => setTimeout(r, 100));
        history = await historyOf();
      }
      expect(history).toMatchObject({ liveRows: remaining, deadRows: PER_DAY + 1, updates: 1 });
      // ANALYZE of the partitioned table analyzes every leaf (PostgreSQL 17 ANALYZE), which sets live
      // and dead rows from what it read: each leaf is small enough to be read whole, so the counts are exact.
      await admin.query(`analyze ${admin.t('task_history')}`);
      const health = await store.vacuumHealth();
      history = health.tables.find((t) => t.table === 'task_history');
      expect(health.tables.map((t) => t.table)).toEqual(['effect', 'task', 'task_history']);
      // The plain tables keep their shape: no `partitions`.
      for (const t of health.tables.filter((t) => t.table !== 'task_history')) expect(t.partitions).toBeUndefined();
      expect(history?.partitions).toBe(leaves?.n);
      // Each state: DEFAULT, `_legacy`, and the days from the migration's real day and from each clock day on.
      expect(history?.partitions).toBeGreaterThanOrEqual(3 * 3 + 3 * 2);
      expect(history?.liveRows).toBe(remaining);
      // The deleted rows and the old version of the updated one, none removed yet.
      expect(history?.deadRows).toBe(PER_DAY + 1);
      expect(history?.updates).toBe(1);
      expect(history?.hotUpdates).toBeLessThanOrEqual(1);
      expect(history?.vacuums).toBe(0);
      expect(history?.lastVacuum).toBeNull();

      // VACUUM of the partitioned table vacuums every leaf, one vacuum each. (The dead rows go unless
      // another test file holds an older snapshot in this database meanwhile: not asserted.)
      await admin.query(`vacuum ${admin.t('task_history')}`);
      let after = await historyOf();
      for (let i = 0; i < 50 && after?.vacuums !== leaves?.n; i++) {
        await new Promise((r) => setTimeout(r, 100));
        after = await historyOf();
      }
      expect(after?.vacuums).toBe(leaves?.n);
      expect(after?.deadRows).toBeLessThanOrEqual(PER_DAY + 1);
      expect(after?.liveRows).toBe(remaining);
      expect(after?.lastVacuum?.getTime()).toBeGreaterThanOrEqual(health.now.getTime() - 60_000);
    } finally {
      await store.close();
    }
  });
});
