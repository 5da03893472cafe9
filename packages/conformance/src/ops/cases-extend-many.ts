/**
 * `extendMany`: one renewal for many leases, each item fenced exactly as `extend`
 * (docs/contract.md#transitions, extend; docs/contract.md#local-queue): only a row still CLAIMED
 * with that attempt, not cancel-requested and not expired is renewed; the answer says which were.
 */
import { CancelOutcome, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { expectValidationError, LEASE_MS, mustGetTask } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';

export function extendManyCases(h: HarnessRef): void {
  describe('extendMany', () => {
    it('renews every current lease to store now + leaseMs and leaves the rest of each row alone', async () => {
      const { store, clock } = h();
      await store.scheduleMany([{ kind: 'k' }, { kind: 'k' }, { kind: 'k' }]);
      const claimed = await store.claim({ owner: 'w1', limit: 3, leaseMs: LEASE_MS });
      expect(claimed).toHaveLength(3);
      const before = await Promise.all(claimed.map((c) => mustGetTask(store, c.id)));
      clock.tick(900);
      const renewed = await store.extendMany({ items: claimed.map((c) => ({ id: c.id, attempt: c.attempt })), leaseMs: 5_000 });
      expect(renewed).toEqual([true, true, true]);
      for (const [i, c] of claimed.entries()) expect(await mustGetTask(store, c.id)).toEqual({ ...before[i], leaseUntil: new Date(clock.now() + 5_000) });
      clock.tick(4_000);
      expect(await store.reclaimExpired()).toEqual([]);
      expect(await store.countByState()).toMatchObject({ CLAIMED: 3 });
    });

    it('fences each item on its own: stale attempt, cancel requested, expired, not claimed and unknown ids answer false and change nothing', async () => {
      const { store, clock } = h();
      await store.scheduleMany([{ kind: 'k' }, { kind: 'k' }, { kind: 'k' }]);
      const [a, b, c] = await store.claim({ owner: 'w1', limit: 3, leaseMs: LEASE_MS });
      if (!a || !b || !c) throw new Error('three tasks should be claimed');
      const waiting = await store.schedule({ kind: 'k', delayMs: 60_000 });
      expect(await store.cancel(b.id)).toBe(CancelOutcome.REQUESTED);
      const rows = async () => Promise.all([a.id, b.id, c.id, waiting.id].map((id) => mustGetTask(store, id)));
      const before = await rows();
      const renewed = await store.extendMany({
        items: [
          { id: a.id, attempt: a.attempt + 1 },
          { id: b.id, attempt: b.attempt },
          { id: waiting.id, attempt: 1 },
          { id: '987654321', attempt: 1 },
          { id: c.id, attempt: c.attempt },
        ],
        leaseMs: 5_000,
      });
      expect(renewed).toEqual([false, false, false, false, true]);
      const after = await rows();
      expect(after.slice(0, 2)).toEqual(before.slice(0, 2));
      expect(after[3]).toEqual(before[3]);
      expect(after[2]?.leaseUntil).toEqual(new Date(clock.now() + 5_000));
      clock.tick(5_001);
      expect(await store.extendMany({ items: [{ id: c.id, attempt: c.attempt }], leaseMs: 5_000 })).toEqual([false]);
      expect((await mustGetTask(store, c.id)).state).toBe(TaskState.CLAIMED);
    });

    it('an empty batch answers []; bad input is refused whole with the field named', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'k' });
      const [c] = await store.claim({ owner: 'w1', limit: 1, leaseMs: LEASE_MS });
      if (!c) throw new Error('one task should be claimed');
      const before = await mustGetTask(store, id);
      expect(await store.extendMany({ items: [], leaseMs: LEASE_MS })).toEqual([]);
      await expectValidationError(() => store.extendMany({ items: [{ id, attempt: 1 }, { id, attempt: 1 }], leaseMs: LEASE_MS }), 'INVALID_OPTION', 'items[1].id');
      await expectValidationError(() => store.extendMany({ items: [{ id, attempt: 0 }], leaseMs: LEASE_MS }), 'INVALID_OPTION', 'items[0].attempt');
      await expectValidationError(() => store.extendMany({ items: [{ id: 'x', attempt: 1 }], leaseMs: LEASE_MS }), 'INVALID_TASK_ID', 'items[0].id');
      await expectValidationError(() => store.extendMany({ items: [{ id, attempt: 1 }], leaseMs: 0 }), 'INVALID_OPTION', 'leaseMs');
      await expectValidationError(() => store.extendMany({ items: 'no' as never, leaseMs: LEASE_MS }), 'INVALID_OPTION', 'items');
      expect(await mustGetTask(store, id)).toEqual(before);
    });
  });
}
