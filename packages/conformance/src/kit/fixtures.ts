/**
 * Builders that drive a task into each terminal state through the public API only.
 */
import { CancelOutcome, CompleteOutcome, type Store, type Task } from '@postpone/core';
import { expect } from 'vitest';
import { mustGetTask, scheduleAndClaim } from './helpers.js';

export type TerminalFixture = 'DONE' | 'DEAD' | 'CANCELLED_WAITING' | 'CANCELLED_RUNNING';

/** Drives a fresh task to the terminal state named by `fixture` and returns its row. */
export async function makeTerminal(store: Store<any>, fixture: TerminalFixture): Promise<Task> {
  switch (fixture) {
    case 'DONE': {
      const c = await scheduleAndClaim(store, { kind: 'done-job' });
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', result: { ok: true } })).toBe(CompleteOutcome.DONE);
      return mustGetTask(store, c.id);
    }
    case 'DEAD': {
      const c = await scheduleAndClaim(store, { kind: 'dead-job', maxAttempts: 1 });
      expect(await store.fail({ id: c.id, attempt: c.attempt, error: 'boom', backoffMs: 100 })).toEqual({ outcome: 'DEAD' });
      return mustGetTask(store, c.id);
    }
    case 'CANCELLED_WAITING': {
      const { id } = await store.schedule({ kind: 'cancelled-job', delayMs: 60_000 });
      expect(await store.cancel(id)).toBe(CancelOutcome.CANCELLED);
      return mustGetTask(store, id);
    }
    case 'CANCELLED_RUNNING': {
      const c = await scheduleAndClaim(store, { kind: 'cancelled-running-job' });
      expect(await store.cancel(c.id)).toBe(CancelOutcome.REQUESTED);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.CANCELLED_BEFORE_COMMIT);
      return mustGetTask(store, c.id);
    }
  }
}
