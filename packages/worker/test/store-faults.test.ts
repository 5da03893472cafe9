/**
 * The worker when the store misbehaves: lost connections, a claim answered after stop() began, and
 * several workers reclaiming at once. In-memory store behind a fault-injecting wrapper.
 */
import { ConnectionError, ConnectionLostError, TaskState, TestClock } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { describe, expect, it } from 'vitest';
import { createWorker, ManualPacing, waitForEvent, type WorkerEvents } from '../src/index.js';
import { faultyStore } from './faulty-store.js';
import { gate, until } from './harness.js';

describe('worker against a faulty store', () => {
  it.each([
    ['complete', 1],
    ['completeMany', 50],
  ] as const)('retries a %s whose connection was lost, and completes once', async (method, completeBatchSize) => {
    const store = createMemoryStore();
    const errors: WorkerEvents['error'][] = [];
    const worker = createWorker({
      store: faultyStore(store, {
        [method]: (n: number) => {
          if (n === 1) throw new ConnectionLostError('connection reset (injected)');
        },
      }),
      handlers: { ping: async () => 'pong' },
      completeBatchSize,
    });
    worker.on('error', (e) => errors.push(e));
    const { id } = await store.schedule({ kind: 'ping' });
    const completed = waitForEvent(worker, 'completed');
    await worker.runOnce();
    expect((await completed)[0]?.outcome).toBe('DONE');
    expect(errors.map((e) => e.operation)).toEqual(['complete']);
    expect(await store.getTask(id)).toMatchObject({ state: TaskState.DONE, result: 'pong' });
    await worker.stop({ timeoutMs: 0 });
  });

  it.each(['complete', 'fail'] as const)('retries a %s refused while the database restarts (transient ConnectionError)', async (method) => {
    const store = createMemoryStore();
    const errors: WorkerEvents['error'][] = [];
    const worker = createWorker({
      store: faultyStore(store, {
        [method]: (n: number) => {
          if (n <= 2) throw new ConnectionError('REFUSED', 'connect ECONNREFUSED 127.0.0.1:5432 (injected)', undefined);
        },
      }),
      handlers: {
        ping: async () => {
          if (method === 'fail') throw new Error('handler fails');
          return 'pong';
        },
      },
      completeBatchSize: 1,
    });
    worker.on('error', (e) => errors.push(e));
    const { id } = await store.schedule({ kind: 'ping' });
    const reported = waitForEvent(worker, method === 'complete' ? 'completed' : 'failed');
    await worker.runOnce();
    await reported;
    expect(errors.map((e) => e.operation)).toEqual([method, method]);
    const task = await store.getTask(id);
    if (method === 'complete') expect(task).toMatchObject({ state: TaskState.DONE, result: 'pong', failures: 0 });
    else expect(task).toMatchObject({ state: TaskState.SCHEDULED, failures: 1 });
    await worker.stop({ timeoutMs: 0 });
  });

  it('does not retry a complete refused for a lasting reason, nor count it as the handler failing', async () => {
    const store = createMemoryStore();
    const errors: WorkerEvents['error'][] = [];
    const worker = createWorker({
      store: faultyStore(store, {
        complete: () => {
          throw new ConnectionError('AUTHENTICATION', 'password authentication failed (injected)', '28P01');
        },
      }),
      handlers: { ping: async () => 'pong' },
      completeBatchSize: 1,
    });
    worker.on('error', (e) => errors.push(e));
    let failedEvents = 0;
    worker.on('failed', () => (failedEvents += 1));
    const { id } = await store.schedule({ kind: 'ping' });
    await worker.runOnce();
    await until(() => errors.length >= 1, 'the complete error', 2_000);
    await worker.stop({ timeoutMs: 1_000 });
    expect(errors.map((e) => e.operation)).toEqual(['complete']);
    expect(failedEvents).toBe(0);
    expect((await store.getTask(id))?.failures).toBe(0);
  });

  it('presumes the lease lost when extend keeps failing until the lease would have run out', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const pacing = new ManualPacing();
    const worker = createWorker({
      // The worker renews through extendMany (one statement for the renewals due together).
      store: faultyStore(store, {
        extendMany: () => {
          throw new ConnectionLostError('database unreachable (injected)');
        },
      }),
      pacing,
      leaseMs: 1_000,
      renewEveryMs: 300,
      handlers: { ping: (_task, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('stopped'))) },
    });
    const extendErrors: WorkerEvents['error'][] = [];
    worker.on('error', (e) => e.operation === 'extend' && extendErrors.push(e));
    let lostAt: number | null = null;
    worker.on('leaseLost', (e) => (lostAt = e.reason === 'lease-lost' ? pacing.now() : -1));
    await store.schedule({ kind: 'ping' });
    await worker.runOnce();
    // Renewals fail at 300, 600, 800, 900, 950…: retried sooner as the local deadline (claim + 1 000) nears.
    for (let i = 0; i < 100 && lostAt === null; i++) {
      // The handler's time limit (handlerTimeoutMs) is always one pending sleep; the renewal the other.
      await until(() => lostAt !== null || pacing.pendingCount > 1, 'the next renewal timer');
      pacing.advance(25);
    }
    await until(() => lostAt !== null, 'leaseLost');
    expect(lostAt).toBeGreaterThanOrEqual(1_000);
    expect(lostAt).toBeLessThanOrEqual(1_025);
    expect(extendErrors.length).toBeGreaterThanOrEqual(5);
    await worker.idle();
    await worker.stop({ timeoutMs: 0 });
  });

  it('hands back at once the tasks of a claim that returns after stop() began', async () => {
    const store = createMemoryStore();
    const slowClaim = gate();
    const claimStarted = gate();
    const worker = createWorker({
      store: faultyStore(store, {
        claim: async () => {
          claimStarted.open();
          await slowClaim.promise;
        },
      }),
      handlers: { ping: async () => 'pong' },
    });
    const [a, b] = await store.scheduleMany([{ kind: 'ping' }, { kind: 'ping' }]);
    const released = waitForEvent(worker, 'released', { count: 2 });
    const running = worker.runOnce();
    await claimStarted.promise;
    const stopped = worker.stop({ timeoutMs: 10_000 });
    slowClaim.open();
    expect(await running).toHaveLength(2);
    expect((await released).map((e) => e.outcome)).toEqual(['SCHEDULED', 'SCHEDULED']);
    expect(await stopped).toEqual({ handedBack: 2, handBackFailed: 0 });
    for (const t of [a, b]) expect(await store.getTask(t!.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 1, lastError: null });
  });

  it('lets several workers reclaim the same expired leases at once; each task is reclaimed once', async () => {
    const store = createMemoryStore();
    const scheduled = await store.scheduleMany(Array.from({ length: 30 }, () => ({ kind: 'ping' })));
    expect(await store.claim({ owner: 'ghost', limit: 30, leaseMs: 60_000 })).toHaveLength(30);
    for (const s of scheduled) await store.rawUpdateTask(s.id, { leaseUntil: new Date(Date.now() - 1_000) });
    const workers = [1, 2, 3].map(() => createWorker({ store, handlers: { ping: async () => 'pong' } }));
    const results = await Promise.all(workers.flatMap((w) => [w.reclaim(), w.reclaim()]));
    const ids = results.flat().map((t) => t.id);
    expect(ids).toHaveLength(30);
    expect(new Set(ids)).toEqual(new Set(scheduled.map((s) => s.id)));
    expect((await store.countByState()).SCHEDULED).toBe(30);
  });
});
