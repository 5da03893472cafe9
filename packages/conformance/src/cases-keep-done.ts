/**
 * DONE not kept (docs/contract.md#done-not-kept): a complete with `keep: false` is the fenced delete
 * of the live row alone — no history row, no completion. What is given up, exactly: a repeated
 * complete after the row is gone answers NOT_FOUND (not DONE), cancel answers NOT_FOUND (not
 * TOO_LATE), getTask returns null, and no read (list, counts, stats) shows the task. The fence is
 * unchanged (REJECTED_STALE while the row is live), and CANCELLED and DEAD are kept whatever the flag.
 */
import { CancelOutcome, CompleteOutcome, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, expectValidationError, LEASE_MS, mustGetTask, observe, scheduleAndClaim, stateCounts } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function keepDoneCases(h: HarnessRef): void {
  describe('DONE not kept (keep: false)', () => {
    it('complete → DONE and the task is gone: no history, no completion; again NOT_FOUND, cancel NOT_FOUND, getTask null, no read shows it', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { kind: 'drop-me', key: 'k-1' });
      clock.tick(3);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', result: { ok: true }, keep: false })).toBe(CompleteOutcome.DONE);
      expect(await observe(store, c.id)).toEqual({ task: null, completion: null });
      // The same attempt again (a retry after a lost reply): the row is gone.
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', keep: false })).toBe(CompleteOutcome.NOT_FOUND);
      expect(await store.completeMany([{ id: c.id, attempt: c.attempt, owner: 'w1', keep: false }])).toEqual([CompleteOutcome.NOT_FOUND]);
      // Without keep: false the missing task is, as before, a stale attempt.
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.cancel(c.id)).toBe(CancelOutcome.NOT_FOUND);
      expect(await store.countByState()).toEqual(stateCounts());
      expect((await store.listTasks({ limit: 100 })).tasks).toEqual([]);
      const stats = await store.stats();
      expect([stats.scheduled, stats.claimed, stats.dead, stats.byKind.length]).toEqual([0, 0, 0, 0]);
      // Its dedup key is free again.
      expect((await store.schedule({ kind: 'drop-me', key: 'k-1' })).created).toBe(true);
    });

    it('completeMany: keep false items are dropped, kept ones go to history with their completion, in one batch', async () => {
      const { store } = h();
      const kept = await scheduleAndClaim(store, { kind: 'a' }, 'w1');
      const dropped = await scheduleAndClaim(store, { kind: 'b' }, 'w1');
      const keptExplicit = await scheduleAndClaim(store, { kind: 'c' }, 'w1');
      const stale = await scheduleAndClaim(store, { kind: 'd' }, 'w1');
      const cancelled = await scheduleAndClaim(store, { kind: 'e' }, 'w1');
      expect(await store.cancel(cancelled.id)).toBe(CancelOutcome.REQUESTED);
      const staleBefore = await observe(store, stale.id);
      const outcomes = await store.completeMany([
        { id: dropped.id, attempt: dropped.attempt, owner: 'w2', result: 1, keep: false },
        { id: kept.id, attempt: kept.attempt, owner: 'w2', result: 2 },
        { id: stale.id, attempt: stale.attempt + 1, owner: 'w2', keep: false },
        { id: keptExplicit.id, attempt: keptExplicit.attempt, owner: 'w2', keep: true },
        { id: cancelled.id, attempt: cancelled.attempt, owner: 'w2', keep: false },
        { id: '987654321', attempt: 1, owner: 'w2', keep: false },
      ]);
      expect(outcomes).toEqual([
        CompleteOutcome.DONE,
        CompleteOutcome.DONE,
        CompleteOutcome.REJECTED_STALE,
        CompleteOutcome.DONE,
        CompleteOutcome.CANCELLED_BEFORE_COMMIT,
        CompleteOutcome.NOT_FOUND,
      ]);
      expect(await observe(store, dropped.id)).toEqual({ task: null, completion: null });
      expect(await mustGetTask(store, kept.id)).toMatchObject({ state: TaskState.DONE, result: 2 });
      expect(await store.getCompletion(kept.id)).toMatchObject({ taskId: kept.id, attempt: kept.attempt, worker: 'w2' });
      expect(await mustGetTask(store, keptExplicit.id)).toMatchObject({ state: TaskState.DONE });
      expect(await observe(store, stale.id)).toEqual(staleBefore);
      // CANCELLED is kept whatever the flag.
      expect(await mustGetTask(store, cancelled.id)).toMatchObject({ state: TaskState.CANCELLED });
      expect(await store.countByState()).toEqual(stateCounts({ DONE: 2, CLAIMED: 1, CANCELLED: 1 }));
      // A retried batch (reply lost): DONE again for the kept, NOT_FOUND for the dropped.
      const again = await store.completeMany([
        { id: kept.id, attempt: kept.attempt, owner: 'w3' },
        { id: dropped.id, attempt: dropped.attempt, owner: 'w3', keep: false },
        { id: cancelled.id, attempt: cancelled.attempt, owner: 'w3', keep: false },
      ]);
      expect(again).toEqual([CompleteOutcome.DONE, CompleteOutcome.NOT_FOUND, CompleteOutcome.CANCELLED_BEFORE_COMMIT]);
      expect(await store.getCompletion(kept.id)).toMatchObject({ worker: 'w2' });
    });

    it('the fence holds: a stale attempt of a live row is REJECTED_STALE and changes nothing', async () => {
      const { store, clock } = h();
      const first = await scheduleAndClaim(store, {}, 'w1');
      clock.tick(LEASE_MS + 1);
      await store.reclaimExpired();
      const second = await claimExactly(store, first.id, 'w2');
      const before = await observe(store, first.id);
      expect(await store.complete({ id: first.id, attempt: first.attempt, owner: 'w1', keep: false })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.completeMany([{ id: first.id, attempt: first.attempt, owner: 'w1', keep: false }])).toEqual([CompleteOutcome.REJECTED_STALE]);
      expect(await observe(store, first.id)).toEqual(before);
      // The current holder finishes it without history; the stale one then finds nothing: NOT_FOUND,
      // the same answer its own lost reply would get — the caller cannot tell them apart.
      expect(await store.complete({ id: second.id, attempt: second.attempt, owner: 'w2', keep: false })).toBe(CompleteOutcome.DONE);
      expect(await store.complete({ id: first.id, attempt: first.attempt, owner: 'w1', keep: false })).toBe(CompleteOutcome.NOT_FOUND);
      expect(await store.complete({ id: second.id, attempt: second.attempt, owner: 'w2', keep: false })).toBe(CompleteOutcome.NOT_FOUND);
    });

    it('cancel requested while running: complete with keep false ends CANCELLED in history (kept), no completion', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      expect(await store.cancel(c.id)).toBe(CancelOutcome.REQUESTED);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', keep: false })).toBe(CompleteOutcome.CANCELLED_BEFORE_COMMIT);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.CANCELLED, leaseOwner: null });
      expect(await store.getCompletion(c.id)).toBeNull();
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', keep: false })).toBe(CompleteOutcome.CANCELLED_BEFORE_COMMIT);
      expect(await store.cancel(c.id)).toBe(CancelOutcome.ALREADY_CANCELLED);
    });

    it('a task already DONE and kept answers DONE to a keep false complete of its attempt; DEAD is kept', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.DONE);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', keep: false })).toBe(CompleteOutcome.DONE);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.DONE });
      const d = await scheduleAndClaim(store, { maxAttempts: 1 });
      expect(await store.fail({ id: d.id, attempt: d.attempt, error: 'boom', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
      expect(await store.complete({ id: d.id, attempt: d.attempt, owner: 'w1', keep: false })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await mustGetTask(store, d.id)).toMatchObject({ state: TaskState.DEAD });
      expect(await store.cancel(d.id)).toBe(CancelOutcome.TOO_LATE);
    });

    it('work runs in the transaction of the fenced delete: it commits with DONE, or the task stays CLAIMED', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      const boom = new Error('work failed');
      await expect(
        store.complete({
          id: c.id,
          attempt: c.attempt,
          owner: 'w1',
          keep: false,
          work: async (tx) => {
            await h().writeMarker(tx, c.id);
            throw boom;
          },
        }),
      ).rejects.toBe(boom);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.CLAIMED, attempt: c.attempt });
      expect(await h().readMarker(c.id)).toBe(false);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', keep: false, work: (tx) => h().writeMarker(tx, c.id) })).toBe(CompleteOutcome.DONE);
      expect(await h().readMarker(c.id)).toBe(true);
      expect(await observe(store, c.id)).toEqual({ task: null, completion: null });
    });

    it('keep must be a boolean', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      await expectValidationError(() => store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', keep: 'no' as never }), 'INVALID_OPTION', 'keep');
      await expectValidationError(() => store.completeMany([{ id: c.id, attempt: c.attempt, owner: 'w1', keep: 0 as never }]), 'INVALID_OPTION', 'items[0].keep');
      expect((await mustGetTask(store, c.id)).state).toBe(TaskState.CLAIMED);
    });
  });
}
