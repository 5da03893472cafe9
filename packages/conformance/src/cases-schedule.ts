/**
 * schedule / scheduleMany: the SCHEDULED row, due time from the store clock, runAt, batch order,
 * all-or-nothing batches, and the caller's transaction (docs/contract.md#transitions, schedule).
 */
import { DEFAULT_MAX_ATTEMPTS, parseTaskId, TaskState, type TaskId, ValidationError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError, mustGetTask, stateCounts } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function scheduleCases(h: HarnessRef): void {
  describe('schedule', () => {
    it('inserts a SCHEDULED row due at store now + delayMs, with defaults', async () => {
      const { store, clock } = h();
      const now = clock.now();
      const scheduled = await store.schedule({ kind: 'close-reservation', payload: { reservation: 42 }, delayMs: 1_800_000 });
      expect(parseTaskId(scheduled.id)).toBe(scheduled.id);
      expect(scheduled.dueAt).toEqual(new Date(now + 1_800_000));
      expect(await store.getTask(scheduled.id)).toEqual({
        id: scheduled.id,
        kind: 'close-reservation',
        key: null,
        queue: 'default',
        priority: 0,
        payload: { reservation: 42 },
        state: TaskState.SCHEDULED,
        dueAt: new Date(now + 1_800_000),
        attempt: 0,
        failures: 0,
        maxAttempts: DEFAULT_MAX_ATTEMPTS,
        leaseOwner: null,
        leaseUntil: null,
        cancelRequested: false,
        result: null,
        lastError: null,
        createdAt: new Date(now),
        updatedAt: new Date(now),
      });
    });

    it('defaults: no delay means due now, no payload means null', async () => {
      const { store, clock } = h();
      const { id, dueAt } = await store.schedule({ kind: 'k' });
      expect(dueAt).toEqual(new Date(clock.now()));
      const task = await mustGetTask(store, id);
      expect(task.payload).toBeNull();
      expect(task.dueAt).toEqual(new Date(clock.now()));
    });

    it('honours runAt as the due time', async () => {
      const { store, clock } = h();
      const runAt = new Date(clock.now() + 5_000);
      const { id, dueAt } = await store.schedule({ kind: 'k', runAt, maxAttempts: 7 });
      expect(dueAt).toEqual(runAt);
      const task = await mustGetTask(store, id);
      expect(task.dueAt).toEqual(runAt);
      expect(task.maxAttempts).toBe(7);
      clock.tick(4_999);
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 })).toEqual([]);
      clock.tick(1);
      expect((await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 })).map((c) => c.id)).toEqual([id]);
    });

    it('a runAt in the past is due at once', async () => {
      const { store, clock } = h();
      const runAt = new Date(clock.now() - 60_000);
      const { id, dueAt } = await store.schedule({ kind: 'k', runAt });
      expect(dueAt.getTime()).toBeLessThanOrEqual(clock.now());
      expect((await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 })).map((c) => c.id)).toEqual([id]);
    });

    it('round-trips a JSON payload', async () => {
      const { store } = h();
      const payload = { a: 1, b: [true, null, 'x', 1.5, -3], nested: { s: 'ü 😀 "quoted" \\ \n' }, empty: {}, list: [] };
      const { id } = await store.schedule({ kind: 'k', payload });
      expect((await mustGetTask(store, id)).payload).toEqual(payload);
    });

    it('gives distinct ids', async () => {
      const { store } = h();
      const ids = new Set<TaskId>();
      for (let i = 0; i < 5; i++) ids.add((await store.schedule({ kind: 'k' })).id);
      expect(ids.size).toBe(5);
    });
  });

  describe('scheduleMany', () => {
    it('returns ids and due times in input order', async () => {
      const { store, clock } = h();
      const now = clock.now();
      const inputs = [
        { kind: 'a', delayMs: 300, payload: { n: 0 } },
        { kind: 'b', delayMs: 100, payload: { n: 1 } },
        { kind: 'c', runAt: new Date(now + 200), payload: { n: 2 }, maxAttempts: 2 },
      ];
      const out = await store.scheduleMany(inputs);
      expect(out.map((s) => s.dueAt)).toEqual([new Date(now + 300), new Date(now + 100), new Date(now + 200)]);
      expect(new Set(out.map((s) => s.id)).size).toBe(3);
      for (const [i, s] of out.entries()) {
        const task = await mustGetTask(store, s.id);
        expect(task).toMatchObject({ kind: inputs[i]?.kind, payload: inputs[i]?.payload, state: TaskState.SCHEDULED, dueAt: s.dueAt });
      }
      expect((await mustGetTask(store, out[2]!.id)).maxAttempts).toBe(2);
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 3 }));
    });

    it('an empty batch inserts nothing', async () => {
      const { store } = h();
      expect(await store.scheduleMany([])).toEqual([]);
      expect(await store.countByState()).toEqual(stateCounts());
    });

    it('is all-or-nothing: one bad input inserts none', async () => {
      const { store } = h();
      await store.schedule({ kind: 'before' });
      const error = await captureError(() =>
        store.scheduleMany([{ kind: 'ok' }, { kind: 'bad', delayMs: -1 }, { kind: 'ok-too' }]),
      );
      expect(ValidationError.isInstance(error)).toBe(true);
      expect((error as ValidationError).code).toBe('INVALID_DELAY');
      expect((error as ValidationError).field).toBe('tasks[1].delayMs');
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
    });
  });

  describe('schedule in the caller transaction', () => {
    /** One schedule and a scheduleMany of two, plus the caller's own marker, in one transaction ended by `end`. */
    async function scheduleThreeIn(end: 'commit' | 'rollback'): Promise<TaskId[]> {
      const { store } = h();
      const ids: TaskId[] = [];
      await h().inTransaction(async (tx) => {
        const { id } = await store.schedule({ kind: 'k' }, { tx });
        ids.push(id, ...(await store.scheduleMany([{ kind: 'm1' }, { kind: 'm2' }], { tx })).map((s) => s.id));
        await h().writeMarker(tx, id);
      }, end);
      return ids;
    }

    it('rollback leaves no task and no marker', async () => {
      const { store } = h();
      const ids = await scheduleThreeIn('rollback');
      expect(ids).toHaveLength(3);
      for (const id of ids) expect(await store.getTask(id)).toBeNull();
      expect(await h().readMarker(ids[0]!)).toBe(false);
      expect(await store.countByState()).toEqual(stateCounts());
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 })).toEqual([]);
    });

    it('commit keeps the tasks together with the caller writes', async () => {
      const { store } = h();
      const ids = await scheduleThreeIn('commit');
      expect(new Set(ids).size).toBe(3);
      for (const id of ids) expect((await mustGetTask(store, id)).state).toBe(TaskState.SCHEDULED);
      expect(await h().readMarker(ids[0]!)).toBe(true);
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 3 }));
    });
  });
}
