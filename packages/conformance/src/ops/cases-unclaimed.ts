/**
 * `unclaimedKinds` (core `unclaimed.ts`, docs/contract.md#unclaimed-kinds): the (queue, kind) pairs
 * whose oldest SCHEDULED task has been due at least `dueForMs` while no task of the pair is CLAIMED.
 * Same answer, order and ValidationErrors on every store; read only.
 */
import { describe, expect, it } from 'vitest';
import { expectValidationError } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';

export function unclaimedCases(h: HarnessRef): void {
  describe('unclaimedKinds', () => {
    it('reports the pairs due for at least dueForMs with none CLAIMED, longest waiting first, by the store clock', async () => {
      const { store, clock } = h();
      expect(await store.unclaimedKinds({ dueForMs: 0 })).toEqual({ now: new Date(clock.now()), dueForMs: 0, kinds: [] });
      const t0 = clock.now();
      // a: two priorities; the older task is in the lower one (the walk reads every level).
      await store.schedule({ kind: 'a', priority: 0 });
      await store.schedule({ kind: 'a', priority: 5, delayMs: 100 });
      // b: one of its two tasks CLAIMED, so someone claims b.
      await store.schedule({ kind: 'b' });
      await store.schedule({ kind: 'b' });
      expect(await store.claim({ owner: 'w1', limit: 1, leaseMs: 60_000, kinds: ['b'] })).toHaveLength(1);
      // c: another queue; a of that queue is CLAIMED, which says nothing of a in the default queue.
      await store.schedule({ kind: 'c', queue: 'other', delayMs: 50 });
      await store.schedule({ kind: 'a', queue: 'other' });
      expect(await store.claim({ owner: 'w1', limit: 1, leaseMs: 60_000, queue: 'other', kinds: ['a'] })).toHaveLength(1);
      // d: not due yet.
      await store.schedule({ kind: 'd', delayMs: 10_000 });
      clock.tick(800);
      // e: due, but only for 200 ms at the read.
      await store.schedule({ kind: 'e' });
      clock.tick(200);
      const now = clock.now();
      const before = await store.countByState();

      const found = await store.unclaimedKinds({ dueForMs: 500 });
      expect(found).toEqual({
        now: new Date(now),
        dueForMs: 500,
        kinds: [
          { queue: 'default', kind: 'a', due: 2, oldestDueAt: new Date(t0), overdueMs: now - t0 },
          { queue: 'other', kind: 'c', due: 1, oldestDueAt: new Date(t0 + 50), overdueMs: now - t0 - 50 },
        ],
      });
      expect((await store.unclaimedKinds({ dueForMs: 0 })).kinds.map((k) => k.kind)).toEqual(['a', 'c', 'e']);
      expect((await store.unclaimedKinds({ dueForMs: 500, queue: 'other' })).kinds.map((k) => k.kind)).toEqual(['c']);
      expect((await store.unclaimedKinds({ dueForMs: 500, queue: 'none' })).kinds).toEqual([]);
      expect((await store.unclaimedKinds({ dueForMs: 500, limit: 1 })).kinds.map((k) => k.kind)).toEqual(['a']);
      expect((await store.unclaimedKinds({ dueForMs: now - t0 + 1 })).kinds).toEqual([]);
      // A read only: nothing claimed, nothing changed.
      expect(await store.countByState()).toEqual(before);
    });

    it('refuses bad parameters with the same ValidationError', async () => {
      const { store } = h();
      await expectValidationError(() => store.unclaimedKinds({} as never), 'INVALID_OPTION', 'dueForMs');
      await expectValidationError(() => store.unclaimedKinds({ dueForMs: -1 }), 'INVALID_OPTION', 'dueForMs');
      await expectValidationError(() => store.unclaimedKinds({ dueForMs: 0, limit: 0 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.unclaimedKinds({ dueForMs: 0, limit: 101 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.unclaimedKinds({ dueForMs: 0, queue: '' }), 'INVALID_QUEUE', 'queue');
      await expectValidationError(() => store.unclaimedKinds({ dueForMs: 0, other: 1 } as never), 'INVALID_OPTION', 'other');
    });
  });
}
