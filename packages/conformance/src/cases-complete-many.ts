/**
 * completeMany: many fenced completes in one call, each with exactly the outcome and completion of
 * `complete` (docs/contract.md#promise-3, #transitions); a bad item refuses the whole batch and changes nothing (#input-errors).
 */
import { CancelOutcome, CompleteOutcome, MAX_COMPLETE_MANY, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { expectValidationError, mustGetTask, observe, scheduleAndClaim } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function completeManyCases(h: HarnessRef): void {
  describe('completeMany', () => {
    it('a mixed batch gets the outcome of complete per item, in input order, and one completion per DONE', async () => {
      const { store, clock } = h();
      const fresh = await scheduleAndClaim(store, { kind: 'fresh' }, 'w1');
      const stale = await scheduleAndClaim(store, { kind: 'stale' }, 'w1');
      const cancelled = await scheduleAndClaim(store, { kind: 'cancelled' }, 'w1');
      const already = await scheduleAndClaim(store, { kind: 'already' }, 'w1');
      const fresh2 = await scheduleAndClaim(store, { kind: 'fresh2' }, 'w1');
      expect(await store.cancel(cancelled.id)).toBe(CancelOutcome.REQUESTED);
      expect(await store.complete({ id: already.id, attempt: already.attempt, owner: 'w0', result: 'first' })).toBe(CompleteOutcome.DONE);
      const alreadyBefore = await observe(store, already.id);
      const staleBefore = await observe(store, stale.id);
      clock.tick(5);
      const outcomes = await store.completeMany([
        { id: fresh2.id, attempt: fresh2.attempt, owner: 'w2', result: { n: 2 } },
        { id: stale.id, attempt: stale.attempt + 1, owner: 'w2' },
        { id: cancelled.id, attempt: cancelled.attempt, owner: 'w2' },
        { id: '987654321', attempt: 1, owner: 'w2' },
        { id: already.id, attempt: already.attempt, owner: 'w2', result: 'second' },
        { id: fresh.id, attempt: fresh.attempt, owner: 'w2' },
      ]);
      expect(outcomes).toEqual([
        CompleteOutcome.DONE,
        CompleteOutcome.REJECTED_STALE,
        CompleteOutcome.CANCELLED_BEFORE_COMMIT,
        CompleteOutcome.REJECTED_STALE,
        CompleteOutcome.DONE,
        CompleteOutcome.DONE,
      ]);
      expect(await mustGetTask(store, fresh2.id)).toMatchObject({ state: TaskState.DONE, result: { n: 2 }, leaseOwner: null, leaseUntil: null });
      expect(await mustGetTask(store, fresh.id)).toMatchObject({ state: TaskState.DONE, result: null });
      for (const c of [fresh, fresh2]) expect(await store.getCompletion(c.id)).toMatchObject({ taskId: c.id, attempt: c.attempt, worker: 'w2' });
      expect(await observe(store, stale.id)).toEqual(staleBefore);
      expect(await observe(store, already.id)).toEqual(alreadyBefore);
      expect(await mustGetTask(store, cancelled.id)).toMatchObject({ state: TaskState.CANCELLED, leaseOwner: null, leaseUntil: null });
      expect(await store.getCompletion(cancelled.id)).toBeNull();
      expect(await store.getCompletion('987654321')).toBeNull();
      // A retried batch (reply lost) answers the same without new completions.
      const again = await store.completeMany([
        { id: fresh.id, attempt: fresh.attempt, owner: 'w3' },
        { id: cancelled.id, attempt: cancelled.attempt, owner: 'w3' },
      ]);
      expect(again).toEqual([CompleteOutcome.DONE, CompleteOutcome.CANCELLED_BEFORE_COMMIT]);
      expect(await store.getCompletion(fresh.id)).toMatchObject({ worker: 'w2' });
    });

    it('an empty batch returns []', async () => {
      expect(await h().store.completeMany([])).toEqual([]);
    });

    it('a bad item refuses the whole batch and changes nothing', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      const before = await observe(store, c.id);
      const good = { id: c.id, attempt: c.attempt, owner: 'w1' };
      await expectValidationError(() => store.completeMany([good, { id: 'abc', attempt: 1, owner: 'w1' }]), 'INVALID_TASK_ID', 'items[1].id');
      await expectValidationError(() => store.completeMany([good, { id: '5', attempt: 0, owner: 'w1' }]), 'INVALID_OPTION', 'items[1].attempt');
      await expectValidationError(() => store.completeMany([good, { id: '5', attempt: 1, owner: '' }]), 'INVALID_OPTION', 'items[1].owner');
      await expectValidationError(() => store.completeMany([good, { id: '5', attempt: 1, owner: 'w1', result: { n: 1n } }]), 'INVALID_RESULT', 'items[1].result.n');
      await expectValidationError(() => store.completeMany([good, { ...good }]), 'INVALID_OPTION', 'items[1].id');
      await expectValidationError(() => store.completeMany([{ ...good, work: async () => {} } as never]), 'INVALID_OPTION', 'items[0].work');
      await expectValidationError(() => store.completeMany('nope' as never), 'INVALID_OPTION', 'items');
      const tooMany = Array.from({ length: MAX_COMPLETE_MANY + 1 }, (_, i) => ({ id: String(i + 1), attempt: 1, owner: 'w1' }));
      await expectValidationError(() => store.completeMany(tooMany), 'INVALID_OPTION', 'items');
      expect(await observe(store, c.id)).toEqual(before);
      expect((await mustGetTask(store, c.id)).state).toBe(TaskState.CLAIMED);
    });
  });
}
