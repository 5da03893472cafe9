/**
 * Per-key rate limits (docs/contract.md#per-key-rate-limits): `setKeyRateLimit({ kind, limit,
 * windowMs })` gives every limit key of the kind at most `limit` claims in every interval
 * `[t, t + windowMs)` of claim times (the store's clock); tasks of the kind without a key and other
 * kinds are not limited by it; it works beside per-key concurrency; held-back tasks stay SCHEDULED,
 * due time unchanged, no attempt used; a claim of only rated kinds whose every due task is held back
 * calls `onRateLimited`; bad input is refused with a typed ValidationError and nothing written.
 */
import { isKeyLimitStore, isKeyRateLimitStore, type KeyLimitStore, type KeyRateLimitStore, type RateLimited, type RateLimitStore, type Store, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import type { HarnessRef } from './kit/harness.js';
import { expectValidationError, LEASE_MS, mustGetTask } from './kit/helpers.js';

type RatedStore = Store<any> & KeyRateLimitStore & KeyLimitStore & RateLimitStore;

function rated(store: Store<any>): RatedStore {
  if (!isKeyRateLimitStore(store) || !isKeyLimitStore(store)) throw new Error('the store does not implement KeyRateLimitStore');
  return store as RatedStore;
}

/** Schedules one task per `limitKey` (null: none) of `kind`, 1 ms apart (so their due times order them). */
async function scheduleKeys(h: HarnessRef, kind: string, keys: readonly (string | null)[]): Promise<string[]> {
  const ids: string[] = [];
  for (const limitKey of keys) {
    ids.push((await h().store.schedule({ kind, limitKey })).id);
    h().clock.tick(1);
  }
  return ids;
}

/** Claims with `extra`; the ids sorted, and what `onRateLimited` received (null: not called). */
async function claim(store: Store<any>, limit: number, extra: Record<string, unknown> = {}): Promise<{ ids: string[]; held: RateLimited | null }> {
  let held: RateLimited | null = null;
  const tasks = await store.claim({ owner: 'w1', limit, leaseMs: LEASE_MS, ...extra, onRateLimited: (l: RateLimited) => (held = l) });
  return { ids: sorted(tasks.map((t) => t.id)), held };
}

const sorted = (ids: readonly (string | undefined)[]): string[] => [...(ids as string[])].sort((a, b) => a.length - b.length || (a < b ? -1 : 1));

export function keyRateLimitCases(h: HarnessRef): void {
  describe('per-key rate limits (setKeyRateLimit)', () => {
    it("one claim keeps a key's window across priority levels: a key with tasks at two priorities gives one claim at most `limit` of them", async () => {
      // Found by the differential test (packages/postgres/test/differential.test.ts): PostgreSQL's keyed
      // claim gave each (priority, key) the key's whole room, so 1 per second let 2 start at once.
      const store = rated(h().store);
      await store.setKeyRateLimit({ kind: 'send', limit: 1, windowMs: 1_000 });
      const [low] = await scheduleKeys(h, 'send', ['a']);
      const high = (await h().store.schedule({ kind: 'send', limitKey: 'a', priority: 3 })).id;
      const { ids } = await claim(store, 10);
      expect(ids).toEqual([high]);
      expect(await mustGetTask(store, low as string)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      h().clock.tick(1_000);
      expect((await claim(store, 10)).ids).toEqual([low]);
    });

    it('at most `limit` claims per key per window; the rest stays SCHEDULED, due time unchanged, no attempt used; a finished task frees nothing', async () => {
      const store = rated(h().store);
      expect(await store.setKeyRateLimit({ kind: 'send', limit: 2, windowMs: 1_000 })).toEqual({ kind: 'send', limit: 2, windowMs: 1_000, heldKeys: 0 });
      const [a1, a2, a3, b1, b2, b3, n1] = await scheduleKeys(h, 'send', ['a', 'a', 'a', 'b', 'b', 'b', null]);
      const dueBefore = (await mustGetTask(store, a3 as string)).dueAt.getTime();
      // Tasks without a key are not limited by key: the one here is taken too.
      expect((await claim(store, 10)).ids).toEqual(sorted([a1, a2, b1, b2, n1]));
      for (const id of [a3, b3]) expect(await mustGetTask(store, id as string)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      expect((await mustGetTask(store, a3 as string)).dueAt.getTime()).toBe(dueBefore);
      expect(await store.listKeyRateLimits()).toEqual([{ kind: 'send', limit: 2, windowMs: 1_000, heldKeys: 2 }]);
      // Completing does not free a start: the window counts claims.
      const a1Task = await mustGetTask(store, a1 as string);
      await store.complete({ id: a1 as string, attempt: a1Task.attempt, owner: 'w1' });
      expect((await claim(store, 10)).ids).toEqual([]);
      h().clock.tick(999);
      expect((await claim(store, 10)).ids).toEqual([]);
      h().clock.tick(1);
      // 1 000 ms after the claims: they have left the window [t, t + 1000).
      expect((await claim(store, 10)).ids).toEqual(sorted([a3, b3]));
    });

    it('the window slides: a claim half a window later counts against the next half', async () => {
      const store = rated(h().store);
      await store.setKeyRateLimit({ kind: 'send', limit: 2, windowMs: 1_000 });
      const ids = await scheduleKeys(h, 'send', ['a', 'a', 'a', 'a', 'a']);
      expect((await claim(store, 1)).ids).toEqual([ids[0]]);
      h().clock.tick(500);
      expect((await claim(store, 10)).ids).toEqual([ids[1]]);
      h().clock.tick(500);
      // The first claim left the window, the second is still in it: room 1, not 2.
      expect((await claim(store, 10)).ids).toEqual([ids[2]]);
      expect((await claim(store, 10)).ids).toEqual([]);
      h().clock.tick(500);
      expect((await claim(store, 10)).ids).toEqual([ids[3]]);
    });

    it('other kinds and tasks of other keys are not held back by a full key', async () => {
      const store = rated(h().store);
      await store.setKeyRateLimit({ kind: 'send', limit: 1, windowMs: 60_000 });
      const [a1, a2, b1] = await scheduleKeys(h, 'send', ['a', 'a', 'b']);
      const [o1, o2] = await scheduleKeys(h, 'other', ['a', 'a']);
      expect((await claim(store, 10)).ids).toEqual(sorted([a1, b1, o1, o2]));
      expect(await mustGetTask(store, a2 as string)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
    });

    it('with per-key concurrency: the room of a key is the least of both', async () => {
      const store = rated(h().store);
      await store.setKeyConcurrency({ kind: 'send', limit: 1 });
      await store.setKeyRateLimit({ kind: 'send', limit: 2, windowMs: 60_000 });
      const ids = await scheduleKeys(h, 'send', ['a', 'a', 'a']);
      const first = await claim(store, 10);
      expect(first.ids).toEqual([ids[0]]);
      const t1 = await mustGetTask(store, ids[0] as string);
      await store.complete({ id: ids[0] as string, attempt: t1.attempt, owner: 'w1' });
      expect((await claim(store, 10)).ids).toEqual([ids[1]]);
      const t2 = await mustGetTask(store, ids[1] as string);
      await store.complete({ id: ids[1] as string, attempt: t2.attempt, owner: 'w1' });
      // Concurrency has room (nothing CLAIMED), the rate has none (2 starts in the window).
      expect((await claim(store, 10)).ids).toEqual([]);
      h().clock.tick(60_000);
      expect((await claim(store, 10)).ids).toEqual([ids[2]]);
    });

    it('a kind rate limit and a per-key rate limit together: the least of both', async () => {
      const store = rated(h().store);
      await store.setRateLimit({ kind: 'send', limit: 3, windowMs: 60_000 });
      await store.setKeyRateLimit({ kind: 'send', limit: 2, windowMs: 60_000 });
      await scheduleKeys(h, 'send', ['a', 'a', 'a', 'b', 'b', 'b']);
      expect((await claim(store, 10)).ids).toHaveLength(3);
      expect((await claim(store, 10)).ids).toEqual([]);
    });

    it('onRateLimited: called when every due task of the named kinds is held back by its key, with the time until the earliest reopening', async () => {
      const store = rated(h().store);
      await store.setKeyRateLimit({ kind: 'send', limit: 1, windowMs: 1_000 });
      const [a1, a2, b1, b2] = await scheduleKeys(h, 'send', ['a', 'a', 'b', 'b']);
      // Takes one per key; then the claim is short and everything due is held back.
      const first = await claim(store, 10, { kinds: ['send'] });
      expect(first.ids).toEqual(sorted([a1, b1]));
      expect(first.held).not.toBeNull();
      expect(first.held?.reopensInMs).toBeGreaterThan(0);
      expect(first.held?.reopensInMs).toBeLessThanOrEqual(1_000);
      h().clock.tick(400);
      const second = await claim(store, 10, { kinds: ['send'] });
      expect(second.ids).toEqual([]);
      expect(second.held?.reopensInMs).toBeLessThanOrEqual(600);
      expect(second.held?.reopensInMs).toBeGreaterThan(0);
      // Not named: no report (other kinds could be due at any moment).
      expect((await claim(store, 10)).held).toBeNull();
      // A due task without a key is not held back: no report, it is claimed.
      const [n1] = await scheduleKeys(h, 'send', [null]);
      const third = await claim(store, 10, { kinds: ['send'] });
      expect(third.ids).toEqual([n1]);
      expect(third.held).not.toBeNull();
      h().clock.tick(600);
      expect((await claim(store, 10, { kinds: ['send'] })).ids).toEqual(sorted([a2, b2]));
    });

    it('onRateLimited is not called when nothing is due, nor when a due task of a named kind has room', async () => {
      const store = rated(h().store);
      await store.setKeyRateLimit({ kind: 'send', limit: 1, windowMs: 1_000 });
      expect((await claim(store, 10, { kinds: ['send'] })).held).toBeNull();
      await scheduleKeys(h, 'send', ['a', 'a']);
      await scheduleKeys(h, 'other', ['a']);
      // `other` has no per-key rate limit: a claim naming it is never reported as held back by keys.
      const both = await claim(store, 10, { kinds: ['send', 'other'] });
      expect(both.ids).toHaveLength(2);
      expect(both.held).toBeNull();
    });

    it('changes apply to the next claim; delete removes the limit (true once) and its logs', async () => {
      const store = rated(h().store);
      await store.setKeyRateLimit({ kind: 'send', limit: 1, windowMs: 60_000 });
      const ids = await scheduleKeys(h, 'send', ['a', 'a', 'a', 'a']);
      expect((await claim(store, 10)).ids).toEqual([ids[0]]);
      expect(await store.setKeyRateLimit({ kind: 'send', limit: 2, windowMs: 60_000 })).toEqual({ kind: 'send', limit: 2, windowMs: 60_000, heldKeys: 0 });
      expect((await claim(store, 10)).ids).toEqual([ids[1]]);
      expect(await store.deleteKeyRateLimit({ kind: 'send' })).toBe(true);
      expect(await store.deleteKeyRateLimit({ kind: 'send' })).toBe(false);
      expect(await store.listKeyRateLimits()).toEqual([]);
      expect((await claim(store, 10)).ids).toEqual(sorted([ids[2], ids[3]]));
      // Declared again: the old log was removed with the limit.
      await store.setKeyRateLimit({ kind: 'send', limit: 1, windowMs: 60_000 });
      expect(await store.listKeyRateLimits()).toEqual([{ kind: 'send', limit: 1, windowMs: 60_000, heldKeys: 0 }]);
    });

    it('bad input is refused with a typed ValidationError and nothing is written', async () => {
      const store = rated(h().store);
      await expectValidationError(() => store.setKeyRateLimit({ kind: 'send', limit: 0, windowMs: 1_000 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.setKeyRateLimit({ kind: 'send', limit: 10_001, windowMs: 1_000 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.setKeyRateLimit({ kind: 'send', limit: 1.5, windowMs: 1_000 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.setKeyRateLimit({ kind: 'send', limit: 1, windowMs: 0 }), 'INVALID_OPTION', 'windowMs');
      await expectValidationError(() => store.setKeyRateLimit({ kind: 'send', limit: 1, windowMs: 86_400_001 }), 'INVALID_OPTION', 'windowMs');
      await expectValidationError(() => store.setKeyRateLimit({ kind: 'send', limit: 1, windowMs: 1_000, queue: 'q' } as never), 'INVALID_OPTION', 'keyRateLimit.queue');
      await expectValidationError(() => store.setKeyRateLimit({ kind: '', limit: 1, windowMs: 1_000 }), 'INVALID_KIND', 'kind');
      await expectValidationError(() => store.setKeyRateLimit(null as never), 'INVALID_OPTION', 'keyRateLimit');
      await expectValidationError(() => store.deleteKeyRateLimit({ kind: 'send', x: 1 } as never), 'INVALID_OPTION', 'target.x');
      expect(await store.listKeyRateLimits()).toEqual([]);
    });
  });
}
