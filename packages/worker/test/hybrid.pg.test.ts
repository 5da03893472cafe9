/**
 * Hybrid discovery on a real PostgreSQL, through both drivers: timers placed by the database's
 * clock, new tasks announced by LISTEN/NOTIFY, cancellation, a killed listener connection, a paused
 * worker, and a worker whose wall clock is minutes off. The fallback read is a minute away in every
 * test, so a task claimed within the test's bounded waits was found by the wheel, not by the fallback.
 *
 * Claim queries are counted through a thin proxy over the real store (every call still runs).
 */
import { performance } from 'node:perf_hooks';
import { TaskState } from '@postpone/core';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { defaultNotifyChannel } from '@postpone/postgres';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createWorker, type Worker, type WorkerEvents } from '../src/index.js';
import { type CountingStore, countingStore } from './counting-store.js';
import { type Harness, pgHarness, postgresJsHarness, until } from './harness.js';

const FALLBACK_MS = 60_000;

let admin: pg.Pool;
beforeAll(() => {
  admin = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1 });
});
afterAll(async () => {
  await admin.end();
});

interface Rig {
  readonly h: Harness<unknown>;
  readonly counted: CountingStore<unknown>;
  readonly worker: Worker<unknown>;
  readonly claimed: WorkerEvents['claimed'][];
}

describe.each([
  ['pg', pgHarness],
  ['postgres-js', postgresJsHarness],
] as const)('hybrid discovery on PostgreSQL (%s)', (_name, makeHarness) => {
  const rigs: Rig[] = [];
  afterEach(async () => {
    for (const r of rigs.splice(0)) {
      await r.worker.stop({ timeoutMs: 0 });
      await r.h.close();
    }
  });

  async function rig(): Promise<Rig> {
    const h = (await makeHarness()) as Harness<unknown>;
    const counted = countingStore(h.store);
    const worker = createWorker<unknown>({ store: counted.store, discovery: 'hybrid', hybrid: { fallbackPollMs: FALLBACK_MS }, handlers: { job: async () => 'ok' } });
    const claimed: WorkerEvents['claimed'][] = [];
    worker.on('claimed', (e) => claimed.push(e));
    const r = { h, counted, worker, claimed };
    rigs.push(r);
    return r;
  }

  async function start(r: Rig): Promise<void> {
    r.worker.start();
    // The first load listed everything: no catch-up claim is owed (it would come back empty).
    await until(() => r.worker.discovery.rebuilds.start === 1, 'the start load');
  }

  // Due times leave start (and a notice) 1.5 s even on a loaded 2-core machine: the claim counts below
  // hold only when the task is still ahead when the worker's start-up read sees it.
  it('claims a task due in 1.5 s at or after its due time, from its timer: two claim queries in all', async () => {
    const r = await rig();
    const { id, dueAt } = await r.h.store.schedule({ kind: 'job', delayMs: 1_500 });
    await start(r);
    expect(r.worker.discovery.wheelSize).toBe(1);
    await until(() => r.claimed.length === 1, 'the claim');
    const [event] = r.claimed;
    expect(event?.task.id).toBe(id);
    expect(event?.task.claimedAt.getTime()).toBeGreaterThanOrEqual(dueAt.getTime());
    // Only the claim at the tick; a 10 ms poll would have sent ~30.
    expect(r.counted.calls).toMatchObject({ claim: 1, emptyClaims: 0 });
    expect(r.worker.discovery.fired).toBe(1);
  });

  it('learns of a task scheduled after it started through NOTIFY, and claims it on its tick', async () => {
    const r = await rig();
    await start(r);
    expect(r.worker.discovery.listening).toBe(true);
    const { id, dueAt } = await r.h.store.schedule({ kind: 'job', delayMs: 1_500 });
    await until(() => r.worker.discovery.notices === 1 && r.worker.discovery.wheelSize === 1, 'the notice');
    // Placed by the notice: the store was read once, at start, before this task existed.
    expect(r.worker.discovery.rebuilds).toEqual({ start: 1, fallback: 0, horizon: 0, gap: 0, reconnect: 0, pauseNotice: 0 });
    await until(() => r.claimed.length === 1, 'the claim');
    expect(r.claimed[0]?.task.id).toBe(id);
    expect(r.claimed[0]?.task.claimedAt.getTime()).toBeGreaterThanOrEqual(dueAt.getTime());
    expect(r.counted.calls).toMatchObject({ claim: 1, emptyClaims: 0 });
  });

  it('drops the timer of a cancelled task: it never fires', async () => {
    const r = await rig();
    await start(r);
    const cancelled = await r.h.store.schedule({ kind: 'job', delayMs: 1_500 });
    const kept = await r.h.store.schedule({ kind: 'job', delayMs: 2_000 });
    await until(() => r.worker.discovery.wheelSize === 2, 'both timers placed');
    expect(await r.h.store.cancel(cancelled.id)).toBe('CANCELLED');
    await until(() => r.worker.discovery.wheelSize === 1, 'the cancelled timer dropped');
    await until(() => r.claimed.length === 1, 'the kept task claimed');
    expect(r.claimed[0]?.task.id).toBe(kept.id);
    expect(r.worker.discovery.fired).toBe(1);
    expect(r.counted.calls.claim).toBe(1);
    expect((await r.h.store.getTask(cancelled.id))?.state).toBe(TaskState.CANCELLED);
  });

  it('after its listener connection is terminated, rebuilds from the store and claims what it missed', async () => {
    const r = await rig();
    await start(r);
    const channel = defaultNotifyChannel(r.h.schema ?? '');
    const listeners = async () =>
      (await admin.query<{ pid: number }>("select pid from pg_stat_activity where query ilike 'listen %' and query like $1", [`%${channel}%`])).rows.map((row) => row.pid);
    const [pid] = await listeners();
    expect(pid).toBeDefined();
    await admin.query('select pg_terminate_backend($1)', [pid]);
    // Scheduled while the listener is (most likely) away: its notice may be lost; the rebuild finds it.
    const { id } = await r.h.store.schedule({ kind: 'job', delayMs: 50 });
    await until(() => r.worker.discovery.rebuilds.reconnect >= 1, 'the rebuild after the reconnect', 20_000);
    await until(() => r.claimed.length === 1, 'the claim');
    expect(r.claimed[0]?.task.id).toBe(id);
    const [next] = await listeners();
    expect(next).toBeDefined();
    expect(next).not.toBe(pid);
  });

  it('after a pause of the worker, rebuilds at once and claims what became due meanwhile', async () => {
    const r = await rig();
    await start(r);
    r.counted.dropNotices = true; // this one is never announced: only a read of the store can find it
    const { id, dueAt } = await r.h.store.schedule({ kind: 'job', delayMs: 100 });
    // The worker's process stops running for 2.5 s (as under SIGSTOP): its event loop is blocked.
    const until2500 = performance.now() + 2_500;
    while (performance.now() < until2500) {
      // blocked
    }
    await until(() => r.claimed.length === 1, 'the catch-up claim');
    expect(r.claimed[0]?.task.id).toBe(id);
    expect(r.claimed[0]?.task.claimedAt.getTime()).toBeGreaterThanOrEqual(dueAt.getTime());
    expect(r.worker.discovery.rebuilds.gap).toBeGreaterThanOrEqual(1);
    expect(r.counted.calls.peekDue).toBeGreaterThanOrEqual(2);
  });
});

