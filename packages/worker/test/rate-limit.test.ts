/**
 * Rate limits and the worker (docs/contract.md#rate-limits), against real stores (memory, PostgreSQL
 * through pg), in both discovery modes: a worker whose every task is held back by a rate limit
 * sleeps until the window reopens (the claim's `onRateLimited`) instead of claiming every poll
 * interval, claims again then, and never starts more than the limit in any window.
 */
import { isRateLimitStore, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { createWorker } from '../src/index.js';
import { countingStore } from './counting-store.js';
import { perTest, STORE_HARNESSES, until } from './harness.js';

const LIMIT = 5;
const WINDOW_MS = 400;
const TASKS = 20;

describe.each(STORE_HARNESSES)('rate limits (%s store)', (_name, makeHarness) => {
  const t = perTest();

  it.each(['poll', 'hybrid'] as const)(`%s: ${LIMIT} starts per ${WINDOW_MS} ms, every window within the limit, the worker sleeps while held back`, async (discovery) => {
    const h = await t.open(makeHarness);
    if (!isRateLimitStore(h.store)) throw new Error('store without rate limits');
    await h.store.setRateLimit({ kind: 'send', limit: LIMIT, windowMs: WINDOW_MS });
    const ids = new Set((await h.store.scheduleMany(Array.from({ length: TASKS }, (_, i) => ({ kind: 'send', payload: { i } })))).map((s) => s.id));
    const counting = countingStore(h.store);
    const starts: number[] = [];
    const worker = t.track(
      createWorker({
        store: counting.store,
        id: 'w1',
        concurrency: 10,
        pollIntervalMs: 20,
        discovery,
        unclaimedAfterMs: null,
        handlers: { send: async () => null },
      }),
    );
    worker.on('claimed', ({ task }) => starts.push(task.claimedAt.getTime()));
    worker.start();
    await until(async () => (await h.store.countByState())[TaskState.DONE] === TASKS, `${TASKS} tasks DONE`, 30_000);
    await worker.stop({ timeoutMs: 1_000 });
    starts.sort((a, b) => a - b);
    // Every window [s, s + WINDOW_MS) of the store's claim times holds at most LIMIT starts.
    const worst = Math.max(...starts.map((s) => starts.filter((x) => x >= s && x < s + WINDOW_MS).length));
    expect(starts).toHaveLength(TASKS);
    expect(worst).toBeLessThanOrEqual(LIMIT);
    expect(worst).toBe(LIMIT);
    expect(ids.size).toBe(TASKS);
    // Four windows of work: one claim that takes the window's 5 (and finds the room used up), one
    // after the window reopens. Polling every 20 ms through ~1.2 s would be ~60 claims.
    expect(counting.calls.claim).toBeLessThanOrEqual(2 * (TASKS / LIMIT) + 4);
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(((TASKS / LIMIT) - 1) * WINDOW_MS);
  });
});
