/**
 * Bulk operations (docs/contract.md#bulk-operations): cancelMany, retryMany, rescheduleMany and
 * deleteMany by filter and by ids, in batches, with counts per outcome; the same outcomes, the same
 * ValidationErrors (nothing changed on bad input) on every store.
 */
import { CancelOutcome, CompleteOutcome, type Store, type TaskId } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { makeTerminal } from '../kit/fixtures.js';
import type { HarnessRef } from '../kit/harness.js';
import { claimExactly, expectValidationError, mustGetTask } from '../kit/helpers.js';

const cancelCounts = (c: Partial<Record<CancelOutcome, number>>) => ({ CANCELLED: 0, REQUESTED: 0, TOO_LATE: 0, ALREADY_CANCELLED: 0, NOT_FOUND: 0, ...c });

async function makeDead(store: Store<any>, kind: string): Promise<TaskId> {
  const { id } = await store.schedule({ kind, maxAttempts: 1 });
  const [c] = await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000, kinds: [kind] });
  expect(c?.id).toBe(id);
  expect(await store.fail({ id, attempt: c?.attempt as number, error: 'boom', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
  return id;
}

export function bulkCases(h: HarnessRef): void {
  describe('bulk operations', () => {
    it('cancelMany by kind: SCHEDULED → CANCELLED in history, CLAIMED → requested, other kinds untouched, in batches', async () => {
      const { store } = h();
      const waiting = [];
      for (let i = 0; i < 5; i++) waiting.push((await store.schedule({ kind: 'bulk-a', delayMs: 60_000 + i })).id);
      const running = (await store.schedule({ kind: 'bulk-a' })).id;
      const other = (await store.schedule({ kind: 'bulk-b', delayMs: 60_000 })).id;
      const c = await claimExactly(store, running);

      const dry = await store.cancelMany({ kinds: ['bulk-a'] }, { dryRun: true });
      expect(dry).toEqual({ counts: cancelCounts({ CANCELLED: 5, REQUESTED: 1 }), batches: expect.any(Number), dryRun: true });
      expect((await store.getTask(waiting[0] as TaskId))?.state).toBe('SCHEDULED');

      const r = await store.cancelMany({ kinds: ['bulk-a'] }, { batchSize: 2 });
      expect(r.counts).toEqual(cancelCounts({ CANCELLED: 5, REQUESTED: 1 }));
      expect(r.dryRun).toBe(false);
      expect(r.batches).toBeGreaterThanOrEqual(3); // 5 SCHEDULED in batches of 2, then the CLAIMED one
      for (const id of waiting) expect((await mustGetTask(store, id)).state).toBe('CANCELLED');
      expect((await mustGetTask(store, running)).cancelRequested).toBe(true);
      expect((await mustGetTask(store, other)).state).toBe('SCHEDULED');
      expect(await store.complete({ id: running, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.CANCELLED_BEFORE_COMMIT);
      // Nothing left to cancel: a repeat changes nothing.
      expect((await store.cancelMany({ kinds: ['bulk-a'] })).counts).toEqual(cancelCounts({}));
      expect((await store.countByState()).CANCELLED).toBe(6);
    });

    it('cancelMany by ids gives each id the single cancel outcome', async () => {
      const { store } = h();
      const waiting = (await store.schedule({ kind: 'k', delayMs: 1_000 })).id;
      const done = (await makeTerminal(store, 'DONE')).id;
      const dead = (await makeTerminal(store, 'DEAD')).id;
      const cancelled = (await makeTerminal(store, 'CANCELLED_WAITING')).id;
      const missing = '987654321';
      const dry = await store.cancelMany({ ids: [waiting, done, dead, cancelled, missing] }, { dryRun: true });
      expect(dry.counts).toEqual(cancelCounts({ CANCELLED: 1, TOO_LATE: 2, ALREADY_CANCELLED: 1, NOT_FOUND: 1 }));
      const r = await store.cancelMany({ ids: [waiting, done, dead, cancelled, missing, waiting] });
      expect(r.counts).toEqual(cancelCounts({ CANCELLED: 1, TOO_LATE: 2, ALREADY_CANCELLED: 1, NOT_FOUND: 1 }));
      expect(await store.cancel(waiting)).toBe(CancelOutcome.ALREADY_CANCELLED);
    });

    it('cancelMany by queue, key prefix and due range', async () => {
      const { store, clock } = h();
      const t0 = clock.now();
      const early = (await store.schedule({ kind: 'k', queue: 'q1', key: 'order-1', delayMs: 1_000 })).id;
      const late = (await store.schedule({ kind: 'k', queue: 'q1', key: 'order-2', delayMs: 9_000 })).id;
      const otherKey = (await store.schedule({ kind: 'k', queue: 'q1', key: 'invoice-1', delayMs: 1_000 })).id;
      const otherQueue = (await store.schedule({ kind: 'k', queue: 'q2', key: 'order-3', delayMs: 1_000 })).id;
      const r = await store.cancelMany({ queue: 'q1', keyPrefix: 'order-', dueBefore: new Date(t0 + 5_000) });
      expect(r.counts).toEqual(cancelCounts({ CANCELLED: 1 }));
      expect((await mustGetTask(store, early)).state).toBe('CANCELLED');
      for (const id of [late, otherKey, otherQueue]) expect((await mustGetTask(store, id)).state).toBe('SCHEDULED');
      expect((await store.cancelMany({ dueFrom: new Date(t0 + 5_000) })).counts.CANCELLED).toBe(1);
      expect((await mustGetTask(store, late)).state).toBe('CANCELLED');
    });

    it('rescheduleMany moves SCHEDULED tasks only, by filter or ids', async () => {
      const { store, clock } = h();
      const a = (await store.schedule({ kind: 'r', delayMs: 60_000 })).id;
      const b = (await store.schedule({ kind: 'r', delayMs: 60_000 })).id;
      const running = (await store.schedule({ kind: 'r' })).id;
      await claimExactly(store, running);
      const dueAt = new Date(clock.now() + 5_000);
      const r = await store.rescheduleMany({ kinds: ['r'] }, { dueAt });
      expect(r.counts).toEqual({ RESCHEDULED: 2, NOT_SCHEDULED: 0, NOT_FOUND: 0 });
      expect((await mustGetTask(store, a)).dueAt).toEqual(dueAt);
      expect((await mustGetTask(store, b)).dueAt).toEqual(dueAt);
      expect((await mustGetTask(store, running)).state).toBe('CLAIMED');
      const byIds = await store.rescheduleMany({ ids: [a, running, '987654321'] }, { delayMs: 0 });
      expect(byIds.counts).toEqual({ RESCHEDULED: 1, NOT_SCHEDULED: 1, NOT_FOUND: 1 });
      expect((await mustGetTask(store, a)).dueAt).toEqual(new Date(clock.now()));
      expect((await store.claim({ owner: 'w2', limit: 10, leaseMs: 1_000 })).map((t) => t.id)).toEqual([a]);
    });

    it('retryMany makes a new task of each DEAD task once; deleteMany removes history only', async () => {
      const { store } = h();
      const d1 = await makeDead(store, 'x');
      const d2 = await makeDead(store, 'x');
      const otherDead = await makeDead(store, 'y');
      const live = (await store.schedule({ kind: 'x', delayMs: 60_000 })).id;
      const { clock } = h();
      const r = await store.retryMany({ kinds: ['x'] }, { delayMs: 60_000 });
      expect(r.counts).toEqual({ RETRIED: 2, ALREADY_RETRIED: 0, NOT_RETRYABLE: 0, NOT_FOUND: 0 });
      expect((await store.retryMany({ kinds: ['x'] })).counts).toEqual({ RETRIED: 0, ALREADY_RETRIED: 2, NOT_RETRYABLE: 0, NOT_FOUND: 0 });
      const page = await store.listTasks({ states: ['SCHEDULED'], kinds: ['x'], order: 'oldest' });
      expect(page.tasks.map((t) => t.retryOf).filter((x) => x !== null).sort()).toEqual([d1, d2].sort());
      for (const t of page.tasks.filter((x) => x.retryOf !== null)) expect(t.dueAt).toEqual(new Date(clock.now() + 60_000));
      expect((await mustGetTask(store, d1)).state).toBe('DEAD');
      expect((await store.retryMany({ ids: [d1, otherDead, live, '987654321'] }, { runAt: new Date(clock.now() + 60_000) })).counts).toEqual({ RETRIED: 1, ALREADY_RETRIED: 1, NOT_RETRYABLE: 1, NOT_FOUND: 1 });

      const done = (await makeTerminal(store, 'DONE')).id;
      expect(await store.getCompletion(done)).not.toBeNull();
      const dry = await store.deleteMany({ all: true }, { dryRun: true });
      expect(dry.counts).toEqual({ DELETED: 4, NOT_FINISHED: 0, NOT_FOUND: 0 });
      expect(await store.getTask(done)).not.toBeNull();
      const del = await store.deleteMany({ states: ['DONE'], all: true });
      expect(del.counts).toEqual({ DELETED: 1, NOT_FINISHED: 0, NOT_FOUND: 0 });
      expect(del.effectsDeleted).toBe(0); // no legacy effect rows: the store writes none since migration 13
      expect(await store.getTask(done)).toBeNull();
      expect(await store.getCompletion(done)).toBeNull();
      const byIds = await store.deleteMany({ ids: [d1, live, done] });
      expect(byIds.counts).toEqual({ DELETED: 1, NOT_FINISHED: 1, NOT_FOUND: 1 });
      expect(await store.getTask(d1)).toBeNull();
      expect((await mustGetTask(store, live)).state).toBe('SCHEDULED');
    });

    it('refuses an empty or malformed filter with a ValidationError and changes nothing', async () => {
      const { store } = h();
      const id = (await store.schedule({ kind: 'keep', delayMs: 60_000 })).id;
      const bad = store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      await expectValidationError(() => store.cancelMany({}), 'INVALID_OPTION', 'filter');
      await expectValidationError(() => store.cancelMany({ states: ['SCHEDULED'] }), 'INVALID_OPTION', 'filter');
      await expectValidationError(() => bad.cancelMany?.({ all: false }), 'INVALID_OPTION', 'all');
      await expectValidationError(() => bad.cancelMany?.({ kind: 'keep' }), 'INVALID_OPTION', 'kind');
      await expectValidationError(() => store.cancelMany({ ids: [id], kinds: ['keep'] }), 'INVALID_OPTION', 'ids');
      await expectValidationError(() => store.cancelMany({ ids: ['x1'] }), 'INVALID_TASK_ID', 'ids[0]');
      await expectValidationError(() => store.cancelMany({ kinds: [''] }), 'INVALID_KIND', 'kinds[0]');
      await expectValidationError(() => bad.cancelMany?.({ states: ['DONE'], all: true }), 'INVALID_OPTION', 'states[0]');
      await expectValidationError(() => store.cancelMany({ finishedBefore: new Date() }), 'INVALID_OPTION', 'finishedBefore');
      await expectValidationError(() => store.cancelMany({ all: true }, { batchSize: 0 }), 'INVALID_OPTION', 'batchSize');
      await expectValidationError(() => bad.rescheduleMany?.({ all: true }, {}), 'INVALID_DELAY', 'delayMs');
      await expectValidationError(() => store.rescheduleMany({ all: true }, { delayMs: 1, dueAt: new Date() }), 'INVALID_DELAY', 'delayMs');
      await expectValidationError(() => store.deleteMany({ keyPrefix: '' }), 'INVALID_KEY', 'keyPrefix');
      await expectValidationError(() => bad.retryMany?.({ states: ['SCHEDULED'], all: true }), 'INVALID_OPTION', 'states[0]');
      expect((await mustGetTask(store, id)).state).toBe('SCHEDULED');
    });
  });
}
