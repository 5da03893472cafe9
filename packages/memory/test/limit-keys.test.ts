/**
 * The memory store's limit keys (the column `task.limit_key`, docs/contract.md#per-key-concurrency)
 * live only as long as their task is SCHEDULED or CLAIMED: every way out of the live set — complete
 * (kept or not), fail to DEAD, cancel, cancelMany, a dependent cancelled by its dependency's death —
 * removes the entry, and a rolled-back schedule never adds one. Read through the test seam
 * `limitKeyCount()`.
 */
import { TaskState, TestClock } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../src/index.js';

describe('memory limit keys', () => {
  it('falls back to 0 entries once every keyed task has left the live set', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    await store.setKeyConcurrency({ kind: 'k', limit: 100 });
    const done = await store.scheduleMany([0, 1].map((i) => ({ kind: 'k', limitKey: `done-${i}` })));
    const dead = await store.schedule({ kind: 'k', limitKey: 'dead', maxAttempts: 1 });
    const [parent, child] = await store.scheduleMany([
      { kind: 'k', limitKey: 'parent', maxAttempts: 1 },
      { kind: 'k', limitKey: 'child', after: [{ index: 0, onFailure: 'cancel' }] },
    ]);
    const cancelled = await store.schedule({ kind: 'k', limitKey: 'cancel', delayMs: 60_000 });
    await store.scheduleMany([0, 1, 2].map((i) => ({ kind: 'bulk', limitKey: `bulk-${i}`, delayMs: 60_000 })));
    const unkeyed = await store.schedule({ kind: 'k' }); // no limit key: no entry
    expect(store.limitKeyCount()).toBe(9);

    await store
      .transaction(async (tx) => {
        await store.schedule({ kind: 'k', limitKey: 'rolled-back' }, { tx });
        throw new Error('rollback');
      })
      .catch(() => undefined);
    expect(store.limitKeyCount()).toBe(9);

    const claimed = await store.claim({ owner: 'w', limit: 10, leaseMs: 60_000, kinds: ['k'] });
    const attempt = (id: string) => claimed.find((t) => t.id === id)?.attempt as number;
    expect(claimed.map((t) => t.id).sort()).toEqual([done[0]?.id, done[1]?.id, dead.id, parent?.id, unkeyed.id].sort());
    expect(store.limitKeyCount()).toBe(9); // CLAIMED tasks keep their key
    await store.complete({ id: done[0]?.id as string, attempt: attempt(done[0]?.id as string), owner: 'w' });
    await store.complete({ id: done[1]?.id as string, attempt: attempt(done[1]?.id as string), owner: 'w', keep: false });
    expect(await store.fail({ id: dead.id, attempt: attempt(dead.id), error: 'boom', backoffMs: 0 })).toMatchObject({ outcome: TaskState.DEAD });
    expect(await store.fail({ id: parent?.id as string, attempt: attempt(parent?.id as string), error: 'boom', backoffMs: 0 })).toMatchObject({ outcome: TaskState.DEAD });
    expect((await store.getTask(child?.id as string))?.state).toBe(TaskState.CANCELLED);
    expect(store.limitKeyCount()).toBe(4);
    expect(await store.cancel(cancelled.id)).toBe('CANCELLED');
    expect((await store.cancelMany({ kinds: ['bulk'] })).counts.CANCELLED).toBe(3);
    expect(store.limitKeyCount()).toBe(0);
    expect((await store.keyBacklog({ kind: 'k' })).entries).toEqual([]);
  });
});
