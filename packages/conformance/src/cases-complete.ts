/**
 * complete: CLAIMED → DONE fenced by attempt, its completion (the worker) kept in the history row, the handler's `work` in the same transaction as DONE, the
 * handler's `work(tx)` committed with it or not at all (docs/contract.md#promise-3, #promise-4, #transitions).
 */
import { CancelOutcome, CompleteOutcome, type TaskId, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError, mustGetTask, scheduleAndClaim } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function completeCases(h: HarnessRef): void {
  /** complete() by `w1` whose work(tx) writes the task's marker; counts how often work ran. */
  async function completeWithMarker(id: TaskId, attempt: number): Promise<{ outcome: CompleteOutcome; calls: number }> {
    let calls = 0;
    const outcome = await h().store.complete({
      id,
      attempt,
      owner: 'w1',
      work: async (tx) => {
        calls++;
        await h().writeMarker(tx, id);
      },
    });
    return { outcome, calls };
  }

  describe('complete', () => {
    it('moves the current attempt to DONE with its result and exactly one completion (attempt and worker)', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { kind: 'k', payload: { n: 1 } }, 'worker-A');
      clock.tick(10);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'worker-A', result: { closed: true, n: 1 } })).toBe(CompleteOutcome.DONE);
      expect(await mustGetTask(store, c.id)).toMatchObject({
        state: TaskState.DONE,
        attempt: 1,
        result: { closed: true, n: 1 },
        leaseOwner: null,
        leaseUntil: null,
        cancelRequested: false,
      });
      const completion = await store.getCompletion(c.id);
      expect(completion).toMatchObject({ taskId: c.id, attempt: 1, worker: 'worker-A' });
      expect(completion?.finishedAt).toBeInstanceOf(Date);
    });

    it('stores a null result by default', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.DONE);
      expect((await mustGetTask(store, c.id)).result).toBeNull();
    });

    it('a retried complete of the attempt that committed returns DONE again, without a second completion or work', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', result: 1 })).toBe(CompleteOutcome.DONE);
      const after = { task: await store.getTask(c.id), completion: await store.getCompletion(c.id) };
      let workCalls = 0;
      const retry = await store.complete({
        id: c.id,
        attempt: c.attempt,
        owner: 'w1',
        result: 2,
        work: async () => {
          workCalls++;
        },
      });
      expect(retry).toBe(CompleteOutcome.DONE);
      expect(workCalls).toBe(0);
      expect({ task: await store.getTask(c.id), completion: await store.getCompletion(c.id) }).toEqual(after);
    });

    it('an unknown id is stale', async () => {
      const { store } = h();
      expect(await store.complete({ id: '987654321', attempt: 1, owner: 'w1' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.getCompletion('987654321')).toBeNull();
    });
  });

  describe('complete with work(tx)', () => {
    it('commits the work writes together with DONE', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      const { outcome, calls } = await completeWithMarker(c.id, c.attempt);
      expect(outcome).toBe(CompleteOutcome.DONE);
      expect(calls).toBe(1);
      expect(await h().readMarker(c.id)).toBe(true);
      expect((await mustGetTask(store, c.id)).state).toBe(TaskState.DONE);
      expect(await store.getCompletion(c.id)).toMatchObject({ taskId: c.id, attempt: 1, worker: 'w1' });
    });

    it('a stale complete never calls work', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      const { outcome, calls } = await completeWithMarker(c.id, c.attempt + 1);
      expect(outcome).toBe(CompleteOutcome.REJECTED_STALE);
      expect(calls).toBe(0);
      expect(await h().readMarker(c.id)).toBe(false);
      expect((await mustGetTask(store, c.id)).state).toBe(TaskState.CLAIMED);
      expect(await store.getCompletion(c.id)).toBeNull();
    });

    it('a cancel-requested complete never calls work and ends CANCELLED with no completion', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      expect(await store.cancel(c.id)).toBe(CancelOutcome.REQUESTED);
      const { outcome, calls } = await completeWithMarker(c.id, c.attempt);
      expect(outcome).toBe(CompleteOutcome.CANCELLED_BEFORE_COMMIT);
      expect(calls).toBe(0);
      expect(await h().readMarker(c.id)).toBe(false);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.CANCELLED, leaseOwner: null, leaseUntil: null });
      expect(await store.getCompletion(c.id)).toBeNull();
    });

    it('a work that throws rolls everything back and complete rethrows it', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      const before = await mustGetTask(store, c.id);
      const boom = new Error('handler write failed');
      const error = await captureError(() =>
        store.complete({
          id: c.id,
          attempt: c.attempt,
          owner: 'w1',
          work: async (tx) => {
            await h().writeMarker(tx, c.id);
            throw boom;
          },
        }),
      );
      expect(error).toBe(boom);
      expect(await mustGetTask(store, c.id)).toEqual(before);
      expect(await store.getCompletion(c.id)).toBeNull();
      expect(await h().readMarker(c.id)).toBe(false);
      // The attempt is still current: a later complete succeeds.
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.DONE);
      expect(await store.getCompletion(c.id)).toMatchObject({ taskId: c.id, attempt: 1, worker: 'w1' });
    });
  });
}
