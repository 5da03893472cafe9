/**
 * claim: SCHEDULED → CLAIMED when due, attempt+1, lease from the store clock, batch limit, no double
 * claim (docs/contract.md#promise-1, #promise-2, #transitions; evidence cases boundary_not_before_due, boundary_claim_limit).
 */
import { TaskState, type TaskId } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, LEASE_MS, mustGetTask } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function claimCases(h: HarnessRef): void {
  describe('claim', () => {
    it('moves a due task to CLAIMED: attempt+1, lease = now + leaseMs, owner, claimedAt = store now', async () => {
      const { store, clock } = h();
      const { id, dueAt } = await store.schedule({ kind: 'remind', payload: { to: 'a@b.c' }, delayMs: 100, maxAttempts: 3 });
      clock.tick(150);
      const now = clock.now();
      const claimed = await store.claim({ owner: 'worker-A', limit: 10, leaseMs: 2_500 });
      expect(claimed).toEqual([
        {
          id,
          kind: 'remind',
          payload: { to: 'a@b.c' },
          attempt: 1,
          failures: 0,
          maxAttempts: 3,
          dueAt,
          leaseUntil: new Date(now + 2_500),
          claimedAt: new Date(now),
          priority: 0,
          retry: { maxAttempts: 3 }, // an explicit maxAttempts is the task's own policy (docs/contract.md#retry-policy)
        },
      ]);
      const task = await mustGetTask(store, id);
      expect(task).toMatchObject({
        state: TaskState.CLAIMED,
        attempt: 1,
        leaseOwner: 'worker-A',
        leaseUntil: new Date(now + 2_500),
        cancelRequested: false,
        dueAt,
      });
    });

    it('never claims before the due time: not at T-1 ms, yes at T', async () => {
      const { store, clock } = h();
      const { id, dueAt } = await store.schedule({ kind: 'k', delayMs: 1_000 });
      clock.tick(999);
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      expect((await mustGetTask(store, id)).state).toBe(TaskState.SCHEDULED);
      clock.tick(1);
      const [c] = await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS });
      expect(c?.id).toBe(id);
      expect(c?.claimedAt).toEqual(dueAt);
    });

    it('respects the batch limit: 25 due, limit 10 -> 10, 10, 5, 0', async () => {
      const { store, clock } = h();
      const scheduled = await store.scheduleMany(Array.from({ length: 25 }, (_, i) => ({ kind: 'k', delayMs: i })));
      clock.tick(25);
      const sizes: number[] = [];
      const seen = new Set<TaskId>();
      for (let round = 0; round < 4; round++) {
        const batch = await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS });
        sizes.push(batch.length);
        for (const c of batch) {
          expect(c.attempt).toBe(1);
          seen.add(c.id);
        }
      }
      expect(sizes).toEqual([10, 10, 5, 0]);
      expect(seen).toEqual(new Set(scheduled.map((s) => s.id)));
    });

    it('with a single claimer, earlier-due tasks come first', async () => {
      const { store, clock } = h();
      const late = await store.schedule({ kind: 'late', delayMs: 300 });
      const early = await store.schedule({ kind: 'early', delayMs: 100 });
      const middle = await store.schedule({ kind: 'middle', delayMs: 200 });
      clock.tick(300);
      const firstTwo = await store.claim({ owner: 'w1', limit: 2, leaseMs: LEASE_MS });
      expect(new Set(firstTwo.map((c) => c.id))).toEqual(new Set([early.id, middle.id]));
      expect((await store.claim({ owner: 'w1', limit: 2, leaseMs: LEASE_MS })).map((c) => c.id)).toEqual([late.id]);
    });

    it('claims one at a time in due order with limit 1', async () => {
      const { store, clock } = h();
      const c = await store.schedule({ kind: 'c', delayMs: 30 });
      const a = await store.schedule({ kind: 'a', delayMs: 10 });
      const b = await store.schedule({ kind: 'b', delayMs: 20 });
      clock.tick(30);
      await claimExactly(store, a.id);
      await claimExactly(store, b.id);
      await claimExactly(store, c.id);
    });

    it('claims only SCHEDULED tasks: not CLAIMED or CANCELLED ones', async () => {
      const { store } = h();
      const claimed = (await store.schedule({ kind: 'k' })).id;
      await claimExactly(store, claimed);
      const cancelled = (await store.schedule({ kind: 'k' })).id;
      await store.cancel(cancelled);
      expect(await store.claim({ owner: 'w2', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      expect(await mustGetTask(store, claimed)).toMatchObject({ state: TaskState.CLAIMED, attempt: 1, leaseOwner: 'w1' });
    });

    it('concurrent claimers never claim one task twice', async () => {
      const { store, clock } = h();
      const total = 30;
      await store.scheduleMany(Array.from({ length: total }, (_, i) => ({ kind: 'k', delayMs: i })));
      clock.tick(total);
      const claimsByWorker = await Promise.all(
        ['w1', 'w2', 'w3', 'w4', 'w5'].map(async (owner) => {
          const mine: TaskId[] = [];
          for (let round = 0; round < total; round++) {
            const batch = await store.claim({ owner, limit: 4, leaseMs: LEASE_MS });
            if (batch.length === 0) break;
            mine.push(...batch.map((c) => c.id));
          }
          return mine;
        }),
      );
      const all = claimsByWorker.flat();
      expect(all).toHaveLength(total);
      expect(new Set(all).size).toBe(total);
      expect((await store.countByState()).CLAIMED).toBe(total);
    });
  });
}
