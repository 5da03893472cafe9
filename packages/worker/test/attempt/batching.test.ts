/**
 * Process-wide batching of the attempt's store calls, on the in-memory store with the worker's
 * clock under the test's control: the completion batcher's lease guard (a batched completion never
 * waits past its lease) and the lease renewer (renewals asked together go out as one extendMany,
 * each item fenced on its own).
 */
import { type ClaimedTask, overrideStore, TaskState, TestClock } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { ManualPacing } from '@postpone/wheel';
import { describe, expect, it } from 'vitest';
import { CompletionBatcher, LeaseRenewer } from '../../src/attempt/index.js';

const noEvents = { emit: () => {} };

async function claimed(store: ReturnType<typeof createMemoryStore>, n: number): Promise<ClaimedTask[]> {
  await store.scheduleMany(Array.from({ length: n }, () => ({ kind: 'ping' })));
  return await store.claim({ owner: 'w1', limit: n, leaseMs: 10_000 });
}

describe('CompletionBatcher lease guard', () => {
  it('holds completions for the batch delay while their leases last, and sends at once the one whose lease would end first', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    const [a, b, c] = await claimed(store, 3);
    if (!a || !b || !c) throw new Error('three tasks should be claimed');
    const batches: number[] = [];
    const counted = overrideStore(store, {
      completeMany: async (items) => {
        batches.push(items.length);
        return await store.completeMany(items);
      },
    });
    const pacing = new ManualPacing();
    const batcher = new CompletionBatcher({ store: counted, owner: 'w1', batchSize: 50, batchDelayMs: 500, pacing, events: noEvents });
    // Two completions with 10 s of lease left: they wait for the 500 ms delay.
    const first = batcher.complete(a, 1, pacing.now() + 10_000);
    const second = batcher.complete(b, 2, pacing.now() + 10_000);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([]);
    expect((await store.getTask(a.id))?.state).toBe(TaskState.CLAIMED);
    // A third whose lease ends in 200 ms (< the delay): the batch goes now, with all three.
    const third = batcher.complete(c, 3, pacing.now() + 200);
    expect(await Promise.all([first, second, third])).toEqual(['DONE', 'DONE', 'DONE']);
    expect(batches).toEqual([3]);
    expect(pacing.now()).toBe(0);
  });

  it('without a lease near its end, a batch is sent when the delay is over', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    const [a] = await claimed(store, 1);
    if (!a) throw new Error('one task should be claimed');
    const pacing = new ManualPacing();
    const batcher = new CompletionBatcher({ store, owner: 'w1', batchSize: 50, batchDelayMs: 500, pacing, events: noEvents });
    const done = batcher.complete(a, null, pacing.now() + 10_000);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    expect((await store.getTask(a.id))?.state).toBe(TaskState.CLAIMED);
    pacing.advance(500);
    expect(await done).toBe('DONE');
  });
});

describe('LeaseRenewer', () => {
  it('sends the renewals asked in one turn as one extendMany, and answers each by its own fence', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const [a, b, c] = await claimed(store, 3);
    if (!a || !b || !c) throw new Error('three tasks should be claimed');
    const calls: number[] = [];
    const counted = overrideStore(store, {
      extendMany: async (params) => {
        calls.push(params.items.length);
        return await store.extendMany(params);
      },
    });
    expect(await store.cancel(b.id)).toBe('REQUESTED');
    clock.tick(1_000);
    const renewer = new LeaseRenewer(counted, 20_000);
    const answers = await Promise.all([renewer.renew(a), renewer.renew({ id: b.id, attempt: b.attempt }), renewer.renew({ id: c.id, attempt: c.attempt + 1 })]);
    expect(answers).toEqual([true, false, false]);
    expect(calls).toEqual([3]);
    expect((await store.getTask(a.id))?.leaseUntil?.getTime()).toBe(clock.now() + 20_000);
    expect((await store.getTask(c.id))?.leaseUntil?.getTime()).toBe(clock.now() - 1_000 + 10_000);
  });
});
