/**
 * Hybrid discovery facing a backlog (issue #26 item 8): more tasks already due than one load lists.
 * The worker must fall back to plain claiming — back-to-back claims, no timer per task, no re-read
 * of a full page every 100 ms — and place timers again once the backlog is gone. Both clocks are
 * under the test's control (TestClock in the in-memory store, ManualPacing in the worker).
 */
import { TestClock } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorker, ManualPacing, type Worker } from '../src/index.js';
import { countingStore } from './counting-store.js';
import { until } from './harness.js';

const workers: Worker<unknown>[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 0 })));
});

describe('hybrid discovery in a backlog', () => {
  it('claims a backlog larger than its load limit back to back, with an empty wheel, and places timers again after it', async () => {
    const clock = new TestClock();
    const pacing = new ManualPacing(12_345);
    const memory = createMemoryStore({ clock });
    const counted = countingStore<unknown>(memory);
    const TASKS = 600;
    const LOAD_LIMIT = 50;
    const CONCURRENCY = 10;
    await memory.scheduleMany(Array.from({ length: TASKS }, (_, i) => ({ kind: 'job', payload: { i } })));
    const worker = createWorker<unknown>({
      store: counted.store,
      pacing,
      discovery: 'hybrid',
      hybrid: { fallbackPollMs: 2_000, loadLimit: LOAD_LIMIT },
      concurrency: CONCURRENCY,
      reclaimEveryMs: 1_000_000,
      handlers: { job: async () => 'ok' },
    });
    workers.push(worker);
    const sizes: number[] = [];
    const listed: number[] = [];
    worker.on('wheelRebuilt', (e) => {
      sizes.push(e.size);
      listed.push(e.listed);
    });
    let completed = 0;
    worker.on('completed', () => {
      completed += 1;
    });
    // The wheel's size whenever a task is claimed.
    let maxWheelAtClaim = 0;
    worker.on('claimed', () => {
      maxWheelAtClaim = Math.max(maxWheelAtClaim, worker.discovery.wheelSize);
    });
    worker.start();
    // Time moves 1 ms per step (bounded): completions and claims run on the worker's pacing.
    for (let i = 0; i < 20_000 && completed < TASKS; i++) {
      pacing.advance(1);
      clock.tick(1);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(completed).toBe(TASKS);
    const loadsInBacklog = counted.calls.peekDue;
    // The start load found the backlog: cut at its limit, every listed task due, and placed no timer.
    expect(listed[0]).toBe(LOAD_LIMIT);
    expect(sizes[0]).toBe(0);
    expect(maxWheelAtClaim).toBe(0);
    // Back-to-back claims of the free slots: about TASKS / CONCURRENCY, not one per task.
    expect(counted.calls.claim).toBeGreaterThanOrEqual(TASKS / CONCURRENCY);
    expect(counted.calls.claim).toBeLessThanOrEqual(TASKS / 2);
    // No re-read of a full page every 100 ms: the start load only (the drain took less than one fallback period).
    expect(loadsInBacklog).toBe(1);
    expect(worker.discovery.claimsByCause?.full.empty).toBeLessThanOrEqual(1);

    // After the backlog: a task due later gets its timer and is claimed at its due time, not before.
    // The claim that came back short ended the backlog: a reload follows within 100 ms.
    for (let i = 0; i < 200 && counted.calls.peekDue === loadsInBacklog; i++) {
      pacing.advance(1);
      clock.tick(1);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(counted.calls.peekDue).toBe(loadsInBacklog + 1);
    await until(() => sizes.length === 2, 'the reload merged');
    expect(listed[1]).toBe(0);
    const later = await memory.schedule({ kind: 'job', delayMs: 5_000 });
    for (let i = 0; i < 100 && worker.discovery.wheelSize === 0; i++) {
      pacing.advance(1_000);
      clock.tick(1_000);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(worker.discovery.wheelSize).toBe(1);
    const claimsBefore = counted.calls.claim;
    for (let i = 0; i < 10_000 && completed < TASKS + 1; i++) {
      pacing.advance(2);
      clock.tick(2);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(completed).toBe(TASKS + 1);
    expect(counted.calls.claim - claimsBefore).toBe(1);
    expect((await memory.getTask(later.id))?.state).toBe('DONE');
  });
});
