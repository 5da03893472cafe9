/**
 * Progress, awaiting a result and reschedule by id (docs/contract.md#progress, #awaiting-a-result,
 * #reschedule): progress is fenced by the attempt and carried to the finished task; `waitFor`
 * resolves with the terminal task (at once when it already is), rejects typed on timeout, abort and
 * an unknown id; reschedule is fenced on SCHEDULED with typed outcomes and validated as schedule.
 */
import { MAX_PROGRESS_BYTES, TaskNotFoundError, TaskState, WaitTimeoutError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError, claimExactly, expectValidationError, LEASE_MS, mustGetTask, scheduleAndClaim } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function progressWaitCases(h: HarnessRef): void {
  describe('progress', () => {
    it('the current attempt writes it; getTask shows it; a stale attempt is refused; it is kept when the task finishes', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 3 });
      expect((await mustGetTask(store, c.id)).progress).toBeUndefined();
      const before = await mustGetTask(store, c.id);
      expect(await store.reportProgress({ id: c.id, attempt: c.attempt, progress: { done: 1, of: 4 } })).toBe(true);
      expect(await store.reportProgress({ id: c.id, attempt: c.attempt, progress: { done: 2, of: 4 } })).toBe(true);
      const during = await mustGetTask(store, c.id);
      expect(during.progress).toEqual({ done: 2, of: 4 });
      // Nothing else changes, not even updatedAt (a HOT update in PostgreSQL).
      expect({ ...during, progress: undefined }).toEqual({ ...before, progress: undefined });
      expect(await store.reportProgress({ id: c.id, attempt: c.attempt + 1, progress: 'stale' })).toBe(false);
      // The attempt expires and is reclaimed: the old holder's write is refused, the value stays.
      clock.tick(LEASE_MS + 1);
      await store.reclaimExpired();
      expect(await store.reportProgress({ id: c.id, attempt: c.attempt, progress: 'late' })).toBe(false);
      expect((await mustGetTask(store, c.id)).progress).toEqual({ done: 2, of: 4 });
      const again = await claimExactly(store, c.id, 'w2');
      expect(await store.reportProgress({ id: c.id, attempt: again.attempt, progress: [4, 4] })).toBe(true);
      expect(await store.complete({ id: c.id, attempt: again.attempt, owner: 'w2', result: 'ok' })).toBe('DONE');
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.DONE, progress: [4, 4], result: 'ok' });
      expect(await store.reportProgress({ id: c.id, attempt: again.attempt, progress: 'after' })).toBe(false);
    });

    it('is refused on a SCHEDULED task, an unknown id, and kept on DEAD; JSON null is a value', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'job' });
      expect(await store.reportProgress({ id, attempt: 1, progress: 1 })).toBe(false);
      expect(await store.reportProgress({ id: '987654321', attempt: 1, progress: 1 })).toBe(false);
      const c = await claimExactly(store, id);
      expect(await store.reportProgress({ id, attempt: c.attempt, progress: null })).toBe(true);
      expect((await mustGetTask(store, id)).progress).toBeNull();
      expect(await store.reportProgress({ id, attempt: c.attempt, progress: 'half' })).toBe(true);
      expect(await store.fail({ id, attempt: c.attempt, error: 'x', backoffMs: 0, retryable: false })).toEqual({ outcome: 'DEAD' });
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.DEAD, progress: 'half' });
    });

    it('validates: JSON only, at most MAX_PROGRESS_BYTES, known fields; nothing written', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      await expectValidationError(() => store.reportProgress({ id: c.id, attempt: c.attempt, progress: () => 1 }), 'INVALID_PROGRESS', 'progress');
      await expectValidationError(() => store.reportProgress({ id: c.id, attempt: c.attempt, progress: { n: Number.NaN } }), 'INVALID_PROGRESS');
      await expectValidationError(() => store.reportProgress({ id: c.id, attempt: c.attempt, progress: 'x'.repeat(MAX_PROGRESS_BYTES) }), 'PROGRESS_TOO_LARGE', 'progress');
      await expectValidationError(() => store.reportProgress({ id: 'abc', attempt: c.attempt, progress: 1 }), 'INVALID_TASK_ID');
      await expectValidationError(() => store.reportProgress({ id: c.id, attempt: c.attempt, progress: 1, extra: 1 } as never), 'INVALID_OPTION');
      expect((await mustGetTask(store, c.id)).progress).toBeUndefined();
    });
  });

  describe('waitFor', () => {
    it('resolves at once for a finished task, and with the result when the task completes later', async () => {
      const { store } = h();
      const a = await scheduleAndClaim(store);
      expect(await store.complete({ id: a.id, attempt: a.attempt, owner: 'w1', result: { n: 1 } })).toBe('DONE');
      expect(await store.waitFor(a.id, { timeoutMs: 5_000 })).toMatchObject({ id: a.id, state: TaskState.DONE, result: { n: 1 } });

      const b = await scheduleAndClaim(store);
      const waiting = [store.waitFor(b.id, { timeoutMs: 20_000 }), store.waitFor(b.id, { timeoutMs: 20_000 })];
      await store.reportProgress({ id: b.id, attempt: b.attempt, progress: 'almost' });
      expect(await store.completeMany([{ id: b.id, attempt: b.attempt, owner: 'w1', result: 'answer' }])).toEqual(['DONE']);
      for (const task of await Promise.all(waiting)) expect(task).toMatchObject({ id: b.id, state: TaskState.DONE, result: 'answer', progress: 'almost' });
    });

    it('resolves with DEAD (lastError) and CANCELLED tasks', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      const dead = store.waitFor(c.id, { timeoutMs: 20_000 });
      await store.fail({ id: c.id, attempt: c.attempt, error: 'no such user', backoffMs: 0, retryable: false });
      expect(await dead).toMatchObject({ state: TaskState.DEAD, lastError: 'no such user' });
      const { id } = await store.schedule({ kind: 'job', delayMs: 60_000 });
      const cancelled = store.waitFor(id, { timeoutMs: 20_000 });
      expect(await store.cancel(id)).toBe('CANCELLED');
      expect(await cancelled).toMatchObject({ id, state: TaskState.CANCELLED });
    });

    it('rejects with WaitTimeoutError, with the signal reason, and TaskNotFoundError; the task is untouched', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'job', delayMs: 60_000 });
      const timeout = await captureError(() => store.waitFor(id, { timeoutMs: 50 }));
      expect(timeout).toBeInstanceOf(WaitTimeoutError);
      expect(timeout).toMatchObject({ code: 'WAIT_TIMEOUT', taskId: id, timeoutMs: 50 });
      const controller = new AbortController();
      const aborted = store.waitFor(id, { signal: controller.signal });
      const reason = new Error('caller gave up');
      controller.abort(reason);
      expect(await captureError(() => aborted)).toBe(reason);
      expect(await captureError(() => store.waitFor(id, { signal: AbortSignal.abort('already') }))).toBe('already');
      const missing = await captureError(() => store.waitFor('987654321', { timeoutMs: 10_000 }));
      expect(missing).toBeInstanceOf(TaskNotFoundError);
      expect(missing).toMatchObject({ code: 'NOT_FOUND', vanished: false });
      expect((await mustGetTask(store, id)).state).toBe(TaskState.SCHEDULED);
      await expectValidationError(() => store.waitFor(id, { timeoutMs: 0 }), 'INVALID_OPTION', 'timeoutMs');
      await expectValidationError(() => store.waitFor('x'), 'INVALID_TASK_ID');
    });

    it('close() rejects the callers still waiting with StoreClosedError', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'job', delayMs: 60_000 });
      // The caller's handler is attached before close() rejects it (as a caller awaiting it would be).
      const waiting = captureError(() => store.waitFor(id, { timeoutMs: 20_000 }));
      await new Promise((resolve) => setTimeout(resolve, 50));
      await store.close();
      expect(await waiting).toMatchObject({ code: 'STORE_CLOSED' });
    });

    it('a task completed with keep: false rejects its waiter with TaskNotFoundError vanished', async () => {
      const { store } = h();
      // `vanished` needs the waiter to have read the live task before it finishes; nothing observable
      // says when that first read happened, so each round gives it longer (100, 200, … 1 600 ms of wall
      // clock, at most 5 rounds). A round whose first read came after the delete is the other documented
      // outcome (vanished: false: the task was never seen), so a loaded machine costs rounds, not a failure;
      // a store that never reports `vanished: true` fails.
      const outcomes: boolean[] = [];
      for (let round = 0; round < 5 && !outcomes.includes(true); round += 1) {
        const c = await scheduleAndClaim(store);
        const waiting = captureError(() => store.waitFor(c.id, { timeoutMs: 20_000 }));
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** round));
        expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', result: 1, keep: false })).toBe('DONE');
        const error = await waiting;
        expect(error).toBeInstanceOf(TaskNotFoundError);
        expect(error).toMatchObject({ code: 'NOT_FOUND', taskId: c.id });
        outcomes.push((error as TaskNotFoundError).vanished);
      }
      expect(outcomes.at(-1)).toBe(true);
    });
  });

  describe('reschedule', () => {
    it('moves a SCHEDULED task to a new due time (and payload); claimable then, not before', async () => {
      const { store, clock } = h();
      const { id } = await store.schedule({ kind: 'job', payload: { v: 1 }, delayMs: 60_000 });
      const r = await store.reschedule(id, { delayMs: 1_000 });
      expect(r).toEqual({ outcome: 'RESCHEDULED', dueAt: new Date(clock.now() + 1_000) });
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.SCHEDULED, dueAt: new Date(clock.now() + 1_000), payload: { v: 1 }, updatedAt: new Date(clock.now()) });
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      const at = new Date(clock.now() + 500);
      expect(await store.reschedule(id, { dueAt: at, payload: { v: 2 } })).toEqual({ outcome: 'RESCHEDULED', dueAt: at });
      clock.tick(500);
      const [claimed] = await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS });
      expect(claimed).toMatchObject({ id, payload: { v: 2 } });
      const nulled = await store.schedule({ kind: 'job', payload: 'x', delayMs: 5_000 });
      expect((await store.reschedule(nulled.id, { delayMs: 0, payload: null })).outcome).toBe('RESCHEDULED');
      expect((await mustGetTask(store, nulled.id)).payload).toBeNull();
    });

    it('NOT_SCHEDULED with the state for CLAIMED and finished tasks, NOT_FOUND for an unknown id; nothing changes', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      const before = await mustGetTask(store, c.id);
      expect(await store.reschedule(c.id, { delayMs: 10 })).toEqual({ outcome: 'NOT_SCHEDULED', state: TaskState.CLAIMED });
      expect(await mustGetTask(store, c.id)).toEqual(before);
      await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' });
      expect(await store.reschedule(c.id, { delayMs: 10 })).toEqual({ outcome: 'NOT_SCHEDULED', state: TaskState.DONE });
      const { id } = await store.schedule({ kind: 'job', delayMs: 60_000 });
      await store.cancel(id);
      expect(await store.reschedule(id, { delayMs: 10 })).toEqual({ outcome: 'NOT_SCHEDULED', state: TaskState.CANCELLED });
      expect(await store.reschedule('987654321', { delayMs: 10 })).toEqual({ outcome: 'NOT_FOUND' });
    });

    it('validates like schedule: exactly one of dueAt and delayMs, the payload, the id; nothing written', async () => {
      const { store } = h();
      const { id, dueAt } = await store.schedule({ kind: 'job', payload: 'p', delayMs: 60_000 });
      await expectValidationError(() => store.reschedule(id, {}), 'INVALID_DELAY');
      await expectValidationError(() => store.reschedule(id, { delayMs: 1, dueAt: new Date() }), 'INVALID_DELAY');
      await expectValidationError(() => store.reschedule(id, { delayMs: -1 }), 'INVALID_DELAY', 'delayMs');
      await expectValidationError(() => store.reschedule(id, { dueAt: new Date(Number.NaN) }), 'INVALID_RUN_AT', 'dueAt');
      await expectValidationError(() => store.reschedule(id, { delayMs: 1, payload: { f: () => 1 } }), 'INVALID_PAYLOAD');
      await expectValidationError(() => store.reschedule(id, { delayMs: 1, payload: 2 ** 60 }), 'UNSAFE_INTEGER');
      await expectValidationError(() => store.reschedule(id, { delayMs: 1, nope: 1 } as never), 'INVALID_OPTION');
      await expectValidationError(() => store.reschedule('-1', { delayMs: 1 }), 'INVALID_TASK_ID');
      expect(await mustGetTask(store, id)).toMatchObject({ dueAt, payload: 'p' });
    });
  });
}
