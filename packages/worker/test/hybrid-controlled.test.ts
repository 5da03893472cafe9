/**
 * Hybrid discovery with both clocks under the test's control: the store's clock (TestClock, in the
 * in-memory store) and the worker's monotonic pacing (ManualPacing). The two start decades apart, so
 * a timer can only be right if it is placed by the store's time. Nothing here waits on real time.
 */
import { ConnectionLostError, overrideStore, type Store, type TaskId, TestClock } from '@postpone/core';
import { createMemoryStore, type MemoryStore } from '@postpone/memory';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorker, type HybridOptions, ManualPacing, type Worker, type WorkerEvents } from '../src/index.js';
import { type CountingStore, countingStore } from './counting-store.js';
import { gate, until } from './harness.js';

interface Rig {
  readonly clock: TestClock;
  readonly pacing: ManualPacing;
  readonly memory: MemoryStore;
  readonly counted: CountingStore<unknown>;
  readonly worker: Worker<unknown>;
  readonly claimed: WorkerEvents['claimed'][];
  /** Moves both clocks forward together. */
  advance(ms: number): void;
}

const workers: Worker<unknown>[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 0 })));
});

/** A started hybrid worker on an in-memory store (no notifications unless `wrap` adds them). */
function rig(options: { hybrid?: HybridOptions; concurrency?: number; handler?: () => Promise<unknown>; wrap?: (store: Store<unknown>) => Store<unknown> } = {}): Rig {
  const clock = new TestClock();
  const pacing = new ManualPacing(12_345);
  const memory = createMemoryStore({ clock });
  const counted = countingStore<unknown>((options.wrap ?? ((s) => s))(memory as Store<unknown>));
  const worker = createWorker<unknown>({
    store: counted.store,
    pacing,
    discovery: 'hybrid',
    hybrid: { fallbackPollMs: 60_000, ...options.hybrid },
    concurrency: options.concurrency ?? 10,
    reclaimEveryMs: 1_000_000,
    handlers: { job: options.handler ?? (async () => 'ok') },
  });
  workers.push(worker);
  const claimed: WorkerEvents['claimed'][] = [];
  worker.on('claimed', (e) => claimed.push(e));
  return {
    clock,
    pacing,
    memory,
    counted,
    worker,
    claimed,
    advance: (ms) => {
      clock.tick(ms);
      pacing.advance(ms);
    },
  };
}

/**
 * Started, first load merged, the loop asleep. Nothing was due, so no claim was sent: the first load
 * listed everything, so a claim owed on start would only come back empty.
 */
/** A hand-driven notification channel for `overrideStore(…, { listen })`: the test sends notices and reconnects. */
function handDrivenChannel() {
  let notify: ((notice: unknown) => void) | undefined;
  let reconnect: (() => void) | undefined;
  return {
    listen: async (onNotice: (notice: unknown) => void, options?: { onReconnect?: () => void }) => {
      notify = onNotice;
      reconnect = options?.onReconnect;
      return async () => {
        notify = undefined;
      };
    },
    notify: (notice: unknown) => notify?.(notice),
    reconnect: () => reconnect?.(),
    listening: () => notify !== undefined,
  };
}

async function started(r: Rig, sleeps = 3): Promise<void> {
  r.worker.start();
  await until(() => r.worker.discovery.rebuilds.start === 1 && r.pacing.pendingCount === sleeps, 'the start load');
  expect(r.counted.calls.claim).toBe(0);
}

