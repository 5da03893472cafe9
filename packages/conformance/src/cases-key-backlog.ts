/**
 * The per-key backlog (docs/contract.md#key-backlog): `keyBacklog({ kind, limit?, cursor? })` lists,
 * per limit key of a kind, its due, not-yet-due and CLAIMED tasks and its oldest due task's lateness
 * by the store's clock, most due first then by key, in pages; a keyed schedule writes its key with the
 * task, atomically (a rolled-back one leaves no backlog); a task that finishes, dies or is cancelled
 * leaves its key's counts; bad input is a typed ValidationError.
 */
import { isKeyBacklogStore, type KeyBacklogEntry, type KeyBacklogStore, type Store, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import type { HarnessRef } from './kit/harness.js';
import { expectValidationError, LEASE_MS } from './kit/helpers.js';

function backlogStore(store: Store<any>): Store<any> & KeyBacklogStore {
  if (!isKeyBacklogStore(store)) throw new Error('the store does not implement KeyBacklogStore');
  return store;
}

const entry = (limitKey: string, due: number, notDue: number, claimed: number, oldestMs: number | null, nowMs: number): KeyBacklogEntry => ({
  limitKey,
  due,
  notDue,
  claimed,
  oldestDueAt: oldestMs === null ? null : new Date(oldestMs),
  latenessMs: oldestMs === null ? 0 : nowMs - oldestMs,
});

export function keyBacklogCases(h: HarnessRef): void {
  describe('per-key backlog (keyBacklog)', () => {
    it('per key: due, not-yet-due and CLAIMED counts and the lateness of the oldest due task, most due first; other kinds and unkeyed tasks not counted', async () => {
      const store = backlogStore(h().store);
      const clock = h().clock;
      const t0 = clock.now();
      const c = await store.schedule({ kind: 'sync', limitKey: 'C' });
      const [claimed] = await store.claim({ owner: 'w1', limit: 1, leaseMs: LEASE_MS });
      expect(claimed?.id).toBe(c.id);
      clock.tick(1);
      await store.scheduleMany([1, 2, 3].map((i) => ({ kind: 'sync', limitKey: 'A', payload: { i } })));
      clock.tick(1);
      await store.schedule({ kind: 'sync', limitKey: 'B' });
      await store.scheduleMany([1, 2].map((i) => ({ kind: 'sync', limitKey: 'B', delayMs: 60_000, payload: { i } })));
      await store.schedule({ kind: 'sync' }); // no limit key
      await store.schedule({ kind: 'other', limitKey: 'A' }); // another kind
      clock.tick(500);
      const now = clock.now();
      expect(now).toBe(t0 + 502);
      expect(await store.keyBacklog({ kind: 'sync' })).toEqual({
        kind: 'sync',
        entries: [entry('A', 3, 0, 0, t0 + 1, now), entry('B', 1, 2, 0, t0 + 2, now), entry('C', 0, 0, 1, null, now)],
        nextCursor: null,
      });
      expect((await store.keyBacklog({ kind: 'other' })).entries).toEqual([entry('A', 1, 0, 0, t0 + 2, now)]);
      expect(await store.keyBacklog({ kind: 'none' })).toEqual({ kind: 'none', entries: [], nextCursor: null });
      // Time passing turns B's two into due ones; the lateness grows with the clock.
      clock.tick(60_000);
      const later = clock.now();
      expect((await store.keyBacklog({ kind: 'sync' })).entries.map((e) => [e.limitKey, e.due, e.notDue, e.latenessMs])).toEqual([
        ['A', 3, 0, later - (t0 + 1)],
        ['B', 3, 0, later - (t0 + 2)],
        ['C', 0, 0, 0],
      ]);
    });

    it('pages of `limit` keys, in order, with a cursor; the last page has no cursor', async () => {
      const store = backlogStore(h().store);
      const counts: [string, number][] = [
        ['k1', 1],
        ['k3', 3],
        ['k2b', 2],
        ['k2a', 2],
      ];
      for (const [key, n] of counts) await store.scheduleMany(Array.from({ length: n }, (_, i) => ({ kind: 'sync', limitKey: key, payload: { i } })));
      await store.schedule({ kind: 'sync', limitKey: 'k0', delayMs: 60_000 });
      const keysOf = (entries: readonly KeyBacklogEntry[]) => entries.map((e) => `${e.limitKey}:${e.due}`);
      const first = await store.keyBacklog({ kind: 'sync', limit: 2 });
      expect(keysOf(first.entries)).toEqual(['k3:3', 'k2a:2']);
      expect(first.nextCursor).toEqual(expect.any(String));
      const second = await store.keyBacklog({ kind: 'sync', limit: 2, cursor: first.nextCursor });
      expect(keysOf(second.entries)).toEqual(['k2b:2', 'k1:1']);
      const third = await store.keyBacklog({ kind: 'sync', limit: 2, cursor: second.nextCursor });
      expect(keysOf(third.entries)).toEqual(['k0:0']);
      expect(third.nextCursor).toBeNull();
      // A page exactly full at the end has no cursor either.
      expect((await store.keyBacklog({ kind: 'sync', limit: 5 })).nextCursor).toBeNull();
    });

    it('keys with as many due tasks are in code-point order (as collate "C"), also across a page boundary', async () => {
      const store = backlogStore(h().store);
      // U+FFFD sorts before U+1F600 by code point, after it by UTF-16 code unit (a surrogate is 0xD83D).
      const keys = ['\u{1F600}', '\uFFFD', 'b', 'a'];
      for (const limitKey of keys) await store.schedule({ kind: 'sync', limitKey });
      expect((await store.keyBacklog({ kind: 'sync' })).entries.map((e) => e.limitKey)).toEqual(['a', 'b', '\uFFFD', '\u{1F600}']);
      const first = await store.keyBacklog({ kind: 'sync', limit: 3 });
      expect(first.entries.map((e) => e.limitKey)).toEqual(['a', 'b', '\uFFFD']);
      const second = await store.keyBacklog({ kind: 'sync', limit: 3, cursor: first.nextCursor });
      expect(second).toMatchObject({ entries: [{ limitKey: '\u{1F600}' }], nextCursor: null });
    });

    it('a task leaves its key when it is DONE, DEAD or CANCELLED; a keyed schedule in a rolled-back transaction leaves nothing', async () => {
      const store = backlogStore(h().store);
      const a = await store.schedule({ kind: 'sync', limitKey: 'A', maxAttempts: 1 });
      const b = await store.schedule({ kind: 'sync', limitKey: 'B' });
      const c = await store.schedule({ kind: 'sync', limitKey: 'C', delayMs: 60_000 });
      expect((await store.keyBacklog({ kind: 'sync' })).entries.map((e) => e.limitKey)).toEqual(['A', 'B', 'C']);
      const claimed = await store.claim({ owner: 'w1', limit: 2, leaseMs: LEASE_MS });
      expect(claimed.map((t) => t.id).sort()).toEqual([a.id, b.id].sort());
      expect((await store.keyBacklog({ kind: 'sync' })).entries.map((e) => [e.limitKey, e.claimed])).toEqual([
        ['A', 1],
        ['B', 1],
        ['C', 0],
      ]);
      const attemptOf = (id: string) => claimed.find((t) => t.id === id)?.attempt as number;
      expect(await store.fail({ id: a.id, attempt: attemptOf(a.id), error: 'boom', backoffMs: 0 })).toMatchObject({ outcome: TaskState.DEAD });
      await store.complete({ id: b.id, attempt: attemptOf(b.id), owner: 'w1' });
      expect(await store.cancel(c.id)).toBe('CANCELLED');
      expect((await store.keyBacklog({ kind: 'sync' })).entries).toEqual([]);

      await h().inTransaction(async (tx) => {
        await store.schedule({ kind: 'sync', limitKey: 'R' }, { tx });
      }, 'rollback');
      expect((await store.keyBacklog({ kind: 'sync' })).entries).toEqual([]);
      await h().inTransaction(async (tx) => {
        await store.schedule({ kind: 'sync', limitKey: 'T' }, { tx });
      }, 'commit');
      expect((await store.keyBacklog({ kind: 'sync' })).entries.map((e) => [e.limitKey, e.due])).toEqual([['T', 1]]);
    });

    it('a dedup key that matches a live task keeps that task and its limit key', async () => {
      const store = backlogStore(h().store);
      const first = await store.schedule({ kind: 'sync', key: 'd', limitKey: 'A' });
      const again = await store.schedule({ kind: 'sync', key: 'd', limitKey: 'B' });
      expect(again).toMatchObject({ id: first.id, created: false });
      expect((await store.keyBacklog({ kind: 'sync' })).entries.map((e) => [e.limitKey, e.due])).toEqual([['A', 1]]);
    });

    it('bad input is a ValidationError', async () => {
      const store = backlogStore(h().store);
      await expectValidationError(() => store.keyBacklog({ kind: '' }), 'INVALID_KIND', 'kind');
      await expectValidationError(() => store.keyBacklog({ kind: 'sync', limit: 0 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.keyBacklog({ kind: 'sync', limit: 1_001 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.keyBacklog({ kind: 'sync', limit: 2.5 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.keyBacklog({ kind: 'sync', cursor: 'nope' }), 'INVALID_OPTION', 'cursor');
      await expectValidationError(() => store.keyBacklog({ kind: 'sync', cursor: 'kb1:x:k' }), 'INVALID_OPTION', 'cursor');
      await expectValidationError(() => store.keyBacklog({ kind: 'sync', order: 'asc' } as never), 'INVALID_OPTION', 'order');
      await expectValidationError(() => store.keyBacklog(null as never), 'INVALID_OPTION', 'params');
      expect((await store.keyBacklog({ kind: 'sync', limit: 1_000 })).entries).toEqual([]);
    });
  });
}
