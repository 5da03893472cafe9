/**
 * Retry policy on the store (docs/contract.md#retry-policy): the task's own policy stored at
 * schedule and returned by claim and getTask; `fail` with `retryable: false` (DEAD now) and with a
 * `maxAttempts` limit of the worker's; `snooze` (SCHEDULED at a new due time without counting a
 * failure), each fenced by attempt like fail and release.
 */
import { MAX_DELAY_MS, type RetryPolicy, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, expectValidationError, mustGetTask } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';

const POLICY: RetryPolicy = { maxAttempts: 7, baseMs: 250, capMs: 60_000, jitter: 'equal' };

export function retryCases(h: HarnessRef): void {
  describe('retry policy', () => {
    it('a task keeps its own policy: getTask and every claim return it; absent when none was given', async () => {
      const { store, clock } = h();
      const { id } = await store.schedule({ kind: 'policy', retry: POLICY });
      const plain = await store.schedule({ kind: 'plain', delayMs: 60_000 });
      const task = await mustGetTask(store, id);
      expect(task.retry).toEqual(POLICY);
      expect(task.maxAttempts).toBe(7);
      expect(await mustGetTask(store, plain.id)).not.toHaveProperty('retry');
      const first = await claimExactly(store, id);
      expect(first.retry).toEqual(POLICY);
      expect(await store.fail({ id, attempt: first.attempt, error: 'boom', backoffMs: 5 })).toMatchObject({ outcome: TaskState.SCHEDULED });
      clock.tick(5);
      expect((await claimExactly(store, id)).retry).toEqual(POLICY);
    });

    it('maxAttempts given at the top level is the task\'s own too; equal values are one, differing ones are refused', async () => {
      const { store } = h();
      const [a, b] = await store.scheduleMany([
        { kind: 'top', maxAttempts: 3 },
        { kind: 'both', maxAttempts: 4, retry: { maxAttempts: 4, jitter: 'full' } },
      ]);
      expect(await mustGetTask(store, a?.id as string)).toMatchObject({ maxAttempts: 3, retry: { maxAttempts: 3 } });
      expect(await mustGetTask(store, b?.id as string)).toMatchObject({ maxAttempts: 4, retry: { maxAttempts: 4, jitter: 'full' } });
      await expectValidationError(() => store.schedule({ kind: 'k', maxAttempts: 2, retry: { maxAttempts: 3 } }), 'INVALID_MAX_ATTEMPTS', 'retry.maxAttempts');
      await expectValidationError(() => store.schedule({ kind: 'k', retry: { jitter: 'half' } } as never), 'INVALID_OPTION', 'retry.jitter');
      await expectValidationError(() => store.schedule({ kind: 'k', retry: { baseMs: -1 } }), 'INVALID_OPTION', 'retry.baseMs');
      await expectValidationError(() => store.schedule({ kind: 'k', retry: { capMs: 0 } }), 'INVALID_OPTION', 'retry.capMs');
      await expectValidationError(() => store.schedule({ kind: 'k', retry: { maxAttempts: 0 } }), 'INVALID_MAX_ATTEMPTS', 'retry.maxAttempts');
      await expectValidationError(() => store.schedule({ kind: 'k', retry: { base: 1 } } as never), 'INVALID_OPTION', 'retry.base');
      await expectValidationError(() => store.scheduleMany([{ kind: 'ok' }, { kind: 'k', retry: 5 } as never]), 'INVALID_OPTION', 'tasks[1].retry');
      expect((await store.listTasks()).tasks.map((t) => t.kind).sort()).toEqual(['both', 'top']);
    });

    it('fail with retryable: false is DEAD at once with attempts left, recording the reason; fenced by attempt', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'final', maxAttempts: 5 });
      const claimed = await claimExactly(store, id);
      expect(await store.fail({ id, attempt: claimed.attempt + 1, error: 'stale', backoffMs: 0, retryable: false })).toEqual({ outcome: 'REJECTED_STALE' });
      expect((await mustGetTask(store, id)).state).toBe(TaskState.CLAIMED);
      expect(await store.fail({ id, attempt: claimed.attempt, error: 'card declined', backoffMs: 1_000, retryable: false })).toEqual({ outcome: TaskState.DEAD });
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.DEAD, failures: 1, lastError: 'card declined', leaseOwner: null, leaseUntil: null });
      expect(await store.fail({ id, attempt: claimed.attempt, error: 'again', backoffMs: 0, retryable: false })).toEqual({ outcome: 'REJECTED_STALE' });
      expect((await mustGetTask(store, id)).lastError).toBe('card declined');
    });

    it('fail with retryable: false of a cancel-requested task is CANCELLED, as any fail', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'final' });
      const claimed = await claimExactly(store, id);
      expect(await store.cancel(id)).toBe('REQUESTED');
      expect(await store.fail({ id, attempt: claimed.attempt, error: 'no', backoffMs: 0, retryable: false })).toEqual({ outcome: TaskState.CANCELLED });
      expect((await mustGetTask(store, id)).state).toBe(TaskState.CANCELLED);
    });

    it('the retry operation copies the task\'s own policy; a maxAttempts given to it replaces the policy\'s', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'own', key: 'reservation-42', retry: POLICY, priority: 7 });
      const c = await claimExactly(store, id);
      expect(await store.fail({ id, attempt: c.attempt, error: 'no', backoffMs: 0, retryable: false })).toEqual({ outcome: TaskState.DEAD });
      const first = await store.retry({ id });
      if (first.outcome !== 'RETRIED') throw new Error(`expected RETRIED, got ${first.outcome}`);
      const copy = await mustGetTask(store, first.id);
      expect(copy).toMatchObject({ retry: POLICY, maxAttempts: 7, priority: 7, key: null });
      const c2 = await claimExactly(store, first.id);
      expect(await store.fail({ id: first.id, attempt: c2.attempt, error: 'no', backoffMs: 0, retryable: false })).toEqual({ outcome: TaskState.DEAD });
      const second = await store.retry({ id: first.id, maxAttempts: 2 });
      if (second.outcome !== 'RETRIED') throw new Error(`expected RETRIED, got ${second.outcome}`);
      expect(await mustGetTask(store, second.id)).toMatchObject({ retry: { ...POLICY, maxAttempts: 2 }, maxAttempts: 2 });
    });

    it('fail with a maxAttempts limit uses it instead of the row\'s, lower or higher, and the row keeps it', async () => {
      const { store, clock } = h();
      const low = await store.schedule({ kind: 'low' });
      const lowClaim = await claimExactly(store, low.id);
      expect(await store.fail({ id: low.id, attempt: lowClaim.attempt, error: 'e', backoffMs: 0, maxAttempts: 1 })).toEqual({ outcome: TaskState.DEAD });
      // The row shows the limit that applied, not the default 5 (found by a user: "DEAD with attempts left").
      expect(await mustGetTask(store, low.id)).toMatchObject({ failures: 1, maxAttempts: 1, state: TaskState.DEAD });
      const high = await store.schedule({ kind: 'high', maxAttempts: 1 });
      for (let n = 1; n <= 2; n++) {
        const c = await claimExactly(store, high.id);
        expect(await store.fail({ id: high.id, attempt: c.attempt, error: `e${n}`, backoffMs: 10, maxAttempts: 3 })).toMatchObject({ outcome: TaskState.SCHEDULED });
        clock.tick(10);
      }
      const last = await claimExactly(store, high.id);
      expect(await store.fail({ id: high.id, attempt: last.attempt, error: 'e3', backoffMs: 10, maxAttempts: 3 })).toEqual({ outcome: TaskState.DEAD });
      expect(await mustGetTask(store, high.id)).toMatchObject({ failures: 3, maxAttempts: 3, state: TaskState.DEAD });
    });

    it('snooze (delayMs) makes the task due later without counting a failure; the next claim is a new attempt', async () => {
      const { store, clock } = h();
      const { id } = await store.schedule({ kind: 'snoozy', maxAttempts: 1 });
      const before = await store.now();
      const first = await claimExactly(store, id);
      const result = await store.snooze({ id, attempt: first.attempt, delayMs: 30_000 });
      expect(result).toEqual({ outcome: TaskState.SCHEDULED, dueAt: new Date(before.getTime() + 30_000) });
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.SCHEDULED, failures: 0, attempt: 1, lastError: null, leaseOwner: null, leaseUntil: null, dueAt: new Date(before.getTime() + 30_000) });
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 })).toEqual([]);
      clock.tick(30_000);
      // Snoozing again and again never makes a task DEAD, even with maxAttempts 1.
      for (let n = 2; n <= 4; n++) {
        const c = await claimExactly(store, id);
        expect(c).toMatchObject({ attempt: n, failures: 0 });
        expect(await store.snooze({ id, attempt: c.attempt, delayMs: 0 })).toMatchObject({ outcome: TaskState.SCHEDULED });
      }
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.SCHEDULED, failures: 0, attempt: 4 });
    });

    it('snooze (dueAt) sets that due time; the failures and last_error of earlier attempts stay as they were', async () => {
      const { store, clock } = h();
      const { id } = await store.schedule({ kind: 'snoozy' });
      const first = await claimExactly(store, id);
      await store.fail({ id, attempt: first.attempt, error: 'first failure', backoffMs: 0 });
      const second = await claimExactly(store, id);
      const dueAt = new Date((await store.now()).getTime() + 3_600_000);
      expect(await store.snooze({ id, attempt: second.attempt, dueAt })).toEqual({ outcome: TaskState.SCHEDULED, dueAt });
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.SCHEDULED, dueAt, failures: 1, lastError: 'first failure' });
      clock.tick(3_600_000);
      expect((await claimExactly(store, id)).attempt).toBe(3);
    });

    it('snooze is fenced: a stale attempt or a task not CLAIMED is REJECTED_STALE and nothing changes', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'snoozy' });
      expect(await store.snooze({ id, attempt: 1, delayMs: 5 })).toEqual({ outcome: 'REJECTED_STALE' });
      const claimed = await claimExactly(store, id);
      expect(await store.snooze({ id, attempt: claimed.attempt + 1, delayMs: 5 })).toEqual({ outcome: 'REJECTED_STALE' });
      const held = await mustGetTask(store, id);
      expect(held.state).toBe(TaskState.CLAIMED);
      expect(await store.complete({ id, attempt: claimed.attempt, owner: 'w1' })).toBe('DONE');
      expect(await store.snooze({ id, attempt: claimed.attempt, delayMs: 5 })).toEqual({ outcome: 'REJECTED_STALE' });
      expect((await mustGetTask(store, id)).state).toBe(TaskState.DONE);
      expect(await store.snooze({ id: '999999999', attempt: 1, delayMs: 5 })).toEqual({ outcome: 'REJECTED_STALE' });
    });

    it('snooze of a cancel-requested task is CANCELLED, as release', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'snoozy' });
      const claimed = await claimExactly(store, id);
      expect(await store.cancel(id)).toBe('REQUESTED');
      expect(await store.snooze({ id, attempt: claimed.attempt, delayMs: 1_000 })).toEqual({ outcome: TaskState.CANCELLED });
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.CANCELLED, failures: 0, leaseOwner: null });
    });

    it('refuses bad snooze and fail parameters before writing anything', async () => {
      const { store, clock } = h();
      const { id } = await store.schedule({ kind: 'snoozy' });
      const claimed = await claimExactly(store, id);
      const { attempt } = claimed;
      await expectValidationError(() => store.snooze({ id, attempt }), 'INVALID_DELAY', 'delayMs');
      await expectValidationError(() => store.snooze({ id, attempt, delayMs: 1, dueAt: new Date() }), 'INVALID_DELAY', 'delayMs');
      await expectValidationError(() => store.snooze({ id, attempt, delayMs: -1 }), 'INVALID_DELAY', 'delayMs');
      await expectValidationError(() => store.snooze({ id, attempt, dueAt: new Date(Number.NaN) }), 'INVALID_RUN_AT', 'dueAt');
      // The cap of runAt and delayMs: 100 years after the store's now (issue 27 item 10).
      await expectValidationError(() => store.snooze({ id, attempt, dueAt: new Date(clock.now() + MAX_DELAY_MS + 1) }), 'INVALID_RUN_AT', 'dueAt');
      await expectValidationError(() => store.snooze({ id, attempt: 0, delayMs: 1 }), 'INVALID_OPTION', 'attempt');
      await expectValidationError(() => store.snooze({ id: 'x', attempt, delayMs: 1 }), 'INVALID_TASK_ID', 'id');
      await expectValidationError(() => store.snooze({ id, attempt, delay: 1 } as never), 'INVALID_OPTION', 'delay');
      await expectValidationError(() => store.fail({ id, attempt, error: 'e', backoffMs: 0, retryable: 'no' } as never), 'INVALID_OPTION', 'retryable');
      await expectValidationError(() => store.fail({ id, attempt, error: 'e', backoffMs: 0, maxAttempts: 0 }), 'INVALID_MAX_ATTEMPTS', 'maxAttempts');
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.CLAIMED, attempt, failures: 0 });
    });
  });
}
