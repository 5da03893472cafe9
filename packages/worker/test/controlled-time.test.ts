/**
 * The worker with both clocks under the test's control: the store's clock (TestClock, in the
 * in-memory store) and the worker's monotonic pacing (ManualPacing). Nothing here waits on real time.
 */
import { overrideStore, TaskState, TestClock } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { describe, expect, it } from 'vitest';
import { createWorker, ManualPacing, waitForEvent, type WorkerEvents } from '../src/index.js';
import { gate, until } from './harness.js';

describe('worker under controlled time', () => {
  it('renews on the monotonic clock every renewEveryMs and aborts once the store lets the lease lapse', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const pacing = new ManualPacing();
    const release = gate();
    const worker = createWorker({
      store,
      pacing,
      leaseMs: 1_000,
      renewEveryMs: 300,
      handlers: { ping: async (_task, ctx) => Promise.race([release.promise, new Promise((r) => ctx.signal.addEventListener('abort', r))]) },
    });
    const renewals: WorkerEvents['renewed'][] = [];
    worker.on('renewed', (e) => renewals.push(e));
    const { id } = await store.schedule({ kind: 'ping' });
    await worker.runOnce();
    // Two sleeps while the handler runs: its time limit (handlerTimeoutMs) and the renewal.
    await until(() => pacing.pendingCount > 1, 'the renewal timer');

    pacing.advance(299);
    expect(renewals).toHaveLength(0);
    const first = waitForEvent(worker, 'renewed');
    clock.tick(299);
    pacing.advance(1);
    await first;
    expect((await store.getTask(id))?.leaseUntil?.getTime()).toBe(clock.now() + 1_000);

    const second = waitForEvent(worker, 'renewed');
    await until(() => pacing.pendingCount > 1, 'the next renewal timer');
    clock.tick(300);
    pacing.advance(300);
    await second;
    expect((await store.getTask(id))?.leaseUntil?.getTime()).toBe(clock.now() + 1_000);

    // The store's clock jumps past the lease (a stalled process); the next renewal is refused.
    await until(() => pacing.pendingCount > 1, 'the third renewal timer');
    clock.tick(1_001);
    const lost = waitForEvent(worker, 'leaseLost');
    pacing.advance(300);
    expect((await lost)[0]?.reason).toBe('lease-lost');
    expect(renewals).toHaveLength(2);
    await worker.idle();
    await worker.stop({ timeoutMs: 0 });
  });

  it('makes a failed task due again exactly backoffBaseMs × 2^(attempt−1) later (store clock)', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const worker = createWorker({
      store,
      pacing: new ManualPacing(),
      backoffBaseMs: 200,
      handlers: {
        flaky: async (_task, ctx) => {
          if (ctx.attempt < 3) throw new Error(`attempt ${ctx.attempt} failed`);
          return 'done';
        },
      },
    });
    const { id } = await store.schedule({ kind: 'flaky' });
    const failures: WorkerEvents['failed'][] = [];
    worker.on('failed', (e) => failures.push(e));

    expect(await worker.runOnce()).toHaveLength(1);
    await worker.idle();
    expect(failures.at(-1)?.result).toEqual({ outcome: 'SCHEDULED', dueAt: new Date(clock.now() + 200) });
    clock.tick(199);
    expect(await worker.runOnce()).toEqual([]);
    clock.tick(1);
    expect((await worker.runOnce()).map((t) => t.attempt)).toEqual([2]);
    await worker.idle();
    expect(failures.at(-1)?.result).toEqual({ outcome: 'SCHEDULED', dueAt: new Date(clock.now() + 400) });
    clock.tick(399);
    expect(await worker.runOnce()).toEqual([]);
    clock.tick(1);
    expect((await worker.runOnce()).map((t) => t.attempt)).toEqual([3]);
    await worker.idle();
    expect(await store.getTask(id)).toMatchObject({ state: TaskState.DONE, attempt: 3, result: 'done', failures: 2, lastError: null });
    await worker.stop({ timeoutMs: 0 });
  });

  it('caps the backoff at maxBackoffMs', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const worker = createWorker({
      store,
      pacing: new ManualPacing(),
      backoffBaseMs: 1_000,
      maxBackoffMs: 1_500,
      handlers: {
        broken: async () => {
          throw new Error('no');
        },
      },
    });
    await store.schedule({ kind: 'broken', maxAttempts: 3 });
    const dueAts: number[] = [];
    worker.on('failed', (e) => e.result.outcome === 'SCHEDULED' && dueAts.push(e.result.dueAt.getTime() - clock.now()));
    await worker.runOnce();
    await worker.idle();
    clock.tick(1_000);
    await worker.runOnce();
    await worker.idle();
    expect(dueAts).toEqual([1_000, 1_500]);
    await worker.stop({ timeoutMs: 0 });
  });

  it('paces the loop: polls every pollIntervalMs and reclaims every reclaimEveryMs', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const pacing = new ManualPacing();
    const counts = { claim: 0, reclaimExpired: 0 };
    const counted = overrideStore(store, {
      claim: (params) => {
        counts.claim += 1;
        return store.claim(params);
      },
      reclaimExpired: (params) => {
        counts.reclaimExpired += 1;
        return store.reclaimExpired(params);
      },
    });
    const worker = createWorker({ store: counted, pacing, leaseMs: 10_000, pollIntervalMs: 100, reclaimEveryMs: 250, handlers: { ping: async () => 'pong' } });
    worker.start();
    await until(() => counts.claim === 1 && pacing.pendingCount === 1, 'the first claim');
    expect(counts.reclaimExpired).toBe(1);
    for (let i = 2; i <= 5; i++) {
      pacing.advance(100);
      await until(() => counts.claim === i && pacing.pendingCount === 1, `claim ${i}`);
    }
    // Reclaims at 0 and 250 (after the poll at 200 the loop sleeps only up to 250).
    expect(counts.reclaimExpired).toBe(2);
    const done = waitForEvent(worker, 'completed');
    await store.schedule({ kind: 'ping' });
    pacing.advance(100);
    expect((await done)[0]?.outcome).toBe('DONE');
    await worker.stop({ timeoutMs: 0 });
    expect(worker.state).toBe('stopped');
  });
});
