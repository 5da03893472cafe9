/**
 * The `prune` option against real stores (memory, PostgreSQL): history older than `olderThanMs` is
 * deleted at start and then every `everyMs`; a failing prune is an `error` event, never a rejection;
 * nothing is pruned after stop.
 */
import { overrideStore, StoreError, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { createWorker, waitForEvent, type WorkerEvents } from '../src/index.js';
import { type Harness, perTest, STORE_HARNESSES, until } from './harness.js';

describe.each(STORE_HARNESSES)('scheduled prune (%s store)', (_name, makeHarness) => {
  let h: Harness<unknown>;
  const t = perTest();

  /** Three DONE tasks, one DEAD, one SCHEDULED far ahead; resolves once all history is in the past of the store clock. */
  async function history(): Promise<{ live: string; finished: string[] }> {
    const finished: string[] = [];
    for (const kind of ['a', 'b', 'c']) {
      const { id } = await h.store.schedule({ kind });
      const [task] = await h.store.claim({ owner: 'setup', limit: 1, leaseMs: 10_000 });
      expect(await h.store.complete({ id, attempt: task?.attempt as number, owner: 'setup' })).toBe('DONE');
      finished.push(id);
    }
    const dead = await h.store.schedule({ kind: 'd', maxAttempts: 1 });
    const [task] = await h.store.claim({ owner: 'setup', limit: 1, leaseMs: 10_000 });
    expect((await h.store.fail({ id: dead.id, attempt: task?.attempt as number, error: 'x', backoffMs: 0 })).outcome).toBe('DEAD');
    finished.push(dead.id);
    const live = await h.store.schedule({ kind: 'later', delayMs: 3_600_000 });
    const lastUpdate = (await h.store.getTask(dead.id))?.updatedAt.getTime() as number;
    await until(async () => (await h.store.now()).getTime() > lastUpdate, 'the store clock to pass the last finish');
    return { live: live.id, finished };
  }

  it('prunes at start in batches, then every everyMs, and stops with the worker', async () => {
    h = await t.open(makeHarness);
    const { live, finished } = await history();
    const pruned: WorkerEvents['pruned'][] = [];
    const worker = createWorker({ store: h.store, id: 'pruner', handlers: { later: async () => null }, prune: { olderThanMs: 0, everyMs: 50, batchSize: 2 } });
    t.track(worker);
    worker.on('pruned', (e) => pruned.push(e));
    worker.start();
    await until(() => pruned.length >= 3, 'three prunes');
    expect(pruned[0]).toMatchObject({ deleted: 4, effectsDeleted: 0, batches: 3 });
    expect(pruned[1]).toMatchObject({ deleted: 0, effectsDeleted: 0, batches: 1 });
    for (const e of pruned) expect(e.durationMs).toBeGreaterThanOrEqual(0);
    for (const id of finished) expect(await h.store.getTask(id)).toBeNull();
    expect((await h.store.getTask(live))?.state).toBe(TaskState.SCHEDULED);
    await worker.stop();
    const after = pruned.length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(pruned.length).toBe(after);
  });

  it('keeps history younger than olderThanMs', async () => {
    h = await t.open(makeHarness);
    const { finished } = await history();
    const worker = createWorker({ store: h.store, handlers: { later: async () => null }, prune: { olderThanMs: 3_600_000, everyMs: 60_000 } });
    t.track(worker);
    const pruned = waitForEvent(worker, 'pruned');
    worker.start();
    expect((await pruned)[0]).toMatchObject({ deleted: 0 });
    for (const id of finished) expect(await h.store.getTask(id)).not.toBeNull();
  });

  it('with retention, calls store.prune({ retention }): history within it and states it does not name are kept', async () => {
    h = await t.open(makeHarness);
    const { finished } = await history();
    const calls: unknown[] = [];
    const store = overrideStore(h.store, {
      prune: async (params) => {
        calls.push(params);
        return await h.store.prune(params);
      },
    });
    const worker = createWorker({ store, handlers: { later: async () => null }, prune: { retention: { DEAD: 3_600_000 }, everyMs: 60_000 } });
    t.track(worker);
    const pruned = waitForEvent(worker, 'pruned');
    worker.start();
    expect((await pruned)[0]).toMatchObject({ deleted: 0, effectsDeleted: 0 });
    expect(calls).toEqual([{ retention: { DEAD: 3_600_000 }, batchSize: 1_000 }]);
    for (const id of finished) expect(await h.store.getTask(id)).not.toBeNull();
  });

  it('turns a failing prune into error events and tries again at the next period; stop still resolves', async () => {
    h = await t.open(makeHarness);
    let calls = 0;
    const store = overrideStore(h.store, {
      prune: async () => {
        calls += 1;
        throw new StoreError('prune refused by the test', undefined);
      },
    });
    const worker = createWorker({ store, handlers: { later: async () => null }, prune: { olderThanMs: 0, everyMs: 20 } });
    t.track(worker);
    const errors = waitForEvent(worker, 'error', { count: 2, filter: (e) => e.operation === 'prune' });
    worker.start();
    const [first] = await errors;
    expect(first?.error).toBeInstanceOf(StoreError);
    expect(String(first?.error)).toContain('prune refused by the test');
    expect(worker.state).toBe('running');
    await worker.stop();
    const after = calls;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(calls).toBe(after);
  });
});
