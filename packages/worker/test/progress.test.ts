/**
 * `ctx.progress` (docs/contract.md#progress): values are validated at once, coalesced to at most one
 * write per `progressIntervalMs` of the worker's pacing, the last one is written before the
 * attempt's end, a stale attempt's write is refused and reported (`progressRefused`), and
 * `waitFor` sees the final progress with the result. Real stores; time is a ManualPacing.
 */
import { overrideStore, type ProgressParams, TaskState, ValidationError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { createWorker, ManualPacing } from '../src/index.js';
import { gate, type Harness, STORE_HARNESSES, perTest, until } from './harness.js';

describe.each(STORE_HARNESSES)('ctx.progress (%s)', (_name, makeHarness) => {
  const t = perTest();

  it('coalesces to one write per interval, writes the last value before completing, refuses bad values', async () => {
    const h: Harness<any> = await t.open(makeHarness);
    const writes: unknown[] = [];
    const store = overrideStore(h.store, {
      reportProgress: (params: ProgressParams) => {
        writes.push(params.progress);
        return h.store.reportProgress(params);
      },
    });
    const pacing = new ManualPacing();
    const step = gate();
    const finish = gate();
    const thrown: unknown[] = [];
    const worker = t.track(
      createWorker({
        store,
        pacing,
        progressIntervalMs: 1_000,
        handlers: {
          long: async (_task, ctx) => {
            for (let i = 1; i <= 100; i++) ctx.progress({ done: i, of: 200 });
            for (const bad of [() => 1, 'x'.repeat(70_000)]) {
              try {
                ctx.progress(bad);
              } catch (error) {
                thrown.push(error);
              }
            }
            step.open();
            await finish.promise;
            for (let i = 101; i <= 200; i++) ctx.progress({ done: i, of: 200 });
            return 'finished';
          },
        },
      }),
    );
    const { id } = await h.store.schedule({ kind: 'long' });
    const waited = h.store.waitFor(id, { timeoutMs: 30_000 });
    expect((await worker.runOnce()).length).toBe(1);
    await step.promise;
    // The first report is written at once, the 99 after it wait for the interval.
    await until(async () => (await h.store.getTask(id))?.progress !== undefined, 'first progress write');
    expect(writes).toEqual([{ done: 1, of: 200 }]);
    expect((await h.store.getTask(id))?.progress).toEqual({ done: 1, of: 200 });
    expect(thrown.map((e) => ValidationError.isInstance(e) && e.code)).toEqual(['INVALID_PROGRESS', 'PROGRESS_TOO_LARGE']);
    pacing.advance(1_000);
    await until(() => writes.length === 2, 'second progress write after the interval');
    expect(writes[1]).toEqual({ done: 100, of: 200 });
    finish.open();
    await worker.idle();
    // The interval has not passed again: the last value was flushed before the completion, once.
    expect(writes).toEqual([
      { done: 1, of: 200 },
      { done: 100, of: 200 },
      { done: 200, of: 200 },
    ]);
    expect(await waited).toMatchObject({ state: TaskState.DONE, result: 'finished', progress: { done: 200, of: 200 } });
  });

  it('a stale attempt has its write refused: progressRefused, later reports dropped, the task keeps the current holder', async () => {
    const h: Harness<any> = await t.open(makeHarness);
    const pacing = new ManualPacing();
    const reported = gate();
    const expired = gate();
    const refused: string[] = [];
    const worker = t.track(
      createWorker({
        store: h.store,
        pacing,
        progressIntervalMs: 10,
        handlers: {
          slow: async (_task, ctx) => {
            ctx.progress('first');
            reported.open();
            await expired.promise;
            ctx.progress('late');
            await until(() => refused.length === 1, 'the refusal');
            ctx.progress('dropped');
            return 'stale result';
          },
        },
      }),
    );
    worker.on('progressRefused', ({ task }) => refused.push(task.id));
    const { id } = await h.store.schedule({ kind: 'slow', maxAttempts: 5 });
    expect((await worker.runOnce()).length).toBe(1);
    await reported.promise;
    await until(async () => (await h.store.getTask(id))?.progress === 'first', 'first progress write');
    await h.expireLease(id);
    expect((await h.store.reclaimExpired()).map((r) => r.id)).toEqual([id]);
    const [again] = await h.store.claim({ owner: 'other', limit: 1, leaseMs: 60_000 });
    expect(again?.attempt).toBe(2);
    pacing.advance(10);
    expired.open();
    await worker.idle();
    expect(refused).toEqual([id]);
    expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.CLAIMED, attempt: 2, leaseOwner: 'other', progress: 'first' });
  });
});
