/**
 * What the live/history split must not change (docs/contract.md#live-and-history): a task that
 * finishes (DONE, DEAD, CANCELLED) keeps every outcome of the calls made on it afterwards — complete
 * again of the attempt that committed is DONE, a stale attempt is refused, cancel answers TOO_LATE or
 * ALREADY_CANCELLED — `getTask`, `listTasks`, `stats` and `countByState` still find it, `retry()`
 * still takes a DEAD one, its dedup key is free again, and ids keep coming from one sequence.
 */
import { CancelOutcome, CompleteOutcome, TaskState } from '@postpone/core';
import { claimExactly, LEASE_MS, mustGetTask, scheduleAndClaim, stateCounts } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';
import { makeTerminal } from '../kit/fixtures.js';
import { describe, expect, it } from 'vitest';

export function historyCases(h: HarnessRef): void {
  describe('live and history apart', () => {
    it('complete: DONE, then DONE again for that attempt, a stale attempt refused; one completion, getTask finds the DONE row', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store, { kind: 'h-done' });
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', result: { n: 1 } })).toBe(CompleteOutcome.DONE);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', result: { n: 2 } })).toBe(CompleteOutcome.DONE);
      expect(await store.complete({ id: c.id, attempt: c.attempt + 1, owner: 'w1' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.DONE, attempt: 1, result: { n: 1 }, leaseOwner: null, leaseUntil: null });
      expect(await store.getCompletion(c.id)).toMatchObject({ taskId: c.id, attempt: 1, worker: 'w1' });
      expect(await store.countByState()).toEqual(stateCounts({ DONE: 1 }));
    });

    it('getCompletion: the attempt and worker of the DONE (a reclaimed task: the later attempt), finishedAt = updatedAt; null for live, DEAD and CANCELLED tasks', async () => {
      const { store, clock } = h();
      const first = await scheduleAndClaim(store, { kind: 'h-completion' }, 'w-lost', 1_000);
      expect(await store.getCompletion(first.id)).toBeNull();
      clock.tick(1_001);
      expect(await store.reclaimExpired()).toMatchObject([{ id: first.id, outcome: 'SCHEDULED' }]);
      const second = await claimExactly(store, first.id, 'w-second');
      clock.tick(5);
      expect(await store.complete({ id: first.id, attempt: first.attempt, owner: 'w-lost' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.complete({ id: second.id, attempt: second.attempt, owner: 'w-second' })).toBe(CompleteOutcome.DONE);
      const done = await mustGetTask(store, first.id);
      expect(await store.getCompletion(first.id)).toEqual({ taskId: first.id, attempt: 2, worker: 'w-second', finishedAt: done.updatedAt });
      for (const fixture of ['DEAD', 'CANCELLED_WAITING', 'CANCELLED_RUNNING'] as const) {
        expect(await store.getCompletion((await makeTerminal(store, fixture)).id), fixture).toBeNull();
      }
      expect(await store.getCompletion((await store.schedule({ kind: 'h-completion', delayMs: 60_000 })).id)).toBeNull();
    });

    it('completeMany: DONE for each, DONE again in a second batch, stale items refused; one completion per task', async () => {
      const { store } = h();
      await store.scheduleMany([{ kind: 'h-many' }, { kind: 'h-many' }]);
      const claimed = await store.claim({ owner: 'w1', limit: 2, leaseMs: LEASE_MS });
      expect(claimed).toHaveLength(2);
      const items = claimed.map((t) => ({ id: t.id, attempt: t.attempt, owner: 'w1', result: t.id }));
      expect(await store.completeMany(items)).toEqual([CompleteOutcome.DONE, CompleteOutcome.DONE]);
      expect(await store.completeMany(items)).toEqual([CompleteOutcome.DONE, CompleteOutcome.DONE]);
      expect(await store.completeMany([{ id: items[0]!.id, attempt: 7, owner: 'w1' }])).toEqual([CompleteOutcome.REJECTED_STALE]);
      for (const t of claimed) {
        expect(await mustGetTask(store, t.id)).toMatchObject({ state: TaskState.DONE, result: t.id });
        expect(await store.getCompletion(t.id)).toMatchObject({ taskId: t.id, attempt: t.attempt });
      }
      expect(await store.countByState()).toEqual(stateCounts({ DONE: 2 }));
    });

    it('fail: with attempts left the task stays live (SCHEDULED); the last failure makes it DEAD, found by getTask; a later fail is stale', async () => {
      const { store, clock } = h();
      const first = await scheduleAndClaim(store, { kind: 'h-fail', maxAttempts: 2 });
      expect(await store.fail({ id: first.id, attempt: first.attempt, error: 'one', backoffMs: 100 })).toMatchObject({ outcome: 'SCHEDULED' });
      expect(await mustGetTask(store, first.id)).toMatchObject({ state: TaskState.SCHEDULED, failures: 1, lastError: 'one' });
      clock.tick(100);
      const second = await claimExactly(store, first.id);
      expect(await store.fail({ id: second.id, attempt: second.attempt, error: 'two', backoffMs: 100 })).toEqual({ outcome: 'DEAD' });
      expect(await mustGetTask(store, first.id)).toMatchObject({ state: TaskState.DEAD, failures: 2, attempt: 2, lastError: 'two', leaseOwner: null });
      expect(await store.fail({ id: second.id, attempt: second.attempt, error: 'three', backoffMs: 100 })).toEqual({ outcome: 'REJECTED_STALE' });
      expect(await store.complete({ id: second.id, attempt: second.attempt, owner: 'w1' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.getCompletion(first.id)).toBeNull();
    });

    it('an expired lease reclaimed at the last attempt makes the task DEAD; getTask finds it, its late complete is stale', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { kind: 'h-reclaim', maxAttempts: 1 });
      clock.tick(LEASE_MS + 1);
      expect(await store.reclaimExpired()).toEqual([{ id: c.id, attempt: c.attempt, outcome: 'DEAD' }]);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.DEAD, failures: 1, leaseOwner: null, leaseUntil: null });
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.reclaimExpired()).toEqual([]);
    });

    it("cancel's five outcomes across the move: CANCELLED, REQUESTED, ALREADY_CANCELLED, TOO_LATE (DONE and DEAD), NOT_FOUND", async () => {
      const { store } = h();
      const waiting = await store.schedule({ kind: 'h-cancel', delayMs: 60_000 });
      expect(await store.cancel(waiting.id)).toBe(CancelOutcome.CANCELLED);
      expect(await store.cancel(waiting.id)).toBe(CancelOutcome.ALREADY_CANCELLED);
      expect(await mustGetTask(store, waiting.id)).toMatchObject({ state: TaskState.CANCELLED, attempt: 0 });
      const running = await scheduleAndClaim(store, { kind: 'h-cancel' });
      expect(await store.cancel(running.id)).toBe(CancelOutcome.REQUESTED);
      expect(await mustGetTask(store, running.id)).toMatchObject({ state: TaskState.CLAIMED, cancelRequested: true });
      expect(await store.complete({ id: running.id, attempt: running.attempt, owner: 'w1' })).toBe(CompleteOutcome.CANCELLED_BEFORE_COMMIT);
      // Complete again of that attempt: the same outcome, now read from history.
      expect(await store.complete({ id: running.id, attempt: running.attempt, owner: 'w1' })).toBe(CompleteOutcome.CANCELLED_BEFORE_COMMIT);
      expect(await store.cancel(running.id)).toBe(CancelOutcome.ALREADY_CANCELLED);
      expect(await store.getCompletion(running.id)).toBeNull();
      const done = await makeTerminal(store, 'DONE');
      const dead = await makeTerminal(store, 'DEAD');
      expect(await store.cancel(done.id)).toBe(CancelOutcome.TOO_LATE);
      expect(await store.cancel(dead.id)).toBe(CancelOutcome.TOO_LATE);
      expect(await store.cancel('999999999')).toBe(CancelOutcome.NOT_FOUND);
      expect(await store.countByState()).toEqual(stateCounts({ CANCELLED: 2, DONE: 1, DEAD: 1 }));
    });

    it('a running task cancelled, then its lease reclaimed, is CANCELLED; a release or snooze of a cancel-requested task cancels it', async () => {
      const { store, clock } = h();
      const lapsed = await scheduleAndClaim(store, { kind: 'h-lapse' });
      expect(await store.cancel(lapsed.id)).toBe(CancelOutcome.REQUESTED);
      clock.tick(LEASE_MS + 1);
      expect(await store.reclaimExpired()).toEqual([{ id: lapsed.id, attempt: lapsed.attempt, outcome: 'CANCELLED' }]);
      const released = await scheduleAndClaim(store, { kind: 'h-release' });
      expect(await store.cancel(released.id)).toBe(CancelOutcome.REQUESTED);
      expect(await store.release({ id: released.id, attempt: released.attempt })).toBe('CANCELLED');
      const snoozed = await scheduleAndClaim(store, { kind: 'h-snooze' });
      expect(await store.cancel(snoozed.id)).toBe(CancelOutcome.REQUESTED);
      expect(await store.snooze({ id: snoozed.id, attempt: snoozed.attempt, delayMs: 1_000 })).toEqual({ outcome: 'CANCELLED' });
      for (const id of [lapsed.id, released.id, snoozed.id]) {
        expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.CANCELLED, leaseOwner: null, leaseUntil: null });
        expect(await store.cancel(id)).toBe(CancelOutcome.ALREADY_CANCELLED);
      }
    });

    it('retry() of a DEAD task makes a new live task with a new id; listTasks and stats read the finished ones', async () => {
      const { store } = h();
      const dead = await makeTerminal(store, 'DEAD');
      const done = await makeTerminal(store, 'DONE');
      const retried = await store.retry({ id: dead.id });
      expect(retried.outcome).toBe('RETRIED');
      const newId = (retried as { id: string }).id;
      expect(BigInt(newId) > BigInt(done.id)).toBe(true);
      expect(await store.retry({ id: dead.id })).toEqual({ outcome: 'ALREADY_RETRIED', id: newId });
      expect(await store.retry({ id: done.id })).toEqual({ outcome: 'NOT_RETRYABLE', state: TaskState.DONE });
      expect(await mustGetTask(store, newId)).toMatchObject({ state: TaskState.SCHEDULED, kind: dead.kind, attempt: 0 });
      const page = await store.listTasks({ states: [TaskState.DEAD, TaskState.DONE, TaskState.SCHEDULED], order: 'oldest' });
      expect(page.tasks.map((t) => [t.id, t.state, t.retriedAs, t.retryOf])).toEqual([
        [dead.id, TaskState.DEAD, newId, null],
        [done.id, TaskState.DONE, null, null],
        [newId, TaskState.SCHEDULED, null, dead.id],
      ]);
      expect((await store.listTasks({ kinds: [dead.kind] })).tasks.map((t) => t.id)).toEqual([newId, dead.id]);
      const stats = await store.stats();
      expect(stats).toMatchObject({ scheduled: 1, dead: 1, claimed: 0 });
    });

    it('a dedup key is free once its task is finished; ids keep rising from one sequence', async () => {
      const { store } = h();
      const first = await store.schedule({ kind: 'h-key', key: 'k1' });
      expect(await store.schedule({ kind: 'h-key', key: 'k1' })).toMatchObject({ id: first.id, created: false });
      const c = await claimExactly(store, first.id);
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.DONE);
      const second = await store.schedule({ kind: 'h-key', key: 'k1' });
      expect(second.created).toBe(true);
      expect(BigInt(second.id) > BigInt(first.id)).toBe(true);
      expect(await store.cancel(second.id)).toBe(CancelOutcome.CANCELLED);
      const third = await store.schedule({ kind: 'h-key', key: 'k1' });
      expect(third.created).toBe(true);
      expect(BigInt(third.id) > BigInt(second.id)).toBe(true);
      expect(await mustGetTask(store, first.id)).toMatchObject({ state: TaskState.DONE, key: 'k1' });
      expect(await mustGetTask(store, second.id)).toMatchObject({ state: TaskState.CANCELLED, key: 'k1' });
      expect(await mustGetTask(store, third.id)).toMatchObject({ state: TaskState.SCHEDULED, key: 'k1' });
    });
  });
}