describe('hybrid discovery under controlled time', () => {
  it('claims at the first tick after the due time — not before — with one claim per timer', async () => {
    const r = rig();
    const { id, dueAt } = await r.memory.schedule({ kind: 'job', delayMs: 300 });
    await started(r);
    expect(r.worker.discovery).toMatchObject({ mode: 'hybrid', wheelSize: 1, listening: false });
    // Due at 300; listed as whole ms, so the timer is at 301, ceiled to the 2 ms tick: 302.
    r.advance(301);
    expect(r.counted.calls.claim).toBe(0);
    r.advance(1);
    await until(() => r.claimed.length === 1, 'the claim at the tick');
    expect(r.claimed[0]?.task.id).toBe(id);
    expect(r.claimed[0]?.task.claimedAt.getTime()).toBe(dueAt.getTime() + 2);
    expect(r.counted.calls).toEqual({ claim: 1, emptyClaims: 0, peekDue: 1 });
    expect(r.worker.discovery.claimsByCause).toMatchObject({ own: { claims: 1, empty: 0 }, start: { claims: 0, empty: 0 } });
    expect(r.worker.discovery).toMatchObject({ wheelSize: 0, fired: 1 });
  });

  it('holds timers only for tasks it may claim: its handlers\' kinds, its queue', async () => {
    const r = rig();
    const { id } = await r.memory.schedule({ kind: 'job', delayMs: 300 });
    await r.memory.scheduleMany([
      { kind: 'other', delayMs: 100 },
      { kind: 'job', queue: 'reports', delayMs: 200 },
    ]);
    await started(r);
    expect(r.worker.discovery.wheelSize).toBe(1);
    r.advance(302);
    await until(() => r.claimed.length === 1, 'the claim of the job');
    expect(r.claimed.map((c) => c.task.id)).toEqual([id]);
    // No timer of the others fired: only the job's claim.
    expect(r.worker.discovery.fired).toBe(1);
    expect(r.counted.calls.claim).toBe(1);
  });

  it('makes no claim while idle: one read of the store per fallback period', async () => {
    const r = rig({ hybrid: { fallbackPollMs: 1_000 } });
    await started(r);
    for (let i = 1; i <= 10; i++) {
      r.advance(500);
      r.advance(500);
      await until(() => r.worker.discovery.rebuilds.fallback === i, `fallback read ${i}`);
    }
    expect(r.counted.calls).toEqual({ claim: 0, emptyClaims: 0, peekDue: 11 });
  });

  it('loads a task due beyond its window when it comes within it, and claims it on time', async () => {
    // Horizon 64² × 1 ms = 4 096 ms; loads reach 2 048 ms ahead.
    const r = rig({ hybrid: { tickMs: 1, levels: 2, fallbackPollMs: 1_000, pauseThresholdMs: 600_000 } });
    const { dueAt } = await r.memory.schedule({ kind: 'job', delayMs: 3_000 });
    await started(r);
    expect(r.worker.discovery.wheelSize).toBe(0);
    r.advance(1_000);
    await until(() => r.worker.discovery.rebuilds.fallback === 1 && r.worker.discovery.wheelSize === 1, 'the task loaded');
    r.advance(1_000);
    await until(() => r.worker.discovery.rebuilds.fallback === 2, 'the next fallback read');
    r.advance(1_000);
    expect(r.counted.calls.claim).toBe(0);
    r.advance(1);
    await until(() => r.claimed.length === 1, 'the claim');
    expect(r.claimed[0]?.task.claimedAt.getTime()).toBe(dueAt.getTime() + 1);
    expect(r.counted.calls.claim).toBe(1);
  });

  it('owes the claim of a timer that fired while no slot was free, and pays it as soon as one frees', async () => {
    const hold = gate();
    let calls = 0;
    const r = rig({ concurrency: 1, handler: async () => (++calls === 1 ? hold.promise : 'second') });
    const first = await r.memory.schedule({ kind: 'job' });
    const second = await r.memory.schedule({ kind: 'job', delayMs: 100 });
    r.worker.start();
    await until(() => r.worker.discovery.rebuilds.start === 1 && r.pacing.pendingCount === 3, 'the start load');
    // Due now (listed as whole ms): its timer fires at the next tick.
    r.advance(2);
    // Five sleeps: the heartbeat, the next fallback read, the loop, and the running task's lease renewal and time limit.
    await until(() => r.claimed.length === 1 && r.pacing.pendingCount === 5, 'the first task running, the loop asleep');
    expect(r.claimed[0]?.task.id).toBe(first.id);
    r.advance(498);
    expect(r.counted.calls.claim).toBe(1);
    hold.open();
    await until(() => r.claimed.length === 2, 'the second claim');
    expect(r.claimed[1]?.task.id).toBe(second.id);
    // That claim came back full (1 of 1), but no fired timer is left untaken and the load was not cut:
    // nothing more is known to be due, so no claim follows when the slot frees (it would come back empty).
    await until(() => r.claimed.length === 2 && r.pacing.pendingCount === 3, 'the loop asleep again');
    expect(r.counted.calls).toEqual({ claim: 2, emptyClaims: 0, peekDue: 1 });
    expect(r.worker.discovery.claimsByCause).toMatchObject({ own: { claims: 2, empty: 0 }, full: { claims: 0, empty: 0 } });
  });

  it('after a pause rebuilds from the store at once and claims what became due', async () => {
    const r = rig({ hybrid: { pauseThresholdMs: 1_000 } });
    await started(r);
    // Scheduled behind the worker's back (this store sends no notifications; the next fallback read is a minute away).
    const { id } = await r.memory.schedule({ kind: 'job', delayMs: 500 });
    r.advance(400);
    expect(r.worker.discovery.rebuilds.gap).toBe(0);
    r.advance(10_000); // the heartbeat wakes ~9.9 s late: a pause
    await until(() => r.claimed.length === 1, 'the catch-up claim');
    expect(r.claimed[0]?.task.id).toBe(id);
    expect(r.worker.discovery.rebuilds).toMatchObject({ start: 1, gap: 1, fallback: 0 });
    expect(r.counted.calls).toMatchObject({ claim: 1, peekDue: 2 });
  });

  it('retries a failed read and reports it as a peekDue error', async () => {
    let failures = 1;
    const r = rig({
      hybrid: { fallbackPollMs: 5_000 },
      wrap: (store) =>
        overrideStore(store, {
          peekDue: async (params) => {
            if (failures > 0) {
              failures -= 1;
              throw new Error('database unreachable');
            }
            return store.peekDue(params);
          },
        }),
    });
    const errors: WorkerEvents['error'][] = [];
    r.worker.on('error', (e) => errors.push(e));
    const { id } = await r.memory.schedule({ kind: 'job', delayMs: 1_500 });
    r.worker.start();
    // The start read failed: the wheel may miss what is due, so the start's catch-up claim is sent.
    await until(() => errors.length === 1 && r.counted.calls.claim === 1 && r.pacing.pendingCount === 3, 'the failed start read');
    expect(r.worker.discovery.claimsByCause?.start).toEqual({ claims: 1, empty: 1 });
    expect(errors[0]?.operation).toBe('peekDue');
    expect(r.worker.discovery.wheelSize).toBe(0);
    r.advance(1_000); // retried after 1 s
    await until(() => r.worker.discovery.rebuilds.fallback === 1 && r.worker.discovery.wheelSize === 1, 'the retried read');
    r.advance(502);
    await until(() => r.claimed.length === 1, 'the claim');
    expect(r.claimed[0]?.task.id).toBe(id);
  });

  it('after an outage, claims as soon as the reconnected listener reads the store again, without waiting out the backoff', async () => {
    const channel = handDrivenChannel();
    let down = false;
    const r = rig({
      wrap: (store) =>
        overrideStore(store, {
          listen: channel.listen,
          claim: async (params) => {
            if (down) throw new ConnectionLostError('connection terminated');
            return store.claim(params);
          },
        }),
    });
    const unavailable: WorkerEvents['storeUnavailable'][] = [];
    const recovered: WorkerEvents['storeRecovered'][] = [];
    r.worker.on('storeUnavailable', (e) => unavailable.push(e));
    r.worker.on('storeRecovered', (e) => recovered.push(e));
    r.worker.on('error', () => {});
    await started(r);
    down = true;
    const task = await r.memory.schedule({ kind: 'job', delayMs: 10 });
    channel.notify({ op: 'scheduled', id: task.id, dueAt: task.dueAt });
    r.advance(12);
    await until(() => unavailable.length === 1 && r.counted.calls.claim === 1, 'the failed claim');
    // The loop now waits out its backoff (100-125 ms after the first failure, StoreHealth) and the
    // discovery its claim retry pause (1 s). The database comes back; the listener reconnects.
    down = false;
    channel.reconnect();
    await until(() => r.worker.discovery.rebuilds.reconnect === 1, 'the rebuild after the reconnect');
    expect(recovered).toHaveLength(1);
    r.advance(3);
    await until(() => r.claimed.length === 1, 'the claim after the recovery');
    expect(r.claimed[0]?.task.id).toBe(task.id);
    // 3 ms after the failed claim: well inside both pauses, which did not hold the claim back.
    expect(r.counted.calls.claim).toBe(2);
  });

  it('places a notified task, removes a cancelled one, and rebuilds after the listener reconnected', async () => {
    const channel = handDrivenChannel();
    const r = rig({
      // The in-memory store plus a hand-driven notification channel.
      wrap: (store) =>
        overrideStore(store, {
          listen: channel.listen,
        }),
    });
    await started(r);
    expect(r.worker.discovery.listening).toBe(true);
    const announce = async (delayMs: number): Promise<{ id: TaskId; dueAt: Date }> => {
      const task = await r.memory.schedule({ kind: 'job', delayMs });
      channel.notify({ op: 'scheduled', id: task.id, dueAt: task.dueAt });
      return task;
    };
    const kept = await announce(200);
    const dropped = await announce(100);
    expect(r.worker.discovery).toMatchObject({ wheelSize: 2, notices: 2 });
    expect(await r.memory.cancel(dropped.id)).toBe('CANCELLED');
    channel.notify({ op: 'cancelled', id: dropped.id, dueAt: dropped.dueAt });
    expect(r.worker.discovery.wheelSize).toBe(1);
    r.advance(150);
    expect(r.counted.calls.claim).toBe(0);
    r.advance(52);
    await until(() => r.claimed.length === 1, 'the notified task claimed');
    expect(r.claimed[0]?.task.id).toBe(kept.id);
    expect(r.counted.calls.claim).toBe(1);

    // Lost while disconnected: no notice for this one; the reconnect's read finds it.
    const unseen = await r.memory.schedule({ kind: 'job', delayMs: 50 });
    channel.reconnect();
    await until(() => r.worker.discovery.rebuilds.reconnect === 1 && r.worker.discovery.wheelSize === 1, 'the rebuild after the reconnect');
    r.advance(52);
    await until(() => r.claimed.length === 2, 'the unseen task claimed');
    expect(r.claimed[1]?.task.id).toBe(unseen.id);
    await r.worker.stop({ timeoutMs: 0 });
    expect(channel.listening()).toBe(false);
  });
});