describe.each([
  ['5 minutes ahead', 5 * 60_000],
  ['5 minutes behind', -5 * 60_000],
])('hybrid discovery with the worker wall clock %s of the database', (_label, skewMs) => {
  let h: Harness<unknown> | undefined;
  let worker: Worker<unknown> | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await worker?.stop({ timeoutMs: 0 });
    await h?.close();
  });

  it('claims on time: timers follow the database clock and the monotonic clock only', async () => {
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs);
    h = (await pgHarness()) as Harness<unknown>;
    const counted = countingStore(h.store);
    const w = createWorker<unknown>({ store: counted.store, discovery: 'hybrid', hybrid: { fallbackPollMs: FALLBACK_MS }, handlers: { job: async () => 'ok' } });
    worker = w;
    const claimed: WorkerEvents['claimed'][] = [];
    w.on('claimed', (e) => claimed.push(e));
    const { dueAt } = await h.store.schedule({ kind: 'job', delayMs: 1_500 });
    w.start();
    await until(() => claimed.length === 1, 'the claim');
    expect(claimed[0]?.task.claimedAt.getTime()).toBeGreaterThanOrEqual(dueAt.getTime());
    // Neither minutes early (an empty claim, then nothing until the fallback) nor minutes late: one claim, at the tick.
    expect(counted.calls).toMatchObject({ claim: 1, emptyClaims: 0 });
    expect(Math.abs(Date.now() - realNow() - skewMs)).toBeLessThan(1_000);
  });
});
