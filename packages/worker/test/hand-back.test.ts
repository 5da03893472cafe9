/**
 * Two deploys are not two failures (issue 10 item 3): a worker that stops while its handler runs
 * hands the task back (`release`); that does not use up `maxAttempts`, and the next failure's retry
 * delay is the first backoff step, not one lengthened by the hand-backs. Run on the in-memory store
 * and on PostgreSQL (`pg`).
 */
import { type ClaimedTask, TaskState } from '@postpone/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorker, type HandlerContext, waitForEvent, type Worker } from '../src/index.js';
import { type Harness, memoryHarness, pgHarness } from './harness.js';

type Payloads = { deploy: { n: number } };
const BACKOFF_BASE_MS = 200;

describe.each([
  ['memory', memoryHarness],
  ['pg', pgHarness],
] as const)('hand-backs at shutdown (%s)', (_name, makeHarness) => {
  const open: { harness?: Harness<any>; workers: Worker<any>[] } = { workers: [] };
  afterEach(async () => {
    await Promise.all(open.workers.splice(0).map((w) => w.stop({ timeoutMs: 0 })));
    await open.harness?.close();
  });

  it('maxAttempts 2: hand back twice, fail once (SCHEDULED after 200 ms, not 800), then DONE at attempt 4', async () => {
    const h = await makeHarness();
    open.harness = h;
    const seen: { attempt: number; failures: number; maxAttempts: number }[] = [];
    const handler = async (_task: ClaimedTask<{ n: number }>, ctx: HandlerContext<any>) => {
      seen.push({ attempt: ctx.attempt, failures: ctx.failures, maxAttempts: ctx.maxAttempts });
      if (ctx.attempt <= 2) {
        // A deploy: the worker stops while the handler runs; the handler honours the signal.
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        throw ctx.signal.reason;
      }
      if (ctx.attempt === 3) throw new Error('payments answered 503');
      return 'done';
    };
    const worker = (id: string) => {
      const w = createWorker<any, Payloads>({ store: h.store, id, leaseMs: 60_000, pollIntervalMs: 5, backoffBaseMs: BACKOFF_BASE_MS, handlers: { deploy: handler } });
      open.workers.push(w);
      return w;
    };

    const { id } = await h.store.schedule({ kind: 'deploy', payload: { n: 1 }, maxAttempts: 2 });
    for (const name of ['old-1', 'old-2']) {
      const w = worker(name);
      const released = waitForEvent(w, 'released');
      expect((await w.runOnce()).map((t) => t.id)).toEqual([id]);
      expect(await w.stop({ timeoutMs: 20 })).toEqual({ handedBack: 1, handBackFailed: 0 });
      expect((await released)[0]?.outcome).toBe('SCHEDULED');
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.SCHEDULED, failures: 0 });
    }

    const w = worker('new');
    const failed = waitForEvent(w, 'failed');
    expect((await w.runOnce()).map((t) => t.id)).toEqual([id]);
    const [failure] = await failed;
    expect(failure?.result.outcome).toBe('SCHEDULED');
    const afterFailure = await h.store.getTask(id);
    expect(afterFailure).toMatchObject({ state: TaskState.SCHEDULED, attempt: 3, failures: 1, lastError: 'Error: payments answered 503' });
    // fail() sets due_at and updated_at from one store clock reading: the delay is exactly the first step.
    expect(afterFailure!.dueAt.getTime() - afterFailure!.updatedAt.getTime()).toBe(BACKOFF_BASE_MS);

    const completed = waitForEvent(w, 'completed', { timeoutMs: 10_000 });
    w.start();
    expect((await completed)[0]?.outcome).toBe('DONE');
    expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DONE, attempt: 4, failures: 1, result: 'done' });
    expect(seen).toEqual([
      { attempt: 1, failures: 0, maxAttempts: 2 },
      { attempt: 2, failures: 0, maxAttempts: 2 },
      { attempt: 3, failures: 0, maxAttempts: 2 },
      { attempt: 4, failures: 1, maxAttempts: 2 },
    ]);
  });
});
