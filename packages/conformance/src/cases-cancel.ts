/**
 * cancel: each of the five outcomes of docs/contract.md#outcomes, and what the caller may rely on afterwards
 * (evidence cancel_semantics).
 */
import { CancelOutcome, CompleteOutcome, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import type { HarnessRef } from './kit/harness.js';
import { LEASE_MS, mustGetTask, scheduleAndClaim } from './kit/helpers.js';
import { makeTerminal } from './kit/fixtures.js';

export function cancelCases(h: HarnessRef): void {
  describe('cancel', () => {
    it('CANCELLED while waiting, then ALREADY_CANCELLED; it never runs', async () => {
      const { store, clock } = h();
      const { id } = await store.schedule({ kind: 'k', delayMs: 1_000 });
      expect(await store.cancel(id)).toBe(CancelOutcome.CANCELLED);
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.CANCELLED, attempt: 0, leaseOwner: null, leaseUntil: null });
      expect(await store.cancel(id)).toBe(CancelOutcome.ALREADY_CANCELLED);
      clock.tick(2_000);
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      expect(await store.getCompletion(id)).toBeNull();
    });

    it('REQUESTED while running -> extend false -> complete CANCELLED_BEFORE_COMMIT -> CANCELLED, no completion', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      expect(await store.cancel(c.id)).toBe(CancelOutcome.REQUESTED);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.CLAIMED, cancelRequested: true, attempt: 1, leaseOwner: 'w1' });
      expect(await store.cancel(c.id)).toBe(CancelOutcome.REQUESTED);
      expect(await store.extend({ id: c.id, attempt: c.attempt, leaseMs: LEASE_MS })).toBe(false);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', result: 'ignored' })).toBe(CompleteOutcome.CANCELLED_BEFORE_COMMIT);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.CANCELLED, result: null, leaseOwner: null, leaseUntil: null });
      expect(await store.getCompletion(c.id)).toBeNull();
      expect(await store.cancel(c.id)).toBe(CancelOutcome.ALREADY_CANCELLED);
    });

    it('TOO_LATE for DONE, with its completion kept', async () => {
      const { store } = h();
      const done = await makeTerminal(store, 'DONE');
      expect(await store.cancel(done.id)).toBe(CancelOutcome.TOO_LATE);
      expect(await mustGetTask(store, done.id)).toEqual(done);
      expect(await store.getCompletion(done.id)).toMatchObject({ taskId: done.id, attempt: 1 });
    });

    it('TOO_LATE for DEAD', async () => {
      const { store } = h();
      const dead = await makeTerminal(store, 'DEAD');
      expect(await store.cancel(dead.id)).toBe(CancelOutcome.TOO_LATE);
      expect(await mustGetTask(store, dead.id)).toEqual(dead);
    });

    it('NOT_FOUND for an unknown id', async () => {
      const { store } = h();
      expect(await store.cancel('987654321')).toBe(CancelOutcome.NOT_FOUND);
      expect(await store.cancel('9223372036854775807')).toBe(CancelOutcome.NOT_FOUND);
    });
  });
}
