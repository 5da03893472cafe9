/**
 * Terminal states DONE, CANCELLED and DEAD never change again (docs/contract.md#promise-5): every command
 * afterwards leaves the row and its completion exactly as they were.
 */
import { CancelOutcome, CompleteOutcome, type CompleteOutcome as CompleteOutcomeT, type CancelOutcome as CancelOutcomeT } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import type { HarnessRef } from './kit/harness.js';
import { LEASE_MS, observe } from './kit/helpers.js';
import { makeTerminal, type TerminalFixture } from './kit/fixtures.js';

const EXPECTED: Record<TerminalFixture, { cancel: CancelOutcomeT; complete: CompleteOutcomeT }> = {
  DONE: { cancel: CancelOutcome.TOO_LATE, complete: CompleteOutcome.DONE },
  DEAD: { cancel: CancelOutcome.TOO_LATE, complete: CompleteOutcome.REJECTED_STALE },
  CANCELLED_WAITING: { cancel: CancelOutcome.ALREADY_CANCELLED, complete: CompleteOutcome.REJECTED_STALE },
  CANCELLED_RUNNING: { cancel: CancelOutcome.ALREADY_CANCELLED, complete: CompleteOutcome.CANCELLED_BEFORE_COMMIT },
};

export function terminalCases(h: HarnessRef): void {
  describe('terminal states are immutable', () => {
    it.each(Object.keys(EXPECTED) as TerminalFixture[])('%s: every command leaves the row identical', async (fixture) => {
      const { store, clock } = h();
      const task = await makeTerminal(store, fixture);
      const attempt = Math.max(1, task.attempt);
      const before = await observe(store, task.id);
      let workCalls = 0;

      clock.tick(LEASE_MS * 10);
      expect(await store.cancel(task.id)).toBe(EXPECTED[fixture].cancel);
      expect(await store.claim({ owner: 'intruder', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      expect(await store.extend({ id: task.id, attempt, leaseMs: LEASE_MS })).toBe(false);
      expect(
        await store.complete({
          id: task.id,
          attempt,
          owner: 'intruder',
          result: 'overwrite',
          work: async () => {
            workCalls++;
          },
        }),
      ).toBe(EXPECTED[fixture].complete);
      expect(await store.complete({ id: task.id, attempt: attempt + 1, owner: 'intruder' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.fail({ id: task.id, attempt, error: 'overwrite', backoffMs: 0 })).toEqual({ outcome: 'REJECTED_STALE' });
      expect(await store.release({ id: task.id, attempt })).toBe('REJECTED_STALE');
      expect(await store.reclaimExpired()).toEqual([]);
      expect(await store.cancel(task.id)).toBe(EXPECTED[fixture].cancel);

      expect(workCalls).toBe(0);
      expect(await observe(store, task.id)).toEqual(before);
    });
  });
}
