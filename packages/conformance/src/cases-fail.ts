/**
 * fail: CLAIMED → SCHEDULED after backoff, DEAD when attempts are exhausted, CANCELLED when cancel
 * was requested (docs/contract.md#transitions; evidence retry_backoff_then_done, retry_exhausted_dead).
 */
import { backoffMs, CancelOutcome, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, LEASE_MS, mustGetTask, scheduleAndClaim } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

const BASE_MS = 200;

export function failCases(h: HarnessRef): void {
  describe('fail', () => {
    it('reschedules after backoff (200, 400 ms), not claimable before it, then DEAD when exhausted', async () => {
      const { store, clock } = h();
      const c1 = await scheduleAndClaim(store, { maxAttempts: 3 });
      clock.tick(10);
      const due1 = new Date(clock.now() + backoffMs(BASE_MS, 1));
      expect(due1.getTime() - clock.now()).toBe(200);
      expect(await store.fail({ id: c1.id, attempt: 1, error: 'boom 1', backoffMs: backoffMs(BASE_MS, 1) })).toEqual({ outcome: 'SCHEDULED', dueAt: due1 });
      expect(await mustGetTask(store, c1.id)).toMatchObject({
        state: TaskState.SCHEDULED,
        dueAt: due1,
        attempt: 1,
        failures: 1,
        leaseOwner: null,
        leaseUntil: null,
        lastError: 'boom 1',
      });

      clock.tick(199);
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      clock.tick(1);
      const c2 = await claimExactly(store, c1.id);
      expect(c2).toMatchObject({ attempt: 2, failures: 1, dueAt: due1 });

      const due2 = new Date(clock.now() + backoffMs(BASE_MS, 2));
      expect(due2.getTime() - clock.now()).toBe(400);
      expect(await store.fail({ id: c1.id, attempt: 2, error: 'boom 2', backoffMs: backoffMs(BASE_MS, 2) })).toEqual({ outcome: 'SCHEDULED', dueAt: due2 });
      clock.tick(399);
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      clock.tick(1);
      expect(await claimExactly(store, c1.id)).toMatchObject({ attempt: 3, failures: 2 });

      expect(await store.fail({ id: c1.id, attempt: 3, error: 'boom 3', backoffMs: backoffMs(BASE_MS, 3) })).toEqual({ outcome: 'DEAD' });
      expect(await mustGetTask(store, c1.id)).toMatchObject({ state: TaskState.DEAD, attempt: 3, failures: 3, lastError: 'boom 3', leaseOwner: null, leaseUntil: null });
      expect(await store.getCompletion(c1.id)).toBeNull();
      clock.tick(3_600_000);
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
    });

    it('a zero backoff makes the task due at once', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 2 });
      expect(await store.fail({ id: c.id, attempt: 1, error: 'again', backoffMs: 0 })).toEqual({ outcome: 'SCHEDULED', dueAt: new Date(clock.now()) });
      expect((await claimExactly(store, c.id)).attempt).toBe(2);
    });

    it('with maxAttempts 1 the first failure is DEAD', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 1 });
      expect(await store.fail({ id: c.id, attempt: 1, error: 'x', backoffMs: 100 })).toEqual({ outcome: 'DEAD' });
      expect((await mustGetTask(store, c.id)).state).toBe(TaskState.DEAD);
    });

    it('a cancel-requested task goes to CANCELLED on fail', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 5 });
      expect(await store.cancel(c.id)).toBe(CancelOutcome.REQUESTED);
      expect(await store.fail({ id: c.id, attempt: 1, error: 'x', backoffMs: 100 })).toEqual({ outcome: 'CANCELLED' });
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.CANCELLED, failures: 1, leaseOwner: null, leaseUntil: null, cancelRequested: true });
      expect(await store.getCompletion(c.id)).toBeNull();
    });

    it('records at most 2 000 characters of error text', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 2 });
      await store.fail({ id: c.id, attempt: 1, error: 'e'.repeat(5_000), backoffMs: 0 });
      expect((await mustGetTask(store, c.id)).lastError).toBe('e'.repeat(2_000));
    });

    it('an unknown id is stale', async () => {
      const { store } = h();
      expect(await store.fail({ id: '987654321', attempt: 1, error: 'x', backoffMs: 0 })).toEqual({ outcome: 'REJECTED_STALE' });
    });
  });
}
