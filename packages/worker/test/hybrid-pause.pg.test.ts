/**
 * Pause and resume under hybrid discovery on a real PostgreSQL, both drivers
 * (docs/contract.md#pause-and-resume): a paused queue's due tasks are neither in the wheel nor
 * claimed, so a hybrid worker sends a bounded number of claim statements while they wait (no
 * empty-claim storm, however many tasks fall due or are scheduled meanwhile); the resume notice makes
 * it re-read at once and claim them — well before its fallback re-read (a minute away here).
 *
 * Claim statements are counted through a thin proxy over the real store (every call still runs).
 */
import { TaskState } from '@postpone/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorker, type Worker, type WorkerEvents } from '../src/index.js';
import { countingStore } from './counting-store.js';
import { type Harness, pgHarness, postgresJsHarness, until } from './harness.js';

const FALLBACK_MS = 60_000;
/** Tasks in the wheel when the pause comes, and tasks scheduled (and notified) during it. */
const BEFORE = 20;
const DURING = 20;

describe.each([
  ['pg', pgHarness],
  ['postgres-js', postgresJsHarness],
] as const)('hybrid worker and a paused queue (%s)', (_name, makeHarness) => {
  const open: { worker: Worker<unknown>; h: Harness<unknown> }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) {
      await o.worker.stop({ timeoutMs: 0 });
      await o.h.close();
    }
  });

  it('holds no timer and sends at most one claim while paused; the resume notice re-reads and claims every task at attempt 1', async () => {
    const h = (await makeHarness()) as Harness<unknown>;
    const counted = countingStore(h.store);
    const worker = createWorker<unknown>({ store: counted.store, discovery: 'hybrid', concurrency: 50, hybrid: { fallbackPollMs: FALLBACK_MS }, handlers: { job: async () => 'ok' } });
    open.push({ worker, h });
    const claimed: WorkerEvents['claimed'][] = [];
    worker.on('claimed', (e) => claimed.push(e));
    worker.start();
    await until(() => worker.discovery.rebuilds.start === 1, 'the start load');

    // In the wheel before the pause (placed by their notices), due in 1.5 s.
    const before = await h.store.scheduleMany(Array.from({ length: BEFORE }, () => ({ kind: 'job', delayMs: 1_500 })));
    await until(() => worker.discovery.wheelSize === BEFORE, 'the timers placed');
    expect(await h.store.pause({ queue: 'default' }, { reason: 'test' })).toBe(true);
    // The pause notice: a re-read that lists nothing of the paused queue, so the timers are dropped.
    await until(() => worker.discovery.rebuilds.pauseNotice >= 1 && worker.discovery.wheelSize === 0, 'the pause re-read');
    const claimsAtPause = counted.calls.claim;
    // Scheduled during the pause, due 60 ms apart (each timer would be a claim of its own): their notices
    // are not placed (the selection is paused).
    const noticesBefore = worker.discovery.notices;
    const during = await h.store.scheduleMany(Array.from({ length: DURING }, (_, i) => ({ kind: 'job', delayMs: 100 + i * 60 })));
    await until(() => worker.discovery.notices >= noticesBefore + DURING, 'the notices of the tasks scheduled during the pause', 10_000);
    // Wait until every task has been due for a while (the database's clock).
    const lastDue = Math.max(...[...before, ...during].map((t) => t.dueAt.getTime()));
    await until(async () => (await h.store.now()).getTime() >= lastDue + 1_000, 'all due for a second');
    expect(worker.discovery.wheelSize).toBe(0);
    const claimsWhilePaused = counted.calls.claim - claimsAtPause;
    // A timer may have fired between the pause's commit and its notice (one claim that took nothing); no more.
    expect(claimsWhilePaused).toBeLessThanOrEqual(1);
    expect(claimed).toHaveLength(0);
    const ids = [...before, ...during].map((t) => t.id);
    const rows = await Promise.all(ids.map((id) => h.store.getTask(id)));
    expect(rows.every((t) => t?.state === TaskState.SCHEDULED && t.attempt === 0)).toBe(true);

    const claimsAtResume = counted.calls.claim;
    const rebuildsAtResume = worker.discovery.rebuilds.pauseNotice;
    expect(await h.store.resume({ queue: 'default' })).toBe(true);
    await until(() => claimed.length === BEFORE + DURING, 'every task claimed after the resume', 20_000);
    expect(worker.discovery.rebuilds.pauseNotice).toBeGreaterThan(rebuildsAtResume);
    expect(worker.discovery.rebuilds.fallback).toBe(0);
    expect(new Set(claimed.map((e) => e.task.id))).toEqual(new Set(ids));
    expect(claimed.every((e) => e.task.attempt === 1)).toBe(true);
    // 40 due tasks and 50 free slots: a few claims, not one per task.
    const claimsAfterResume = counted.calls.claim - claimsAtResume;
    expect(claimsAfterResume).toBeGreaterThanOrEqual(1);
    expect(claimsAfterResume).toBeLessThanOrEqual(5);
    console.log(`hybrid pause (${_name}): claims while paused ${claimsWhilePaused}, after resume ${claimsAfterResume}, peeks ${counted.calls.peekDue}`);
  }, 60_000);
});
