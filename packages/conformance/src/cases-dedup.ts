/**
 * Dedup keys (docs/contract.md#dedup-keys): at most one SCHEDULED or CLAIMED task per (kind, key);
 * `onConflict` keep / replace / fail; the key is free again once its task is terminal.
 */
import { DuplicateKeyError, PostponeError, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError, claimExactly, expectValidationError, LEASE_MS, mustGetTask, stateCounts } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function dedupCases(h: HarnessRef): void {
  describe('dedup keys', () => {
    const close42 = { kind: 'close-reservation', key: 'reservation-42', payload: { reservation: 42 }, delayMs: 1_800_000 } as const;

    it('keep (default): a second schedule of the key returns the first task, created: false, unchanged', async () => {
      const { store, clock } = h();
      const first = await store.schedule(close42);
      expect(first).toEqual({ id: first.id, dueAt: new Date(clock.now() + 1_800_000), created: true, replaced: false });
      clock.tick(1_000);
      const second = await store.schedule({ ...close42, payload: { reservation: 43 }, delayMs: 5 });
      expect(second).toEqual({ id: first.id, dueAt: first.dueAt, created: false, replaced: false });
      expect(await store.schedule({ ...close42 }, { onConflict: 'keep' })).toEqual(second);
      const task = await mustGetTask(store, first.id);
      expect(task).toMatchObject({ key: 'reservation-42', payload: { reservation: 42 }, dueAt: first.dueAt, state: TaskState.SCHEDULED });
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
    });

    it('replace: a SCHEDULED holder gets the new payload and due time, same id', async () => {
      const { store, clock } = h();
      const first = await store.schedule(close42);
      clock.tick(1_000);
      const second = await store.schedule({ ...close42, payload: { reservation: 42, v: 2 }, delayMs: 60_000 }, { onConflict: 'replace' });
      expect(second).toEqual({ id: first.id, dueAt: new Date(clock.now() + 60_000), created: false, replaced: true });
      expect(await mustGetTask(store, first.id)).toMatchObject({ payload: { reservation: 42, v: 2 }, dueAt: second.dueAt, state: TaskState.SCHEDULED, attempt: 0 });
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
    });

    it('replace refused on CLAIMED: the running task is kept unchanged (replaced: false)', async () => {
      const { store } = h();
      const first = await store.schedule({ ...close42, delayMs: 0 });
      await claimExactly(store, first.id);
      const second = await store.schedule({ ...close42, payload: 'new' }, { onConflict: 'replace' });
      expect(second).toEqual({ id: first.id, dueAt: first.dueAt, created: false, replaced: false });
      expect(await mustGetTask(store, first.id)).toMatchObject({ payload: { reservation: 42 }, state: TaskState.CLAIMED, attempt: 1 });
    });

    it('fail: DuplicateKeyError naming the holder; nothing written, the batch neither', async () => {
      const { store } = h();
      const first = await store.schedule(close42);
      const error = await captureError(() => store.schedule(close42, { onConflict: 'fail' }));
      expect(error).toBeInstanceOf(DuplicateKeyError);
      expect(PostponeError.isInstance(error) && error.code).toBe('DUPLICATE_KEY');
      expect(error).toMatchObject({ taskId: first.id, kind: close42.kind, key: close42.key });
      const batch = await captureError(() => store.scheduleMany([{ kind: 'other' }, close42, { kind: 'k', key: 'fresh' }], { onConflict: 'fail' }));
      expect(batch).toMatchObject({ code: 'DUPLICATE_KEY', taskId: first.id });
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
      expect(await store.schedule({ kind: 'k', key: 'fresh' }, { onConflict: 'fail' })).toMatchObject({ created: true });
    });

    it('the key is free again once its task is DONE, CANCELLED or DEAD', async () => {
      const { store } = h();
      const input = { kind: 'k', key: 'once', maxAttempts: 1 } as const;
      const a = await store.schedule(input);
      await store.complete({ id: a.id, attempt: (await claimExactly(store, a.id)).attempt, owner: 'w1' });
      const b = await store.schedule(input, { onConflict: 'fail' });
      expect(b).toMatchObject({ created: true });
      expect(b.id).not.toBe(a.id);
      expect(await store.cancel(b.id)).toBe('CANCELLED');
      const c = await store.schedule(input, { onConflict: 'fail' });
      expect(c.created).toBe(true);
      expect(await store.fail({ id: c.id, attempt: (await claimExactly(store, c.id)).attempt, error: 'x', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
      const d = await store.schedule(input);
      expect(d.created).toBe(true);
      expect(new Set([a.id, b.id, c.id, d.id]).size).toBe(4);
      expect(await store.countByState()).toEqual(stateCounts({ DONE: 1, CANCELLED: 1, DEAD: 1, SCHEDULED: 1 }));
      expect((await mustGetTask(store, a.id)).key).toBe('once');
    });

    it('a CLAIMED task still holds its key; a retry back to SCHEDULED keeps it', async () => {
      const { store } = h();
      const a = await store.schedule({ kind: 'k', key: 'held' });
      const claimed = await claimExactly(store, a.id);
      expect(await store.schedule({ kind: 'k', key: 'held' })).toMatchObject({ id: a.id, created: false });
      await store.fail({ id: a.id, attempt: claimed.attempt, error: 'x', backoffMs: LEASE_MS });
      expect(await store.schedule({ kind: 'k', key: 'held' })).toMatchObject({ id: a.id, created: false });
    });

    it('the same key under different kinds, and tasks without a key, are independent', async () => {
      const { store } = h();
      const out = await store.scheduleMany([
        { kind: 'a', key: 'x' },
        { kind: 'b', key: 'x' },
        { kind: 'a', key: 'y' },
        { kind: 'a' },
        { kind: 'a' },
      ]);
      expect(out.every((s) => s.created && !s.replaced)).toBe(true);
      expect(new Set(out.map((s) => s.id)).size).toBe(5);
      expect((await mustGetTask(store, out[3]!.id)).key).toBeNull();
      const again = await store.scheduleMany([{ kind: 'b', key: 'x' }, { kind: 'c', key: 'x' }, { kind: 'a' }]);
      expect(again.map((s) => s.created)).toEqual([false, true, true]);
      expect(again[0]!.id).toBe(out[1]!.id);
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 7 }));
    });

    it('scheduleMany mixes new and kept tasks in input order; replace reports per input', async () => {
      const { store, clock } = h();
      const held = await store.schedule({ kind: 'k', key: 'one', payload: 1 });
      const out = await store.scheduleMany([{ kind: 'k', key: 'two' }, { kind: 'k', key: 'one', payload: 2, delayMs: 10 }], { onConflict: 'replace' });
      expect(out[0]).toMatchObject({ created: true, replaced: false });
      expect(out[1]).toEqual({ id: held.id, dueAt: new Date(clock.now() + 10), created: false, replaced: true });
      expect((await mustGetTask(store, held.id)).payload).toBe(2);
    });

    it('validation: a bad key, a key repeated in one batch, a bad onConflict; nothing written', async () => {
      const { store } = h();
      await expectValidationError(() => store.schedule({ kind: 'k', key: '' }), 'INVALID_KEY', 'key');
      await expectValidationError(() => store.schedule({ kind: 'k', key: 'x'.repeat(257) }), 'INVALID_KEY', 'key');
      await expectValidationError(() => store.schedule({ kind: 'k', key: 7 as unknown as string }), 'INVALID_KEY', 'key');
      await expectValidationError(() => store.scheduleMany([{ kind: 'k', key: 'a' }, { kind: 'k', key: 'a' }]), 'INVALID_KEY', 'tasks[1].key');
      await expectValidationError(() => store.schedule({ kind: 'k', key: 'a' }, { onConflict: 'skip' as 'keep' }), 'INVALID_OPTION', 'options.onConflict');
      expect(await store.countByState()).toEqual(stateCounts());
      expect(await store.schedule({ kind: 'k', key: 'x'.repeat(256) })).toMatchObject({ created: true });
    });

    it('in the caller transaction: fail leaves the transaction usable; rollback frees the key', async () => {
      const { store } = h();
      const held = await store.schedule({ kind: 'k', key: 'tx' });
      let error: unknown;
      await h().inTransaction(async (tx) => {
        error = await captureError(() => store.schedule({ kind: 'k', key: 'tx' }, { tx, onConflict: 'fail' }));
        expect(await store.schedule({ kind: 'k', key: 'tx' }, { tx })).toMatchObject({ id: held.id, created: false });
        await store.schedule({ kind: 'k', key: 'fresh' }, { tx });
      }, 'rollback');
      expect(error).toMatchObject({ code: 'DUPLICATE_KEY', taskId: held.id });
      expect(await store.schedule({ kind: 'k', key: 'fresh' }, { onConflict: 'fail' })).toMatchObject({ created: true });
    });
  });
}
