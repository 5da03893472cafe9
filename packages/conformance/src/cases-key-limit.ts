/**
 * Per-key concurrency and fair share (docs/contract.md#per-key-concurrency):
 * `setKeyConcurrency({ kind, limit })` makes every claim leave at most `limit` CLAIMED tasks per
 * (kind, limitKey) — counted in every queue and by every owner — and take the due tasks of such a
 * kind round-robin among its keys; held-back tasks stay SCHEDULED with no attempt used; kinds without
 * a declaration are claimed as before; bad input is refused with a typed ValidationError and nothing
 * written.
 */
import { isKeyLimitStore, type KeyLimitStore, type Store, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import type { HarnessRef } from './kit/harness.js';
import { expectValidationError, LEASE_MS, mustGetTask } from './kit/helpers.js';

type KeyedStore = Store<any> & KeyLimitStore;

function keyed(store: Store<any>): KeyedStore {
  if (!isKeyLimitStore(store)) throw new Error('the store does not implement KeyLimitStore');
  return store;
}

/** Schedules one task per `limitKey` (null: none) of `kind`, 1 ms apart (so their due times order them). */
async function scheduleKeys(h: HarnessRef, kind: string, keys: readonly (string | null)[], extra: Record<string, unknown> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (const limitKey of keys) {
    ids.push((await h().store.schedule({ kind, limitKey, ...extra })).id);
    h().clock.tick(1);
  }
  return ids;
}

async function claimIds(store: Store<any>, limit: number, extra: Record<string, unknown> = {}): Promise<string[]> {
  return (await store.claim({ owner: 'w1', limit, leaseMs: LEASE_MS, ...extra })).map((t) => t.id);
}

const sorted = (ids: readonly (string | undefined)[]): string[] => [...(ids as string[])].sort((a, b) => a.length - b.length || (a < b ? -1 : 1));

export function keyLimitCases(h: HarnessRef): void {
  describe('per-key concurrency and fair share (setKeyConcurrency)', () => {
    it('at most `limit` CLAIMED per (kind, limitKey); the rest stays SCHEDULED with no attempt used; a finished task frees its key', async () => {
      const store = keyed(h().store);
      expect(await store.setKeyConcurrency({ kind: 'send', limit: 2 })).toEqual({ kind: 'send', limit: 2 });
      const [a1, a2, a3, b1, b2, b3, n1] = await scheduleKeys(h, 'send', ['a', 'a', 'a', 'b', 'b', 'b', null]);
      // Tasks without a key are not limited by key: the one here is taken too.
      expect(sorted(await claimIds(store, 10))).toEqual(sorted([a1, a2, b1, b2, n1]));
      for (const id of [a3, b3]) expect(await mustGetTask(store, id as string)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      expect(await claimIds(store, 10)).toEqual([]);
      const a1Task = await mustGetTask(store, a1 as string);
      await store.complete({ id: a1 as string, attempt: a1Task.attempt, owner: 'w1' });
      expect(await claimIds(store, 10)).toEqual([a3]);
      expect(await claimIds(store, 10)).toEqual([]);
    });

    it('fair share: the claim rotates among the keys with due work, one per key per round, however many one key has', async () => {
      const store = keyed(h().store);
      await store.setKeyConcurrency({ kind: 'send', limit: 100 });
      const a = await scheduleKeys(h, 'send', ['A', 'A', 'A', 'A', 'A', 'A']);
      const b = await scheduleKeys(h, 'send', ['B', 'B']);
      const c = await scheduleKeys(h, 'send', ['C']);
      // Round 1: the first due task of each key, although A's six are all due before them.
      expect(sorted(await claimIds(store, 3))).toEqual(sorted([a[0], b[0], c[0]]));
      // Round 2 (A and B left with work), then round 3 started in due order: A's third.
      expect(sorted(await claimIds(store, 3))).toEqual(sorted([a[1], b[1], a[2]]));
      expect(await claimIds(store, 10)).toEqual(a.slice(3));
    });

    it('the claimed tasks come back in claim order (priority desc, due time, id); a higher priority level is taken first', async () => {
      const store = keyed(h().store);
      await store.setKeyConcurrency({ kind: 'send', limit: 100 });
      const low = await scheduleKeys(h, 'send', ['A', 'A', 'B']);
      const high = await scheduleKeys(h, 'send', ['B'], { priority: 5 });
      const claimed = await store.claim({ owner: 'w1', limit: 3, leaseMs: LEASE_MS });
      expect(claimed.map((t) => t.id)).toEqual([high[0], low[0], low[2]]);
    });

    it("one claim keeps a key's room across priority levels: a key with tasks at two priorities gives one claim at most `limit` of them", async () => {
      // Found by the differential test (packages/postgres/test/differential.test.ts): PostgreSQL's keyed
      // claim gave each (priority, key) the key's whole room, so a key with tasks at two levels was
      // claimed once per level.
      const store = keyed(h().store);
      await store.setKeyConcurrency({ kind: 'send', limit: 1 });
      const [low] = await scheduleKeys(h, 'send', ['A']);
      const [high] = await scheduleKeys(h, 'send', ['A'], { priority: 5 });
      const [other] = await scheduleKeys(h, 'send', ['B'], { priority: -1 });
      expect(await claimIds(store, 10)).toEqual([high, other]);
      expect(await mustGetTask(store, low as string)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      expect(await claimIds(store, 10)).toEqual([]);
    });

    it('counts CLAIMED tasks of the key in every queue; kinds without a declaration ignore their limit keys', async () => {
      const store = keyed(h().store);
      await store.setKeyConcurrency({ kind: 'send', limit: 1 });
      const [q1] = await scheduleKeys(h, 'send', ['t'], { queue: 'q1' });
      const [q2] = await scheduleKeys(h, 'send', ['t'], { queue: 'q2' });
      const other = await scheduleKeys(h, 'other', ['t', 't', 't']);
      expect(await claimIds(store, 10, { queue: 'q1' })).toEqual([q1]);
      expect(await claimIds(store, 10, { queue: 'q2' })).toEqual([]);
      expect(await mustGetTask(store, q2 as string)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      expect(await claimIds(store, 10, { kinds: ['other'] })).toEqual(other);
    });

    it('with a kind cap too: the cap bounds the kind, the key limit each key, in fair order', async () => {
      const store = keyed(h().store);
      await store.setKeyConcurrency({ kind: 'send', limit: 2 });
      const a = await scheduleKeys(h, 'send', ['a', 'a', 'a']);
      const b = await scheduleKeys(h, 'send', ['b', 'b', 'b']);
      expect(sorted(await claimIds(store, 10, { kindLimits: { send: 3 } }))).toEqual(sorted([a[0], b[0], a[1]]));
      expect(await claimIds(store, 10, { kindLimits: { send: 3 } })).toEqual([]);
      expect(await claimIds(store, 10)).toEqual([b[1]]);
    });

    it('a changed limit applies to the next claim; a deleted declaration limits nothing; list is by kind', async () => {
      const store = keyed(h().store);
      await store.setKeyConcurrency({ kind: 'send', limit: 1 });
      await store.setKeyConcurrency({ kind: 'alpha', limit: 7 });
      const a = await scheduleKeys(h, 'send', ['a', 'a', 'a', 'a']);
      expect(await claimIds(store, 10)).toEqual([a[0]]);
      expect(await store.setKeyConcurrency({ kind: 'send', limit: 2 })).toEqual({ kind: 'send', limit: 2 });
      expect(await store.listKeyConcurrency()).toEqual([
        { kind: 'alpha', limit: 7 },
        { kind: 'send', limit: 2 },
      ]);
      expect(await claimIds(store, 10)).toEqual([a[1]]);
      expect(await store.deleteKeyConcurrency({ kind: 'send' })).toBe(true);
      expect(await store.deleteKeyConcurrency({ kind: 'send' })).toBe(false);
      expect(await store.listKeyConcurrency()).toEqual([{ kind: 'alpha', limit: 7 }]);
      expect(await claimIds(store, 10)).toEqual(a.slice(2));
    });

    it('bad input is a ValidationError and writes nothing', async () => {
      const store = keyed(h().store);
      await expectValidationError(() => store.setKeyConcurrency({ kind: 'send', limit: 0 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.setKeyConcurrency({ kind: 'send', limit: 1.5 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.setKeyConcurrency({ kind: 'send', limit: 1_000_001 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.setKeyConcurrency({ kind: '', limit: 1 }), 'INVALID_KIND', 'kind');
      await expectValidationError(() => store.setKeyConcurrency({ kind: 'send', limit: 1, perKey: true } as never), 'INVALID_OPTION', 'keyConcurrency.perKey');
      await expectValidationError(() => store.deleteKeyConcurrency({ kind: 7 } as never), 'INVALID_KIND', 'kind');
      expect(await store.listKeyConcurrency()).toEqual([]);
      await expectValidationError(() => store.schedule({ kind: 'send', limitKey: '' }), 'INVALID_KEY', 'limitKey');
      await expectValidationError(() => store.schedule({ kind: 'send', limitKey: 'x'.repeat(257) }), 'INVALID_KEY', 'limitKey');
      await expectValidationError(() => store.schedule({ kind: 'send', limitKey: 'a\u0000b' }), 'INVALID_KEY', 'limitKey');
      await expectValidationError(() => store.schedule({ kind: 'send', limitKey: 5 as never }), 'INVALID_KEY', 'limitKey');
      await expectValidationError(() => store.scheduleMany([{ kind: 'send', limitKey: 'ok' }, { kind: 'send', limitKey: '' }]), 'INVALID_KEY', 'tasks[1].limitKey');
      expect(await store.countByState()).toMatchObject({ SCHEDULED: 0 });
      // 256 characters is the longest key.
      expect((await store.schedule({ kind: 'send', limitKey: 'k'.repeat(256) })).created).toBe(true);
    });
  });
}
