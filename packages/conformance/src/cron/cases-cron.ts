/**
 * Recurring schedules (docs/contract.md#recurring-schedules): the `CronStore` operations of
 * `@postpone/core` — reconcile (add, change, remove) and the once-per-occurrence insert that
 * moves the schedule's watermark in the same transaction as the task.
 */
import { TaskState } from '@postpone/core';
import { type CronStore, isCronStore } from '@postpone/core';
import { claimExactly, expectValidationError, mustGetTask, stateCounts } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';
import { describe, expect, it } from 'vitest';

const NIGHTLY = { name: 'nightly-report', cron: '30 2 * * *', timeZone: 'America/New_York' } as const;
const task = { kind: 'report', payload: { scope: 'all' }, maxAttempts: 3 } as const;

export function cronCases(h: HarnessRef): void {
  describe('recurring schedules', () => {
    const cron = (): CronStore => {
      const { store } = h();
      expect(isCronStore(store), `${store.name} implements CronStore`).toBe(true);
      return store as unknown as CronStore;
    };

    it('reconcile adds a schedule with watermark = the store now; the same declaration again is unchanged', async () => {
      const { clock } = h();
      const s = cron();
      expect(await s.reconcileCronSchedules({ schedules: [NIGHTLY] })).toEqual({ added: [NIGHTLY.name], changed: [], unchanged: [], removed: [] });
      const added = new Date(clock.now());
      clock.tick(5_000);
      expect(await s.reconcileCronSchedules({ schedules: [NIGHTLY] })).toEqual({ added: [], changed: [], unchanged: [NIGHTLY.name], removed: [] });
      expect(await s.listCronSchedules()).toEqual([{ ...NIGHTLY, watermark: added, createdAt: added, updatedAt: added }]);
    });

    it('an occurrence after the watermark becomes one SCHEDULED task due at it; the same or an earlier one is PASSED', async () => {
      const { store, clock } = h();
      const s = cron();
      await s.reconcileCronSchedules({ schedules: [NIGHTLY] });
      const at = new Date(clock.now() + 3_600_000);
      const first = await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: at, task });
      expect(first).toMatchObject({ outcome: 'SCHEDULED', dueAt: at });
      if (first.outcome !== 'SCHEDULED') throw new Error('unreachable');
      expect(await mustGetTask(store, first.id)).toMatchObject({ kind: 'report', payload: { scope: 'all' }, maxAttempts: 3, dueAt: at, state: TaskState.SCHEDULED, key: null });
      expect(await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: at, task })).toEqual({ outcome: 'PASSED', watermark: at });
      expect(await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: new Date(at.getTime() - 60_000), task })).toEqual({ outcome: 'PASSED', watermark: at });
      expect((await s.listCronSchedules())[0]?.watermark).toEqual(at);
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
    });

    it('once the task is DONE the occurrence stays taken (unlike a dedup key); a past occurrence is due at once', async () => {
      const { store, clock } = h();
      const s = cron();
      await s.reconcileCronSchedules({ schedules: [NIGHTLY] });
      const at = new Date(clock.now() + 1_000);
      const first = await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: at, task });
      if (first.outcome !== 'SCHEDULED') throw new Error(`expected SCHEDULED, got ${first.outcome}`);
      clock.tick(2_000);
      await store.complete({ id: first.id, attempt: (await claimExactly(store, first.id)).attempt, owner: 'w1' });
      expect(await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: at, task })).toEqual({ outcome: 'PASSED', watermark: at });
      // The same occurrence guarded by a dedup key only: once its task is DONE, a late scheduler makes a second one.
      const byKey = { kind: 'report-by-key', key: `${NIGHTLY.name}@${at.toISOString()}`, runAt: at };
      const k1 = await store.schedule(byKey);
      await store.complete({ id: k1.id, attempt: (await claimExactly(store, k1.id)).attempt, owner: 'w1' });
      expect(await store.schedule(byKey)).toMatchObject({ created: true });
      expect(await store.cancel((await store.schedule(byKey)).id)).toBe('CANCELLED');
      // Missed: an occurrence already in the past (after the watermark) is scheduled and claimable now.
      const past = new Date(clock.now() - 500);
      const late = await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: past, task });
      expect(late).toMatchObject({ outcome: 'SCHEDULED', dueAt: past });
      if (late.outcome === 'SCHEDULED') expect((await claimExactly(store, late.id)).dueAt).toEqual(past);
      expect(await store.countByState()).toEqual(stateCounts({ DONE: 2, CLAIMED: 1, CANCELLED: 1 }));
    });

    it('concurrent calls for one occurrence: exactly one SCHEDULED, one task', async () => {
      const { store, clock } = h();
      const s = cron();
      await s.reconcileCronSchedules({ schedules: [NIGHTLY] });
      const at = new Date(clock.now() + 60_000);
      const results = await Promise.all(Array.from({ length: 12 }, () => s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: at, task })));
      expect(results.filter((r) => r.outcome === 'SCHEDULED')).toHaveLength(1);
      expect(results.filter((r) => r.outcome === 'PASSED')).toHaveLength(11);
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
    });

    it('a changed expression re-bases: watermark = max(watermark, now), never back; the old expression is CHANGED', async () => {
      const { store, clock } = h();
      const s = cron();
      await s.reconcileCronSchedules({ schedules: [NIGHTLY] });
      const ahead = new Date(clock.now() + 600_000);
      expect(await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: ahead, task })).toMatchObject({ outcome: 'SCHEDULED' });
      clock.tick(1_000);
      const hourly = { ...NIGHTLY, cron: '0 * * * *' };
      expect(await s.reconcileCronSchedules({ schedules: [hourly] })).toEqual({ added: [], changed: [NIGHTLY.name], unchanged: [], removed: [] });
      expect((await s.listCronSchedules())[0]).toMatchObject({ cron: '0 * * * *', watermark: ahead, updatedAt: new Date(clock.now()) });
      expect(await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: new Date(ahead.getTime() + 1_000), task })).toEqual({ outcome: 'CHANGED' });
      expect(await s.scheduleCronOccurrence({ ...hourly, occurrence: ahead, task })).toEqual({ outcome: 'PASSED', watermark: ahead });
      clock.tick(3_600_000);
      const utc = { ...hourly, timeZone: 'UTC' };
      expect(await s.reconcileCronSchedules({ schedules: [utc] })).toMatchObject({ changed: [NIGHTLY.name] });
      expect((await s.listCronSchedules())[0]).toMatchObject({ timeZone: 'UTC', watermark: new Date(clock.now()) });
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
    });

    it('undeclared schedules are removed (their tasks stay), unless removeUndeclared is false; a removed one is NOT_FOUND', async () => {
      const { store, clock } = h();
      const s = cron();
      const other = { name: 'cleanup', cron: '*/5 * * * *', timeZone: 'UTC' };
      await s.reconcileCronSchedules({ schedules: [other, NIGHTLY] });
      expect(await s.scheduleCronOccurrence({ ...other, occurrence: new Date(clock.now() + 1_000), task })).toMatchObject({ outcome: 'SCHEDULED' });
      expect(await s.reconcileCronSchedules({ schedules: [NIGHTLY], removeUndeclared: false })).toEqual({ added: [], changed: [], unchanged: [NIGHTLY.name], removed: [] });
      expect((await s.listCronSchedules()).map((r) => r.name)).toEqual(['cleanup', NIGHTLY.name]);
      expect(await s.reconcileCronSchedules({ schedules: [NIGHTLY] })).toEqual({ added: [], changed: [], unchanged: [NIGHTLY.name], removed: ['cleanup'] });
      expect(await s.scheduleCronOccurrence({ ...other, occurrence: new Date(clock.now() + 2_000), task })).toEqual({ outcome: 'NOT_FOUND' });
      expect(await s.reconcileCronSchedules({ schedules: [] })).toEqual({ added: [], changed: [], unchanged: [], removed: [NIGHTLY.name] });
      expect(await s.listCronSchedules()).toEqual([]);
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
    });

    it("the occurrence's task has the given queue, priority and retry; without them the defaults ('default', 0, none)", async () => {
      const { store, clock } = h();
      const s = cron();
      await s.reconcileCronSchedules({ schedules: [NIGHTLY] });
      const at = new Date(clock.now() + 1_000);
      const retry = { maxAttempts: 4, baseMs: 2_000, jitter: 'none' } as const;
      const given = await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: at, task: { kind: 'report', queue: 'reports', priority: 9, retry } });
      if (given.outcome !== 'SCHEDULED') throw new Error(`expected SCHEDULED, got ${given.outcome}`);
      expect(await mustGetTask(store, given.id)).toMatchObject({ queue: 'reports', priority: 9, maxAttempts: 4, retry, dueAt: at });
      const plain = await s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: new Date(at.getTime() + 1_000), task: { kind: 'report' } });
      if (plain.outcome !== 'SCHEDULED') throw new Error(`expected SCHEDULED, got ${plain.outcome}`);
      const p = await mustGetTask(store, plain.id);
      expect([p.queue, p.priority, p.retry ?? null]).toEqual(['default', 0, null]);
      await expectValidationError(() => s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: new Date(at.getTime() + 5_000), task: { kind: 'report', queue: '' } }), 'INVALID_QUEUE', 'task.queue');
      await expectValidationError(() => s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: new Date(at.getTime() + 5_000), task: { kind: 'report', priority: 0.5 } }), 'INVALID_PRIORITY', 'task.priority');
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 2 }));
    });

    it('bad input is a ValidationError naming the field, and nothing is written', async () => {
      const { store, clock } = h();
      const s = cron();
      await expectValidationError(() => s.reconcileCronSchedules({ schedules: [NIGHTLY, { ...NIGHTLY }] }), 'INVALID_OPTION', 'schedules[1].name');
      await expectValidationError(() => s.reconcileCronSchedules({ schedules: [{ ...NIGHTLY, cron: '' }] }), 'INVALID_OPTION', 'schedules[0].cron');
      await expectValidationError(() => s.reconcileCronSchedules({ schedules: [{ ...NIGHTLY, name: 'a\u0000b' }] }), 'INVALID_OPTION', 'schedules[0].name');
      await expectValidationError(() => s.reconcileCronSchedules({ schedules: 'x' } as never), 'INVALID_OPTION', 'schedules');
      expect(await s.listCronSchedules()).toEqual([]);
      await s.reconcileCronSchedules({ schedules: [NIGHTLY] });
      const at = new Date(clock.now() + 1_000);
      await expectValidationError(() => s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: 'soon' as never, task }), 'INVALID_RUN_AT', 'occurrence');
      await expectValidationError(() => s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: at, task: { ...task, key: 'k' } as never }), 'INVALID_OPTION', 'task.key');
      await expectValidationError(() => s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: at, task: { ...task, kind: '' } }), 'INVALID_KIND', 'task.kind');
      await expectValidationError(() => s.scheduleCronOccurrence({ ...NIGHTLY, occurrence: at, task: { ...task, maxAttempts: 0 } }), 'INVALID_MAX_ATTEMPTS');
      expect(await store.countByState()).toEqual(stateCounts());
      expect((await s.listCronSchedules())[0]?.watermark).toEqual(new Date(clock.now()));
    });
  });
}
