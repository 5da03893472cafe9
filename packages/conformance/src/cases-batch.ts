/**
 * Batches with a callback (docs/contract.md#batches): a sealed batch whose members are all terminal
 * schedules ONE callback task with the counts of DONE, DEAD and CANCELLED members, whichever way the
 * members finished (complete kept or not, completeMany, fail, cancel, an expired lease's last
 * attempt) and whether the seal comes before or after the last finish; typed errors, nothing written.
 */
import { BatchError, type BatchStore, type Store, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError, claimExactly, expectValidationError, LEASE_MS, mustGetTask } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

type BatchingStore = Store<any> & BatchStore;

export function batchCases(h: HarnessRef): void {
  const store = (): BatchingStore => h().store as BatchingStore;

  describe('batches', () => {
    it('members scheduled with after wait for their dependencies; a cancelled dependency cancels its member, counted by the batch', async () => {
      // A fresh user's attempt: on PostgreSQL scheduleInBatch inserted members without their `after` (due at once, unknown ids accepted).
      const s = store();
      const { id: dep } = await s.schedule({ kind: 'dep', delayMs: 3_600_000 });
      const id = await s.createBatch({ callback: { kind: 'cb-after' } });
      const [m] = await s.scheduleInBatch(id, [{ kind: 'held-member', after: [{ id: dep, onFailure: 'cancel' }] }]);
      expect((await mustGetTask(s, m?.id as string)).waitingFor).toBe(1);
      expect(await s.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS, kinds: ['held-member'] })).toEqual([]);
      const unknown = await captureError(() => s.scheduleInBatch(id, [{ kind: 'held-member', after: ['999999999'] }]));
      expect(unknown).toMatchObject({ code: 'DEPENDENCY_NOT_FOUND' });
      expect(await s.getBatch(id)).toMatchObject({ total: 1, remaining: 1 });
      expect(await s.cancel(dep)).toBe('CANCELLED');
      expect(await mustGetTask(s, m?.id as string)).toMatchObject({ state: TaskState.CANCELLED, lastError: `dependency ${dep} ended CANCELLED` });
      await s.sealBatch(id);
      expect(await s.getBatch(id)).toMatchObject({ state: 'CALLED_BACK', total: 1, remaining: 0, cancelled: 1 });
    });

    it('members added in two calls, finished every way; the callback once, at the last finish after the seal, with the counts', async () => {
      const s = store();
      const id = await s.createBatch({ callback: { kind: 'report', payload: { to: 'ops' }, queue: 'cb', priority: 3, maxAttempts: 2 } });
      expect(await s.getBatch(id)).toMatchObject({ id, state: 'OPEN', total: 0, remaining: 0, callbackTaskId: null, sealedAt: null });
      const first = await s.scheduleInBatch(id, [{ kind: 'm', payload: 1 }, { kind: 'm', payload: 2 }, { kind: 'm', payload: 3 }]);
      const second = await s.scheduleInBatch(id, [{ kind: 'm', payload: 4 }, { kind: 'm', payload: 5, delayMs: 60_000 }, { kind: 'm', payload: 6 }]);
      expect([...first, ...second].every((t) => t.created)).toBe(true);
      expect(await s.getBatch(id)).toMatchObject({ total: 6, remaining: 6 });
      // A task outside the batch finishing changes nothing.
      const { id: outside } = await s.schedule({ kind: 'other' });
      const [o] = await s.claim({ owner: 'w1', limit: 1, leaseMs: LEASE_MS, kinds: ['other'] });
      expect(o?.id).toBe(outside);
      if (o === undefined) return;
      expect(await s.complete({ id: outside, attempt: o.attempt, owner: 'w1' })).toBe('DONE');
      // 1 complete (kept), 2 complete (not kept), 3 fail → DEAD, 5 cancelled while SCHEDULED.
      const claimed = await s.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS, kinds: ['m'] });
      expect(claimed.map((c) => c.payload).sort()).toEqual([1, 2, 3, 4, 6]);
      const by = (p: number) => claimed.find((c) => c.payload === p) as (typeof claimed)[number];
      expect(await s.complete({ id: by(1).id, attempt: by(1).attempt, owner: 'w1', result: 'ok' })).toBe('DONE');
      expect(await s.complete({ id: by(2).id, attempt: by(2).attempt, owner: 'w1', keep: false })).toBe('DONE');
      expect(await s.fail({ id: by(3).id, attempt: by(3).attempt, error: 'bad', backoffMs: 0, retryable: false })).toEqual({ outcome: 'DEAD' });
      expect(await s.cancel(second[1]?.id as string)).toBe('CANCELLED');
      expect(await s.getBatch(id)).toMatchObject({ state: 'OPEN', total: 6, remaining: 2, done: 2, dead: 1, cancelled: 1 });
      const sealed = await s.sealBatch(id);
      expect(sealed).toMatchObject({ state: 'SEALED', remaining: 2, callbackTaskId: null });
      expect(sealed.sealedAt).toBeInstanceOf(Date);
      // Adding after the seal is refused, nothing written.
      const refused = await captureError(() => s.scheduleInBatch(id, [{ kind: 'late' }]));
      expect(refused).toBeInstanceOf(BatchError);
      expect(refused).toMatchObject({ code: 'BATCH_SEALED', batchId: id });
      expect(await s.claim({ owner: 'w9', limit: 10, leaseMs: LEASE_MS, kinds: ['late'] })).toEqual([]);
      // The last two finish in one completeMany: one callback.
      expect(await s.completeMany([{ id: by(4).id, attempt: by(4).attempt, owner: 'w1' }, { id: by(6).id, attempt: by(6).attempt, owner: 'w1', keep: false }])).toEqual(['DONE', 'DONE']);
      const done = await s.getBatch(id);
      expect(done).toMatchObject({ state: 'CALLED_BACK', total: 6, remaining: 0, done: 4, dead: 1, cancelled: 1 });
      const cb = await mustGetTask(s, done?.callbackTaskId as string);
      expect(cb).toMatchObject({ kind: 'report', queue: 'cb', priority: 3, maxAttempts: 2, state: TaskState.SCHEDULED });
      expect(cb.payload).toEqual({ to: 'ops', batch: { id, total: 6, done: 4, dead: 1, cancelled: 1 } });
      // Sealing again changes nothing and schedules no second callback.
      expect(await s.sealBatch(id)).toMatchObject({ state: 'CALLED_BACK', callbackTaskId: cb.id });
      expect((await s.claim({ owner: 'w2', limit: 10, leaseMs: LEASE_MS, kinds: ['report'], queue: 'cb' })).length).toBeLessThanOrEqual(1);
    });

    it('sealing a batch whose members already finished calls back at the seal; an empty batch calls back at once with zero counts', async () => {
      const s = store();
      const id = await s.createBatch({ callback: { kind: 'after' } });
      const [t] = await s.scheduleInBatch(id, [{ kind: 'm2' }]);
      const c = await claimExactly(s, t?.id as string);
      // The only member ends DEAD before the seal.
      expect(await s.fail({ id: c.id, attempt: c.attempt, error: 'x', backoffMs: 0, retryable: false })).toEqual({ outcome: 'DEAD' });
      expect(await s.getBatch(id)).toMatchObject({ state: 'OPEN', remaining: 0, dead: 1, callbackTaskId: null });
      const sealed = await s.sealBatch(id);
      expect(sealed).toMatchObject({ state: 'CALLED_BACK', total: 1, dead: 1 });
      expect((await mustGetTask(s, sealed.callbackTaskId as string)).payload).toEqual({ batch: { id, total: 1, done: 0, dead: 1, cancelled: 0 } });

      const empty = await s.createBatch({ callback: { kind: 'after', payload: { batch: 'replaced' } } });
      const e = await s.sealBatch(empty);
      expect(e).toMatchObject({ state: 'CALLED_BACK', total: 0, remaining: 0, done: 0, dead: 0, cancelled: 0 });
      expect((await mustGetTask(s, e.callbackTaskId as string)).payload).toEqual({ batch: { id: empty, total: 0, done: 0, dead: 0, cancelled: 0 } });
    });

    it('an expired lease of the last attempt counts the member DEAD', async () => {
      const { clock } = h();
      const s = store();
      const id = await s.createBatch({ callback: { kind: 'after' } });
      await s.scheduleInBatch(id, [{ kind: 'm3', maxAttempts: 1 }]);
      await s.sealBatch(id);
      await s.claim({ owner: 'w1', limit: 1, leaseMs: LEASE_MS, kinds: ['m3'] });
      clock.tick(LEASE_MS + 1);
      await s.reclaimExpired();
      expect(await s.getBatch(id)).toMatchObject({ state: 'CALLED_BACK', dead: 1, remaining: 0 });
    });

    it('a dedup key a live task holds does not join; unknown batches and bad input are refused typed, nothing written', async () => {
      const s = store();
      const { id: holder } = await s.schedule({ kind: 'k', key: 'one', delayMs: 60_000 });
      const id = await s.createBatch({ callback: { kind: 'after' } });
      const scheduled = await s.scheduleInBatch(id, [{ kind: 'k', key: 'one' }, { kind: 'k', key: 'two', delayMs: 60_000 }]);
      expect(scheduled.map((t) => [t.id === holder, t.created])).toEqual([
        [true, false],
        [false, true],
      ]);
      expect(await s.getBatch(id)).toMatchObject({ total: 1, remaining: 1 });
      // The holder finishing does not count for the batch.
      expect(await s.cancel(holder)).toBe('CANCELLED');
      expect(await s.getBatch(id)).toMatchObject({ remaining: 1, cancelled: 0 });
      expect(await s.getBatch('987654321')).toBeNull();
      expect(await captureError(() => s.scheduleInBatch('987654321', [{ kind: 'x' }]))).toMatchObject({ code: 'BATCH_NOT_FOUND' });
      expect(await captureError(() => s.sealBatch('987654321'))).toMatchObject({ code: 'BATCH_NOT_FOUND' });
      await expectValidationError(() => s.createBatch({ callback: { kind: '' } }), 'INVALID_KIND', 'callback.kind');
      await expectValidationError(() => s.createBatch({ callback: { kind: 'a', payload: [1] as never } }), 'INVALID_PAYLOAD', 'callback.payload');
      await expectValidationError(() => s.createBatch({ callback: { kind: 'a', key: 'k' } as never }), 'INVALID_OPTION', 'callback.key');
      await expectValidationError(() => s.createBatch({} as never), 'INVALID_OPTION', 'callback');
      await expectValidationError(() => s.scheduleInBatch(id, [{ kind: 'ok' }, { kind: 'a', delayMs: -1 }]), 'INVALID_DELAY', 'tasks[1].delayMs');
      await expectValidationError(() => s.getBatch('abc'), 'INVALID_TASK_ID', 'batchId');
      expect(await s.getBatch(id)).toMatchObject({ total: 1 });
    });
  });
}
