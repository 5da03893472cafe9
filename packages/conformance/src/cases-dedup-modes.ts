/**
 * Dedup key modes (docs/contract.md#dedup-keys): `onConflict: 'debounce'` (a SCHEDULED holder gets
 * the new payload and due time; a CLAIMED one hands its key to a new task queued behind it) and
 * `onConflict: 'throttle'` with `throttleMs` (at most one task per kind and key per period, counted
 * from the creation of the last one, even after it finished); `prune` deletes reopened throttle rows.
 */
import { TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, expectValidationError, mustGetTask, stateCounts } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function dedupModeCases(h: HarnessRef): void {
  describe('dedup key modes', () => {
    const flush = { kind: 'flush-cart', key: 'cart-7' } as const;

    it('debounce: each schedule pushes the SCHEDULED holder to its own due time, with its payload; one task', async () => {
      const { store, clock } = h();
      const first = await store.schedule({ ...flush, payload: { v: 1 }, delayMs: 5_000 }, { onConflict: 'debounce' });
      expect(first).toEqual({ id: first.id, dueAt: new Date(clock.now() + 5_000), created: true, replaced: false });
      clock.tick(3_000);
      const second = await store.schedule({ ...flush, payload: { v: 2 }, delayMs: 5_000 }, { onConflict: 'debounce' });
      expect(second).toEqual({ id: first.id, dueAt: new Date(clock.now() + 5_000), created: false, replaced: true });
      clock.tick(3_000);
      // Due 6 s after the first schedule had it stayed; the debounce moved it to 8 s: nothing due yet.
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 })).toEqual([]);
      expect(await mustGetTask(store, first.id)).toMatchObject({ payload: { v: 2 }, dueAt: second.dueAt, state: TaskState.SCHEDULED, attempt: 0, key: 'cart-7' });
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
    });

    it('debounce on a CLAIMED holder: a new task is queued behind it; the running one keeps running without the key', async () => {
      const { store, clock } = h();
      const first = await store.schedule({ ...flush, payload: 1 }, { onConflict: 'debounce' });
      const claimed = await claimExactly(store, first.id);
      const queued = await store.schedule({ ...flush, payload: 2, delayMs: 1_000 }, { onConflict: 'debounce' });
      expect(queued).toEqual({ id: queued.id, dueAt: new Date(clock.now() + 1_000), created: true, replaced: false });
      expect(queued.id).not.toBe(first.id);
      expect(await mustGetTask(store, first.id)).toMatchObject({ state: TaskState.CLAIMED, key: null, payload: 1, attempt: 1 });
      // The next debounce meets the queued one (SCHEDULED): replaced, still one queued.
      const again = await store.schedule({ ...flush, payload: 3, delayMs: 2_000 }, { onConflict: 'debounce' });
      expect(again).toEqual({ id: queued.id, dueAt: new Date(clock.now() + 2_000), created: false, replaced: true });
      // The running task's fencing is untouched by the hand-over.
      expect(await store.complete({ id: first.id, attempt: claimed.attempt, owner: 'w1' })).toBe('DONE');
      expect(await mustGetTask(store, queued.id)).toMatchObject({ state: TaskState.SCHEDULED, key: 'cart-7', payload: 3 });
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1, DONE: 1 }));
      // keep still meets the queued task as the key's one holder.
      expect(await store.schedule(flush)).toMatchObject({ id: queued.id, created: false });
    });

    it('queueBehind: a SCHEDULED holder is kept; a CLAIMED one gets exactly one task queued behind it', async () => {
      const { store, clock } = h();
      const opts = { onConflict: 'queueBehind' } as const;
      const first = await store.schedule({ ...flush, payload: 1 }, opts);
      expect(await store.schedule({ ...flush, payload: 2, delayMs: 9 }, opts)).toEqual({ id: first.id, dueAt: first.dueAt, created: false, replaced: false });
      const claimed = await claimExactly(store, first.id);
      const queued = await store.schedule({ ...flush, payload: 3, delayMs: 500 }, opts);
      expect(queued).toEqual({ id: queued.id, dueAt: new Date(clock.now() + 500), created: true, replaced: false });
      const more = await store.scheduleMany([{ ...flush, payload: 4 }, { kind: 'flush-cart', key: 'cart-8' }], opts);
      expect(more[0]).toEqual({ id: queued.id, dueAt: queued.dueAt, created: false, replaced: false });
      expect(more[1]).toMatchObject({ created: true });
      expect(await mustGetTask(store, first.id)).toMatchObject({ state: TaskState.CLAIMED, key: null });
      expect(await mustGetTask(store, queued.id)).toMatchObject({ state: TaskState.SCHEDULED, key: 'cart-7', payload: 3 });
      expect(await store.fail({ id: first.id, attempt: claimed.attempt, error: 'x', backoffMs: 0 })).toMatchObject({ outcome: 'SCHEDULED' });
      // The retried task no longer holds the key: the queued one stays the key's one holder.
      expect(await mustGetTask(store, first.id)).toMatchObject({ state: TaskState.SCHEDULED, key: null });
      expect(await store.schedule(flush, opts)).toMatchObject({ id: queued.id, created: false });
    });

    it('throttle: one task per period, refused schedules return it (throttled), even after it is DONE; then a new one', async () => {
      const { store, clock } = h();
      const opts = { onConflict: 'throttle', throttleMs: 60_000 } as const;
      const first = await store.schedule({ ...flush, payload: 1 }, opts);
      expect(first).toEqual({ id: first.id, dueAt: new Date(clock.now()), created: true, replaced: false });
      clock.tick(1_000);
      expect(await store.schedule({ ...flush, payload: 2 }, opts)).toEqual({ id: first.id, dueAt: first.dueAt, created: false, replaced: false, throttled: true });
      await store.complete({ id: first.id, attempt: (await claimExactly(store, first.id)).attempt, owner: 'w1' });
      clock.tick(58_000); // 59 s after the first: still throttled, although the key is free in the live table
      expect(await store.schedule({ ...flush, payload: 3 }, opts)).toEqual({ id: first.id, dueAt: first.dueAt, created: false, replaced: false, throttled: true });
      expect(await store.countByState()).toEqual(stateCounts({ DONE: 1 }));
      clock.tick(1_000); // 60 s: the window reopens
      const next = await store.schedule({ ...flush, payload: 4, delayMs: 10 }, opts);
      expect(next).toMatchObject({ created: true, replaced: false });
      expect(next.id).not.toBe(first.id);
      expect(next.throttled).toBeUndefined();
      expect(await mustGetTask(store, next.id)).toMatchObject({ payload: 4, key: 'cart-7', state: TaskState.SCHEDULED });
      clock.tick(30_000);
      expect(await store.schedule(flush, opts)).toEqual({ id: next.id, dueAt: next.dueAt, created: false, replaced: false, throttled: true });
    });

    it('throttle past the period with a live holder keeps it (not throttled); other keys, kinds and unkeyed inputs are apart; scheduleMany per input', async () => {
      const { store, clock } = h();
      const opts = { onConflict: 'throttle', throttleMs: 1_000 } as const;
      const held = await store.schedule({ ...flush, delayMs: 3_600_000 }, opts);
      clock.tick(5_000);
      expect(await store.schedule(flush, opts)).toEqual({ id: held.id, dueAt: held.dueAt, created: false, replaced: false });
      const out = await store.scheduleMany([{ kind: 'x' }, { ...flush }, { kind: 'flush-cart', key: 'cart-8' }, { kind: 'other', key: 'cart-7' }], opts);
      expect(out.map((s) => [s.created, s.throttled ?? false])).toEqual([
        [true, false],
        [false, false],
        [true, false],
        [true, false],
      ]);
      expect(out[1]?.id).toBe(held.id);
      const again = await store.scheduleMany([{ kind: 'flush-cart', key: 'cart-8' }, { kind: 'other', key: 'cart-7' }, { kind: 'x' }], opts);
      expect(again.map((s) => s.throttled ?? false)).toEqual([true, true, false]);
      expect(again[0]?.id).toBe(out[2]?.id);
      expect(again[1]?.id).toBe(out[3]?.id);
      expect(again[2]?.created).toBe(true);
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 5 }));
    });

    it('throttle in a rolled-back caller transaction leaves the window open', async () => {
      const { store } = h();
      const opts = { onConflict: 'throttle', throttleMs: 60_000 } as const;
      await h().inTransaction(async (tx) => {
        expect(await store.schedule(flush, { tx, ...opts })).toMatchObject({ created: true });
      }, 'rollback');
      expect(await store.schedule(flush, opts)).toMatchObject({ created: true });
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: 1 }));
    });

    it('prune deletes the throttle rows whose window reopened, and only those', async () => {
      const { store, clock } = h();
      await store.schedule({ kind: 'k', key: 'short' }, { onConflict: 'throttle', throttleMs: 1_000 });
      await store.schedule({ kind: 'k', key: 'long' }, { onConflict: 'throttle', throttleMs: 60_000 });
      clock.tick(2_000);
      expect(await store.prune({ olderThanMs: 3_600_000 })).toEqual({ deleted: 0, effectsDeleted: 0, batches: 1, throttleRowsDeleted: 1 });
      expect(await store.prune({ olderThanMs: 3_600_000 })).toEqual({ deleted: 0, effectsDeleted: 0, batches: 1 });
      expect(await store.schedule({ kind: 'k', key: 'long' }, { onConflict: 'throttle', throttleMs: 1 })).toMatchObject({ throttled: true });
    });

    it('validation: throttleMs only with throttle and required there; nothing written', async () => {
      const { store } = h();
      await expectValidationError(() => store.schedule(flush, { onConflict: 'throttle' }), 'INVALID_OPTION', 'options.throttleMs');
      await expectValidationError(() => store.schedule(flush, { onConflict: 'throttle', throttleMs: 0 }), 'INVALID_OPTION', 'options.throttleMs');
      await expectValidationError(() => store.scheduleMany([flush], { onConflict: 'debounce', throttleMs: 10 }), 'INVALID_OPTION', 'options.throttleMs');
      await expectValidationError(() => store.schedule(flush, { onConflict: 'lifo' as 'keep' }), 'INVALID_OPTION', 'options.onConflict');
      expect(await store.countByState()).toEqual(stateCounts());
    });
  });
}
