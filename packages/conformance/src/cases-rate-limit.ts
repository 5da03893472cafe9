/**
 * Rate limits (docs/contract.md#rate-limits): `setRateLimit({ kind | queue, limit, windowMs })`
 * makes every claim take at most `limit` tasks of the scope in any sliding window of `windowMs` of
 * the store's clock; held-back tasks stay SCHEDULED with no attempt used; a claim whose every
 * possible task is held back calls `onRateLimited` with the time until the window reopens; bad
 * input is refused with a typed ValidationError and nothing written.
 */
import { isRateLimitStore, type RateLimited, type RateLimitStore, type Store, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import type { HarnessRef } from './kit/harness.js';
import { expectValidationError, LEASE_MS, mustGetTask } from './kit/helpers.js';

type LimitedStore = Store<any> & RateLimitStore;

function limited(store: Store<any>): LimitedStore {
  if (!isRateLimitStore(store)) throw new Error('the store does not implement RateLimitStore');
  return store;
}

/** Claims with `extra`; returns the ids in claim order and what `onRateLimited` received (null: not called). */
async function claim(store: Store<any>, extra: Record<string, unknown> = {}, limit = 10): Promise<{ ids: string[]; held: RateLimited | null }> {
  let held: RateLimited | null = null;
  const tasks = await store.claim({ owner: 'w1', limit, leaseMs: LEASE_MS, ...extra, onRateLimited: (l: RateLimited) => (held = l) });
  return { ids: tasks.map((t) => t.id), held };
}

export function rateLimitCases(h: HarnessRef): void {
  describe('rate limits (setRateLimit)', () => {
    it('a kind limit lets at most `limit` claims of the kind through per window; the rest stays SCHEDULED with no attempt used', async () => {
      const { clock } = h();
      const store = limited(h().store);
      expect(await store.setRateLimit({ kind: 'api', limit: 3, windowMs: 1_000 })).toMatchObject({ scope: 'kind', name: 'api', limit: 3, windowMs: 1_000, used: 0 });
      const api = await store.scheduleMany(Array.from({ length: 5 }, () => ({ kind: 'api' })));
      clock.tick(1);
      const other = await store.scheduleMany([{ kind: 'other' }, { kind: 'other' }]);
      const first = await claim(store);
      expect(first.ids).toEqual([...api.slice(0, 3).map((t) => t.id), ...other.map((t) => t.id)]);
      expect(first.held).toBeNull();
      for (const t of api.slice(3)) expect(await mustGetTask(store, t.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0, dueAt: t.dueAt });
      // Only the limited kind is asked for: held back, and the window reopens 1 000 ms after the claims.
      expect(await claim(store, { kinds: ['api'] })).toEqual({ ids: [], held: { reopensInMs: 1_000 } });
      clock.tick(999);
      expect(await claim(store, { kinds: ['api'] })).toEqual({ ids: [], held: { reopensInMs: 1 } });
      clock.tick(1);
      expect(await claim(store, { kinds: ['api'] })).toEqual({ ids: api.slice(3).map((t) => t.id), held: null });
      const [row] = await store.listRateLimits();
      expect(row).toMatchObject({ scope: 'kind', name: 'api', used: 2, reopensAt: new Date(clock.now()) });
    });

    it('the window slides: in every interval of windowMs at most `limit` claims, whatever the claims per call', async () => {
      const { clock } = h();
      const store = limited(h().store);
      await store.setRateLimit({ kind: 'api', limit: 2, windowMs: 1_000 });
      const ids = (await store.scheduleMany(Array.from({ length: 6 }, () => ({ kind: 'api' })))).map((t) => t.id);
      expect((await claim(store, {}, 1)).ids).toEqual([ids[0]]);
      clock.tick(600);
      // A short claim that used up the room says so: the claim at 0 leaves the window at 1 000.
      expect(await claim(store, { kinds: ['api'] }, 5)).toEqual({ ids: [ids[1]], held: { reopensInMs: 400 } });
      // At 1 100 ms the claim at 0 has left the window, the one at 600 has not: room for one.
      clock.tick(500);
      expect(await claim(store, { kinds: ['api'] }, 5)).toEqual({ ids: [ids[2]], held: { reopensInMs: 500 } });
      expect(await claim(store, { kinds: ['api'] })).toEqual({ ids: [], held: { reopensInMs: 500 } });
      clock.tick(500);
      expect((await claim(store, {}, 5)).ids).toEqual([ids[3]]);
    });

    it('a queue limit counts every kind of the queue and no other queue; a claim of any kind is held back when the queue is full', async () => {
      const { clock } = h();
      const store = limited(h().store);
      await store.setRateLimit({ queue: 'mail', limit: 2, windowMs: 10_000 });
      const mail = await store.scheduleMany([{ kind: 'a', queue: 'mail' }, { kind: 'b', queue: 'mail' }, { kind: 'a', queue: 'mail' }]);
      const plain = await store.scheduleMany([{ kind: 'a' }, { kind: 'a' }, { kind: 'a' }]);
      expect((await claim(store, { queue: 'mail' })).ids).toEqual(mail.slice(0, 2).map((t) => t.id));
      expect(await claim(store, { queue: 'mail' })).toEqual({ ids: [], held: { reopensInMs: 10_000 } });
      expect((await claim(store)).ids).toEqual(plain.map((t) => t.id));
      clock.tick(10_000);
      expect((await claim(store, { queue: 'mail' })).ids).toEqual([mail[2]!.id]);
    });

    it('a claim that may take other kinds takes them and is not reported as held back; a rate limit and a kind cap apply together', async () => {
      const store = limited(h().store);
      await store.setRateLimit({ kind: 'api', limit: 5, windowMs: 60_000 });
      const api = await store.scheduleMany(Array.from({ length: 6 }, () => ({ kind: 'api' })));
      // The cap (2) is tighter than the rate room (5).
      expect((await claim(store, { kindLimits: { api: 2 } })).ids).toEqual(api.slice(0, 2).map((t) => t.id));
      // Then the rate room (3 left) is tighter than the cap (10 − 2 CLAIMED).
      expect((await claim(store, { kindLimits: { api: 10 } })).ids).toEqual(api.slice(2, 5).map((t) => t.id));
      const [other] = await store.scheduleMany([{ kind: 'other' }]);
      expect(await claim(store)).toEqual({ ids: [other!.id], held: null });
      expect(await claim(store, { kinds: ['api', 'other'] })).toEqual({ ids: [], held: null });
      expect(await claim(store, { kinds: ['api'] })).toEqual({ ids: [], held: { reopensInMs: 60_000 } });
    });

    it('a changed limit applies at the next claim; a deleted one no longer holds anything back', async () => {
      const store = limited(h().store);
      await store.setRateLimit({ kind: 'api', limit: 1, windowMs: 60_000 });
      const ids = (await store.scheduleMany(Array.from({ length: 6 }, () => ({ kind: 'api' })))).map((t) => t.id);
      expect((await claim(store)).ids).toEqual([ids[0]]);
      expect((await claim(store)).ids).toEqual([]);
      expect(await store.setRateLimit({ kind: 'api', limit: 3, windowMs: 60_000 })).toMatchObject({ limit: 3, used: 1 });
      expect((await claim(store)).ids).toEqual([ids[1], ids[2]]);
      expect(await store.deleteRateLimit({ kind: 'api' })).toBe(true);
      expect(await store.deleteRateLimit({ kind: 'api' })).toBe(false);
      expect(await store.listRateLimits()).toEqual([]);
      expect((await claim(store)).ids).toEqual(ids.slice(3));
    });

    it('listRateLimits orders by scope then name; bad input is refused with ValidationError and nothing written', async () => {
      const store = limited(h().store);
      await store.setRateLimit({ queue: 'q', limit: 1, windowMs: 1 });
      await store.setRateLimit({ kind: 'b', limit: 10_000, windowMs: 86_400_000 });
      await store.setRateLimit({ kind: 'a', limit: 2, windowMs: 5 });
      expect((await store.listRateLimits()).map((r) => `${r.scope}:${r.name}:${r.limit}:${r.windowMs}`)).toEqual(['kind:a:2:5', 'kind:b:10000:86400000', 'queue:q:1:1']);
      const bad: [unknown, string, string][] = [
        [{ kind: 'x', limit: 0, windowMs: 1 }, 'INVALID_OPTION', 'limit'],
        [{ kind: 'x', limit: 10_001, windowMs: 1 }, 'INVALID_OPTION', 'limit'],
        [{ kind: 'x', limit: 1.5, windowMs: 1 }, 'INVALID_OPTION', 'limit'],
        [{ kind: 'x', limit: 1, windowMs: 0 }, 'INVALID_OPTION', 'windowMs'],
        [{ kind: 'x', limit: 1, windowMs: 86_400_001 }, 'INVALID_OPTION', 'windowMs'],
        [{ kind: 'x', queue: 'y', limit: 1, windowMs: 1 }, 'INVALID_OPTION', 'scope'],
        [{ limit: 1, windowMs: 1 }, 'INVALID_OPTION', 'scope'],
        [{ kind: '', limit: 1, windowMs: 1 }, 'INVALID_KIND', 'kind'],
        [{ queue: ' ', limit: 1, windowMs: 1 }, 'INVALID_QUEUE', 'queue'],
        [{ kind: 'x', limit: 1, windowMs: 1, burst: 2 }, 'INVALID_OPTION', 'rateLimit.burst'],
      ];
      for (const [input, code, field] of bad) await expectValidationError(() => store.setRateLimit(input as never), code as never, field);
      await expectValidationError(() => store.deleteRateLimit({} as never), 'INVALID_OPTION', 'scope');
      await expectValidationError(() => store.claim({ owner: 'w', limit: 1, leaseMs: LEASE_MS, onRateLimited: 3 as never }), 'INVALID_OPTION', 'onRateLimited');
      expect((await store.listRateLimits()).map((r) => r.name)).toEqual(['a', 'b', 'q']);
    });
  });
}
