/**
 * Read-only calls: peekDue (for the timing wheel), countByState, getTask, getCompletion, now.
 */
import { CancelOutcome, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, stateCounts } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';
import { makeTerminal } from '../kit/fixtures.js';

export function observeCases(h: HarnessRef): void {
  describe('peekDue', () => {
    it('lists only SCHEDULED tasks due within withinMs, ordered by dueAt, with the store now', async () => {
      const { store, clock } = h();
      const t0 = clock.now();
      const running = await store.schedule({ kind: 'running' });
      await claimExactly(store, running.id);
      const a = await store.schedule({ kind: 'a', delayMs: 500 });
      const b = await store.schedule({ kind: 'b', delayMs: 100 });
      const c = await store.schedule({ kind: 'c', delayMs: 300 });
      await store.schedule({ kind: 'far', delayMs: 5_000 });
      const cancelled = await store.schedule({ kind: 'cancelled', delayMs: 50 });
      expect(await store.cancel(cancelled.id)).toBe(CancelOutcome.CANCELLED);

      const peek = await store.peekDue({ withinMs: 1_000 });
      expect(peek).toEqual({
        now: new Date(t0),
        tasks: [
          { id: b.id, dueAt: new Date(t0 + 100) },
          { id: c.id, dueAt: new Date(t0 + 300) },
          { id: a.id, dueAt: new Date(t0 + 500) },
        ],
      });
      expect((await store.peekDue({ withinMs: 1_000, limit: 2 })).tasks.map((t) => t.id)).toEqual([b.id, c.id]);
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 4, CLAIMED: 1, CANCELLED: 1 }));
    });

    it('includes overdue tasks and nothing else with withinMs 0', async () => {
      const { store, clock } = h();
      const t0 = clock.now();
      const b = await store.schedule({ kind: 'b', delayMs: 100 });
      await store.schedule({ kind: 'c', delayMs: 300 });
      clock.tick(200);
      expect(await store.peekDue({ withinMs: 0 })).toEqual({ now: new Date(t0 + 200), tasks: [{ id: b.id, dueAt: new Date(t0 + 100) }] });
    });

    it('does not claim what it lists', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'k' });
      expect((await store.peekDue({ withinMs: 0 })).tasks.map((t) => t.id)).toEqual([id]);
      expect((await store.getTask(id))?.state).toBe(TaskState.SCHEDULED);
      await claimExactly(store, id);
    });
  });

  describe('countByState', () => {
    it('is all zeros on an empty store', async () => {
      expect(await h().store.countByState()).toEqual(stateCounts());
    });

    it('counts every state exactly', async () => {
      const { store } = h();
      await makeTerminal(store, 'DONE');
      await makeTerminal(store, 'DEAD');
      await makeTerminal(store, 'CANCELLED_WAITING');
      await makeTerminal(store, 'CANCELLED_RUNNING');
      await claimExactly(store, (await store.schedule({ kind: 'k' })).id);
      await claimExactly(store, (await store.schedule({ kind: 'k' })).id);
      await store.schedule({ kind: 'k', delayMs: 10_000 });
      expect(await store.countByState()).toEqual({ SCHEDULED: 1, CLAIMED: 2, DONE: 1, CANCELLED: 2, DEAD: 1 });
    });
  });

  describe('reads', () => {
    it('getTask and getCompletion return null for an unknown id', async () => {
      const { store } = h();
      expect(await store.getTask('987654321')).toBeNull();
      expect(await store.getCompletion('987654321')).toBeNull();
    });

    it('now() is the store clock', async () => {
      const { store, clock } = h();
      expect(await store.now()).toEqual(new Date(clock.now()));
      clock.tick(1_234);
      expect(await store.now()).toEqual(new Date(clock.now()));
    });
  });
}
