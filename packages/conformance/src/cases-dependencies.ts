/**
 * Dependencies (docs/contract.md#dependencies): a task scheduled with `after` is held (never
 * claimed, `waitingFor` in getTask, its own due time kept) until every dependency is terminal, then
 * due at the later of its own due time and the last finish; `'cancel'` edges cancel (and cascade)
 * when a dependency ends DEAD or CANCELLED; an unknown id writes nothing.
 */
import { TaskState, ValidationError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError, claimExactly, expectValidationError, LEASE_MS, mustGetTask, scheduleAndClaim } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function dependencyCases(h: HarnessRef): void {
  describe('dependencies', () => {
    it('a chain scheduled in one call runs in order: each task is held until the one before it is terminal', async () => {
      const { store } = h();
      const [a, b, c] = await store.scheduleMany([{ kind: 'a' }, { kind: 'b', after: [{ index: 0 }] }, { kind: 'c', after: [{ index: 1 }] }]);
      if (a === undefined || b === undefined || c === undefined) throw new Error('three tasks expected');
      expect(await mustGetTask(store, b.id)).toMatchObject({ state: TaskState.SCHEDULED, waitingFor: 1, dueAt: b.dueAt });
      const ca = await claimExactly(store, a.id);
      expect(await store.claim({ owner: 'w2', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      expect(await store.complete({ id: a.id, attempt: ca.attempt, owner: 'w1' })).toBe('DONE');
      const b1 = await mustGetTask(store, b.id);
      expect(b1.waitingFor).toBeUndefined();
      expect(b1.dueAt.getTime()).toBeLessThanOrEqual((await store.now()).getTime());
      expect((await mustGetTask(store, c.id)).waitingFor).toBe(1);
      const cb = await claimExactly(store, b.id);
      expect(await store.complete({ id: b.id, attempt: cb.attempt, owner: 'w1', keep: false })).toBe('DONE');
      const cc = await claimExactly(store, c.id);
      expect(await store.complete({ id: c.id, attempt: cc.attempt, owner: 'w1' })).toBe('DONE');
    });

    it('fan-in: released only when the last dependency finishes, at max(own due time, last finish)', async () => {
      const { store, clock } = h();
      const x = await store.schedule({ kind: 'x' });
      const y = await store.schedule({ kind: 'y', delayMs: 1_000 });
      const d = await store.schedule({ kind: 'd', delayMs: 500, after: [x.id, y.id] });
      expect((await mustGetTask(store, d.id)).waitingFor).toBe(2);
      const cx = await claimExactly(store, x.id);
      expect(await store.complete({ id: x.id, attempt: cx.attempt, owner: 'w1' })).toBe('DONE');
      expect((await mustGetTask(store, d.id)).waitingFor).toBe(1);
      clock.tick(2_000);
      const cy = await claimExactly(store, y.id);
      expect(await store.fail({ id: y.id, attempt: cy.attempt, error: 'boom', backoffMs: 0, retryable: false })).toEqual({ outcome: 'DEAD' });
      // 'run' (default): a DEAD dependency counts as finished; own due time passed, so due at the finish.
      const released = await mustGetTask(store, d.id);
      expect(released.waitingFor).toBeUndefined();
      expect(released.dueAt.getTime()).toBe((await store.now()).getTime());
      await claimExactly(store, d.id);
    });

    it("'cancel' edges: a dependency ending DEAD or CANCELLED cancels the dependent with a reason, and the cancellation cascades", async () => {
      const { store } = h();
      const [x, run, stop, next, tail] = await store.scheduleMany([
        { kind: 'x' },
        { kind: 'run', after: [{ index: 0 }] },
        { kind: 'stop', after: [{ index: 0, onFailure: 'cancel' }] },
        { kind: 'next', after: [{ index: 2, onFailure: 'cancel' }] },
        { kind: 'tail', after: [{ index: 3 }] },
      ]);
      if (x === undefined || run === undefined || stop === undefined || next === undefined || tail === undefined) throw new Error('five tasks expected');
      expect(await store.cancel(x.id)).toBe('CANCELLED');
      expect(await mustGetTask(store, stop.id)).toMatchObject({ state: TaskState.CANCELLED, lastError: `dependency ${x.id} ended CANCELLED`, dueAt: stop.dueAt });
      expect(await mustGetTask(store, next.id)).toMatchObject({ state: TaskState.CANCELLED, lastError: `dependency ${stop.id} ended CANCELLED` });
      // 'run' edges release: the dependent of x, and the tail whose dependency was cancelled by the cascade.
      const claimed = await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS });
      expect(claimed.map((c) => c.id).sort()).toEqual([run.id, tail.id].sort());
    });

    it('dependencies already terminal: due at once; a DEAD one on a cancel edge cancels the new task at schedule', async () => {
      const { store } = h();
      const done = await scheduleAndClaim(store, { kind: 'done' });
      expect(await store.complete({ id: done.id, attempt: done.attempt, owner: 'w1' })).toBe('DONE');
      const dead = await scheduleAndClaim(store, { kind: 'dead', maxAttempts: 1 });
      expect(await store.fail({ id: dead.id, attempt: dead.attempt, error: 'x', backoffMs: 0, retryable: true })).toEqual({ outcome: 'DEAD' });
      const a = await store.schedule({ kind: 'a', after: [done.id, { id: dead.id }] });
      expect((await mustGetTask(store, a.id)).waitingFor).toBeUndefined();
      await claimExactly(store, a.id);
      const b = await store.schedule({ kind: 'b', after: [done.id, { id: dead.id, onFailure: 'cancel' }] });
      expect(await mustGetTask(store, b.id)).toMatchObject({ state: TaskState.CANCELLED, lastError: `dependency ${dead.id} ended DEAD` });
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
    });

    it('a held task keeps its own due time: cancelled while it waits (history), rescheduled while it waits (still held)', async () => {
      const { store, clock } = h();
      const x = await store.schedule({ kind: 'x' });
      const [y, z, w] = await store.scheduleMany([
        { kind: 'y', delayMs: 5_000, after: [x.id] },
        { kind: 'z', after: [x.id] },
        { kind: 'w', after: [x.id] },
      ]);
      if (y === undefined || z === undefined || w === undefined) throw new Error('three tasks expected');
      expect(await store.cancel(y.id)).toBe('CANCELLED');
      expect(await mustGetTask(store, y.id)).toMatchObject({ state: TaskState.CANCELLED, dueAt: y.dueAt });
      const r = await store.reschedule(z.id, { delayMs: 3_000 });
      if (r.outcome !== 'RESCHEDULED') throw new Error(`reschedule: ${r.outcome}`);
      expect(r.dueAt.getTime()).toBe((await store.now()).getTime() + 3_000);
      expect(await mustGetTask(store, z.id)).toMatchObject({ state: TaskState.SCHEDULED, waitingFor: 1, dueAt: r.dueAt });
      expect(await store.rescheduleMany({ ids: [w.id] }, { delayMs: 4_000 })).toMatchObject({ counts: { RESCHEDULED: 1 } });
      const wHeld = await mustGetTask(store, w.id);
      expect(wHeld.waitingFor).toBe(1);
      expect(wHeld.dueAt.getTime()).toBe((await store.now()).getTime() + 4_000);
      // Still held: only x is claimed; its finish releases z and w at their own (later) due times.
      const cx = await claimExactly(store, x.id);
      expect(await store.complete({ id: x.id, attempt: cx.attempt, owner: 'w1' })).toBe('DONE');
      expect((await mustGetTask(store, z.id)).dueAt).toEqual(r.dueAt);
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
      clock.tick(3_000);
      await claimExactly(store, z.id);
      clock.tick(1_000);
      await claimExactly(store, w.id);
    });

    it('an unknown dependency id writes nothing (DEPENDENCY_NOT_FOUND); malformed after is INVALID_DEPENDENCY', async () => {
      const { store } = h();
      const x = await store.schedule({ kind: 'x' });
      const before = await store.countByState();
      const error = await captureError(() => store.scheduleMany([{ kind: 'a' }, { kind: 'b', after: [{ index: 0 }, '987654321'] }]));
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ code: 'DEPENDENCY_NOT_FOUND', field: 'tasks[1].after[1]' });
      expect(await store.countByState()).toEqual(before);
      await expectValidationError(() => store.schedule({ kind: 'a', after: [{ index: 0 }] }), 'INVALID_DEPENDENCY', 'after[0].index');
      await expectValidationError(() => store.scheduleMany([{ kind: 'a', after: [{ index: 0 }] }]), 'INVALID_DEPENDENCY', 'tasks[0].after[0].index');
      await expectValidationError(() => store.schedule({ kind: 'a', key: 'k', after: [x.id] }), 'INVALID_DEPENDENCY', 'after');
      await expectValidationError(() => store.schedule({ kind: 'a', after: [x.id, x.id] }), 'INVALID_DEPENDENCY', 'after[1]');
      await expectValidationError(() => store.schedule({ kind: 'a', after: [{ id: x.id, onFailure: 'skip' }] as never }), 'INVALID_DEPENDENCY', 'after[0].onFailure');
      await expectValidationError(() => store.schedule({ kind: 'a', after: 'x' as never }), 'INVALID_DEPENDENCY', 'after');
      expect(await store.countByState()).toEqual(before);
    });
  });
}
