/**
 * completeMany: many fenced completes in one call, each with exactly the outcome and completion of
 * `complete` (docs/contract.md#promise-3, #transitions), items' `work` committed with their DONEs in the batch's
 * transaction or not at all; a bad item refuses the whole batch and changes nothing (#input-errors).
 */
import { CancelOutcome, type ClaimedTask, CompleteOutcome, MAX_COMPLETE_MANY, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError, expectValidationError, mustGetTask, observe, scheduleAndClaim } from './kit/helpers.js';
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

    it('work (group commit): the writes of each hit item commit with its DONE; stale, cancelled and DONE-again items never call theirs', async () => {
      const { store } = h();
      const a = await scheduleAndClaim(store, { kind: 'a' }, 'w1');
      const b = await scheduleAndClaim(store, { kind: 'b' }, 'w1');
      const stale = await scheduleAndClaim(store, { kind: 'stale' }, 'w1');
      const cancelled = await scheduleAndClaim(store, { kind: 'cancelled' }, 'w1');
      const already = await scheduleAndClaim(store, { kind: 'already' }, 'w1');
      const plain = await scheduleAndClaim(store, { kind: 'plain' }, 'w1');
      expect(await store.cancel(cancelled.id)).toBe(CancelOutcome.REQUESTED);
      expect(await store.complete({ id: already.id, attempt: already.attempt, owner: 'w0' })).toBe(CompleteOutcome.DONE);
      const calls: string[] = [];
      const writing = (id: string) => async (tx: unknown) => {
        calls.push(id);
        await h().writeMarker(tx, id);
      };
      const outcomes = await store.completeMany([
        { id: a.id, attempt: a.attempt, owner: 'w2', result: { n: 1 }, work: writing(a.id) },
        { id: stale.id, attempt: stale.attempt + 1, owner: 'w2', work: writing(stale.id) },
        { id: cancelled.id, attempt: cancelled.attempt, owner: 'w2', work: writing(cancelled.id) },
        { id: already.id, attempt: already.attempt, owner: 'w2', work: writing(already.id) },
        { id: plain.id, attempt: plain.attempt, owner: 'w2' },
        { id: b.id, attempt: b.attempt, owner: 'w2', keep: false, work: writing(b.id) },
      ]);
      expect(outcomes).toEqual([
        CompleteOutcome.DONE,
        CompleteOutcome.REJECTED_STALE,
        CompleteOutcome.CANCELLED_BEFORE_COMMIT,
        CompleteOutcome.DONE,
        CompleteOutcome.DONE,
        CompleteOutcome.DONE,
      ]);
      // Input order within one transaction; a sharded store runs its groups' batches side by side.
      expect([...calls].sort()).toEqual([a.id, b.id].sort());
      expect(await h().readMarker(a.id)).toBe(true);
      expect(await h().readMarker(b.id)).toBe(true);
      for (const id of [stale.id, cancelled.id, already.id, plain.id]) expect(await h().readMarker(id)).toBe(false);
      expect(await mustGetTask(store, a.id)).toMatchObject({ state: TaskState.DONE, result: { n: 1 } });
      expect(await store.getCompletion(a.id)).toMatchObject({ taskId: a.id, attempt: a.attempt, worker: 'w2' });
      expect(await store.getTask(b.id)).toBeNull();
      expect(await mustGetTask(store, plain.id)).toMatchObject({ state: TaskState.DONE });
      expect((await mustGetTask(store, stale.id)).state).toBe(TaskState.CLAIMED);
      expect((await mustGetTask(store, cancelled.id)).state).toBe(TaskState.CANCELLED);
      // Retried (a lost reply): DONE again, no work called twice.
      expect(await store.completeMany([{ id: a.id, attempt: a.attempt, owner: 'w2', work: writing(a.id) }])).toEqual([CompleteOutcome.DONE]);
      expect(calls).toHaveLength(2);
    });

    it('work that throws: its transaction rolls back (DONE only with its writes) and completeMany rethrows it; each item alone then completes', async () => {
      const { store } = h();
      const tasks: ClaimedTask[] = [];
      for (let i = 0; i < 4; i++) tasks.push(await scheduleAndClaim(store, { kind: `k${i}` }, 'w1'));
      const boom = new Error('handler write failed');
      const bad = tasks[2] as ClaimedTask;
      const error = await captureError(() =>
        store.completeMany(
          tasks.map((t) => ({
            id: t.id,
            attempt: t.attempt,
            owner: 'w1',
            work: async (tx: unknown) => {
              await h().writeMarker(tx, t.id);
              if (t.id === bad.id) throw boom;
            },
          })),
        ),
      );
      expect(error).toBe(boom);
      // The failing item's transaction rolled back: CLAIMED, no marker. Every item is DONE exactly when
      // its marker committed (one store: none; a sharded store: other groups' items may have committed).
      expect((await mustGetTask(store, bad.id)).state).toBe(TaskState.CLAIMED);
      expect(await h().readMarker(bad.id)).toBe(false);
      for (const t of tasks) {
        const done = (await mustGetTask(store, t.id)).state === TaskState.DONE;
        expect({ id: t.id, marker: await h().readMarker(t.id) }).toEqual({ id: t.id, marker: done });
      }
      // The attempts are still current: alone, each completes (DONE again where the batch committed).
      for (const t of tasks) expect(await store.complete({ id: t.id, attempt: t.attempt, owner: 'w1' })).toBe(CompleteOutcome.DONE);
      for (const t of tasks) expect((await mustGetTask(store, t.id)).state).toBe(TaskState.DONE);
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
      await expectValidationError(() => store.completeMany([good, { id: '5', attempt: 1, owner: 'w1', work: 'write' } as never]), 'INVALID_OPTION', 'items[1].work');
      await expectValidationError(() => store.completeMany([{ ...good, effect: true } as never]), 'INVALID_OPTION', 'items[0].effect');
      await expectValidationError(() => store.completeMany('nope' as never), 'INVALID_OPTION', 'items');
      const tooMany = Array.from({ length: MAX_COMPLETE_MANY + 1 }, (_, i) => ({ id: String(i + 1), attempt: 1, owner: 'w1' }));
      await expectValidationError(() => store.completeMany(tooMany), 'INVALID_OPTION', 'items');
      expect(await observe(store, c.id)).toEqual(before);
      expect((await mustGetTask(store, c.id)).state).toBe(TaskState.CLAIMED);
    });
  });
}
