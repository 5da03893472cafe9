/**
 * The lease CHECK constraint: `state = 'CLAIMED'` if and only if both lease columns are set
 * (docs/contract.md#data-model). Exercised with a raw write that bypasses the API, so the store itself must refuse.
 */
import { PostponeError, TaskState, type TaskState as TaskStateT } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError, mustGetTask } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

const LEASE = () => new Date(Date.UTC(2031, 0, 1));

const REFUSED: readonly [string, { state: TaskStateT; leaseOwner: string | null; leaseUntil: Date | null }][] = [
  ['CLAIMED without a lease', { state: TaskState.CLAIMED, leaseOwner: null, leaseUntil: null }],
  ['CLAIMED without lease_until', { state: TaskState.CLAIMED, leaseOwner: 'w1', leaseUntil: null }],
  ['CLAIMED without lease_owner', { state: TaskState.CLAIMED, leaseOwner: null, leaseUntil: LEASE() }],
  ['SCHEDULED with a full lease', { state: TaskState.SCHEDULED, leaseOwner: 'w1', leaseUntil: LEASE() }],
  ['DONE with a full lease', { state: TaskState.DONE, leaseOwner: 'w1', leaseUntil: LEASE() }],
];

export function constraintCases(h: HarnessRef): void {
  describe('lease CHECK constraint', () => {
    it.each(REFUSED)('refuses %s with a PostponeError and leaves the row unchanged', async (_label, patch) => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'k' });
      const before = await mustGetTask(store, id);
      const error = await captureError(() => h().forceRow(id, patch));
      expect(PostponeError.isInstance(error), `expected a PostponeError, got ${String(error)}`).toBe(true);
      expect(await mustGetTask(store, id)).toEqual(before);
    });

    it('accepts CLAIMED with a full lease', async () => {
      const { store, clock } = h();
      const { id } = await store.schedule({ kind: 'k' });
      const leaseUntil = new Date(clock.now() + 5_000);
      await h().forceRow(id, { state: TaskState.CLAIMED, leaseOwner: 'forced', leaseUntil });
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.CLAIMED, leaseOwner: 'forced', leaseUntil, attempt: 0 });
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 })).toEqual([]);
    });
  });
}
