/**
 * The local queue (`prefetch`, docs/contract.md#local-queue): tasks claimed ahead of free slots keep
 * their leases while they wait (renewed in one extendMany), are never run once the store refused to
 * renew them, and are handed back at once on stop without a failure counted. States, attempts and
 * failures are read from the real stores; under controlled time nothing waits on the wall clock.
 */
import { TaskState, TestClock, type TaskId } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { describe, expect, it } from 'vitest';
import { createWorker, ManualPacing, type WorkerEvents } from '../src/index.js';
import { gate, perTest, STORE_HARNESSES, until } from './harness.js';

describe('local queue under controlled time (memory store)', () => {
  it('renews the leases of queued tasks past several lease lengths, then runs them at the attempt they were claimed with', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const pacing = new ManualPacing();
    const hold = gate();
    const ran: { id: TaskId; attempt: number }[] = [];
    let extendManyCalls = 0;
    const counted = new Proxy(store, {
      get(target, property) {
        if (property === 'extendMany') {
          return (...args: Parameters<typeof store.extendMany>) => {
            extendManyCalls += 1;
            return target.extendMany(...args);
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const worker = createWorker({
      store: counted,
      pacing,
      concurrency: 1,
      prefetch: 2,
      leaseMs: 1_000,
      renewEveryMs: 300,
      handlers: {
        ping: async (task) => {
          ran.push({ id: task.id, attempt: task.attempt });
          await hold.promise;
        },
      },
    });
    const ids = (await store.scheduleMany([{ kind: 'ping' }, { kind: 'ping' }, { kind: 'ping' }])).map((s) => s.id);
    const claimed = await worker.runOnce();
    expect(claimed.map((t) => t.attempt)).toEqual([1, 1, 1]);
    expect(worker.inFlight).toBe(1);
    expect(worker.queued).toBe(2);
    // 2 500 ms of both clocks, 2.5 lease lengths, in steps of 100 ms.
    for (let step = 0; step < 25; step++) {
      await until(() => pacing.pendingCount > 0, 'a renewal timer');
      clock.tick(100);
      pacing.advance(100);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await store.reclaimExpired()).toEqual([]);
    for (const id of ids) {
      const task = await store.getTask(id);
      expect(task?.state).toBe(TaskState.CLAIMED);
      expect(task?.attempt).toBe(1);
      expect(task?.leaseUntil?.getTime()).toBeGreaterThan(clock.now());
    }
    // The running task's keeper and the queue renew together: far fewer statements than leases renewed.
    expect(extendManyCalls).toBeGreaterThanOrEqual(5);
    expect(extendManyCalls).toBeLessThanOrEqual(9);
    hold.open();
    await until(async () => (await store.countByState()).DONE === 3, 'all three DONE');
    await worker.idle();
    expect(ran.map((r) => r.attempt)).toEqual([1, 1, 1]);
    expect(new Set(ran.map((r) => r.id))).toEqual(new Set(ids));
    for (const id of ids) expect((await store.getTask(id))?.failures).toBe(0);
    await worker.stop({ timeoutMs: 0 });
  });

  it('never runs a queued task whose lease the store refused to renew (cancel requested): it ends CANCELLED, not run', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const pacing = new ManualPacing();
    const hold = gate();
    const ran: TaskId[] = [];
    const worker = createWorker({
      store,
      pacing,
      concurrency: 1,
      prefetch: 1,
      leaseMs: 1_000,
      renewEveryMs: 300,
      handlers: {
        ping: async (task) => {
          ran.push(task.id);
          await hold.promise;
        },
      },
    });
    const released: WorkerEvents['released'][] = [];
    worker.on('released', (e) => released.push(e));
    await store.scheduleMany([{ kind: 'ping' }, { kind: 'ping' }]);
    const [first, second] = await worker.runOnce();
    if (!first || !second) throw new Error('two tasks should be claimed');
    expect(worker.queued).toBe(1);
    expect(await store.cancel(second.id)).toBe('REQUESTED');
    await until(() => pacing.pendingCount > 0, 'the renewal timer');
    clock.tick(300);
    pacing.advance(300);
    await until(() => released.length === 1, 'the refused task handed back');
    expect(released[0]?.task.id).toBe(second.id);
    expect(worker.queued).toBe(0);
    expect((await store.getTask(second.id))?.state).toBe(TaskState.CANCELLED);
    hold.open();
    await until(async () => (await store.getTask(first.id))?.state === TaskState.DONE, 'the first task DONE');
    await worker.idle();
    expect(ran).toEqual([first.id]);
    await worker.stop({ timeoutMs: 0 });
  });
});

describe.each(STORE_HARNESSES)('local queue on the %s store', (_name, make) => {
  const t = perTest();

  it('stop() hands queued tasks back at once, with no failure counted, while the running one finishes', async () => {
    const h = await t.open(make);
    const hold = gate();
    const started = gate();
    const worker = t.track(
      createWorker({
        store: h.store,
        concurrency: 1,
        prefetch: 3,
        handlers: {
          ping: async () => {
            started.open();
            await hold.promise;
            return 'ok';
          },
        },
      }),
    );
    const ids = (await h.store.scheduleMany([{ kind: 'ping' }, { kind: 'ping' }, { kind: 'ping' }, { kind: 'ping' }])).map((s) => s.id);
    const claimed = await worker.runOnce();
    expect(claimed).toHaveLength(4);
    await started.promise;
    expect(worker.queued).toBe(3);
    const running = [...ids].find((id) => !claimed.slice(1).some((c) => c.id === id)) as TaskId;
    const stopping = worker.stop({ timeoutMs: 60_000 });
    // The queued three are back in SCHEDULED while the running handler still holds its slot.
    await until(async () => (await h.store.countByState()).SCHEDULED === 3, 'the queued tasks handed back');
    expect(worker.queued).toBe(0);
    expect((await h.store.getTask(running))?.state).toBe(TaskState.CLAIMED);
    for (const c of claimed.slice(1)) {
      const task = await h.store.getTask(c.id);
      expect(task).toMatchObject({ state: TaskState.SCHEDULED, attempt: 1, failures: 0 });
    }
    hold.open();
    expect(await stopping).toEqual({ handedBack: 3, handBackFailed: 0 });
    expect((await h.store.getTask(running))?.state).toBe(TaskState.DONE);
    // Claimed again by another worker: the next attempt, still no failure.
    const again = await h.store.claim({ owner: 'other', limit: 10, leaseMs: 30_000 });
    expect(again.map((c) => [c.attempt, c.failures])).toEqual([
      [2, 0],
      [2, 0],
      [2, 0],
    ]);
  });

  it('one claim serves many tasks: concurrency 2 with prefetch 8 runs 30 tasks, each once, in at most 8 claims that found tasks', async () => {
    const h = await t.open(make);
    const ran = new Map<TaskId, number>();
    const sizes: number[] = [];
    const counting = new Proxy(h.store, {
      get(target, property) {
        if (property === 'claim') {
          return async (...args: Parameters<typeof h.store.claim>) => {
            const tasks = await target.claim(...args);
            if (tasks.length > 0) sizes.push(tasks.length);
            return tasks;
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await h.store.scheduleMany(Array.from({ length: 30 }, () => ({ kind: 'ping' })));
    const worker = t.track(
      createWorker({
        store: counting,
        concurrency: 2,
        prefetch: 8,
        pollIntervalMs: 20,
        handlers: {
          ping: async (task) => {
            ran.set(task.id, (ran.get(task.id) ?? 0) + 1);
          },
        },
      }),
    );
    worker.start();
    await until(async () => (await h.store.countByState()).DONE === 30, 'all 30 DONE');
    await worker.stop({ timeoutMs: 1_000 });
    expect(ran.size).toBe(30);
    expect([...ran.values()].every((n) => n === 1)).toBe(true);
    // Claims that found tasks: the first takes 10 (concurrency + prefetch), the next ones ask for
    // at least half of that; without prefetch it would take at least 15 claims of 2.
    expect(sizes[0]).toBe(10);
    expect(sizes.reduce((a, n) => a + n, 0)).toBe(30);
    expect(sizes.length).toBeLessThanOrEqual(8);
  });
});
