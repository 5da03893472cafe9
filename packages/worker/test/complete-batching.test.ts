/**
 * Completion batching: handlers are completed together with one `store.completeMany`; each task
 * still gets its own fenced outcome, events and completion; `onCompleteTx` writes share the batch's
 * transaction (group commit), and a batch whose write throws is completed item by item. Real stores
 * behind a counting proxy.
 */
import { createMemoryStore } from '@postpone/memory';
import { CancelOutcome, type ClaimedTask, type CompleteOutcome, overrideStore, type Store, TaskState } from '@postpone/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorker, ManualPacing, type Worker } from '../src/index.js';
import { gate, type Harness, memoryHarness, pgHarness, postgresJsHarness, until } from './harness.js';

interface CompleteCalls {
  complete: number;
  completeMany: number;
  /** Items of each completeMany call, in call order. */
  batchSizes: number[];
}

/** A thin proxy over the real store that counts complete and completeMany calls. */
function countCompletes<Tx>(store: Store<Tx>): { store: Store<Tx>; calls: CompleteCalls } {
  const calls: CompleteCalls = { complete: 0, completeMany: 0, batchSizes: [] };
  const proxy = overrideStore(store, {
    complete: (params) => {
      calls.complete += 1;
      return store.complete(params);
    },
    completeMany: (items) => {
      calls.completeMany += 1;
      calls.batchSizes.push(items.length);
      return store.completeMany(items);
    },
  });
  return { store: proxy, calls };
}

const N = 12;

/** Handlers `plain` (no writes) and `booked` (a booking row through onCompleteTx, committed with its DONE). */
function plainAndBooked(harness: Harness<any>) {
  return {
    plain: async () => 'plain',
    booked: async (task: ClaimedTask, ctx: { onCompleteTx(write: (tx: any) => Promise<void>): void }) => {
      ctx.onCompleteTx((tx) => harness.writeBooking(tx, { taskId: task.id, attempt: task.attempt }));
      return 'booked';
    },
  };
}

describe.each([
  ['memory', memoryHarness],
  ['pg', pgHarness],
  ['postgres-js', postgresJsHarness],
] as const)('completion batching (%s)', (_name, makeHarness) => {
  let h: Harness<any> | undefined;
  let worker: Worker<any> | undefined;
  afterEach(async () => {
    await worker?.stop({ timeoutMs: 0 });
    await h?.close();
    worker = undefined;
    h = undefined;
  });

  async function scheduleN(store: Store<any>, kind: string, n: number): Promise<string[]> {
    return (await store.scheduleMany(Array.from({ length: n }, (_, i) => ({ kind, payload: { i } })))).map((t) => t.id);
  }

  it(`${N} quick handlers are completed with ONE completeMany, each DONE with its result and one completion`, async () => {
    h = await makeHarness();
    const counted = countCompletes(h.store);
    const outcomes = new Map<string, CompleteOutcome>();
    worker = createWorker({ store: counted.store, concurrency: N, pacing: new ManualPacing(), handlers: { quick: async (task: ClaimedTask<{ i: number }>) => ({ n: task.payload.i }) } });
    worker.on('completed', ({ task, outcome }) => outcomes.set(task.id, outcome));
    const ids = await scheduleN(h.store, 'quick', N);
    expect((await worker.runOnce()).length).toBe(N);
    await worker.idle();
    expect(counted.calls).toEqual({ complete: 0, completeMany: 1, batchSizes: [N] });
    expect([...outcomes.values()]).toEqual(Array(N).fill('DONE'));
    for (const [i, id] of ids.entries()) {
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DONE, result: { n: i }, leaseOwner: null });
      expect(await h.store.getCompletion(id)).toMatchObject({ taskId: id, attempt: 1, worker: worker.id });
    }
  });

  it('completeBatchSize splits the queue into batches of at most that many', async () => {
    h = await makeHarness();
    const counted = countCompletes(h.store);
    worker = createWorker({ store: counted.store, concurrency: 10, completeBatchSize: 4, pacing: new ManualPacing(), handlers: { quick: async () => 'ok' } });
    await scheduleN(h.store, 'quick', 10);
    await worker.runOnce();
    await worker.idle();
    expect(counted.calls.complete).toBe(0);
    expect(counted.calls.batchSizes).toEqual([4, 4, 2]);
    expect(await h.store.countByState()).toMatchObject({ DONE: 10 });
  });

  it('a mixed batch: a stale attempt is REJECTED_STALE, a cancel-requested one CANCELLED, the others DONE — one completeMany', async () => {
    h = await makeHarness();
    const counted = countCompletes(h.store);
    const release = gate();
    const outcomes = new Map<string, CompleteOutcome>();
    const stale: string[] = [];
    worker = createWorker({ store: counted.store, concurrency: 4, pacing: new ManualPacing(), handlers: { held: async () => release.promise.then(() => 'ok') } });
    worker.on('completed', ({ task, outcome }) => outcomes.set(task.id, outcome));
    worker.on('rejectedStale', ({ task, operation }) => stale.push(`${task.id}:${operation}`));
    const [lost, cancelled, a, b] = (await scheduleN(h.store, 'held', 4)) as [string, string, string, string];
    expect((await worker.runOnce()).length).toBe(4);
    // Another worker takes `lost` over after its lease expired; `cancelled` gets a cancel request.
    await h.expireLease(lost);
    expect((await h.store.reclaimExpired()).map((r) => r.id)).toEqual([lost]);
    expect((await h.store.claim({ owner: 'other-worker', limit: 1, leaseMs: 60_000 })).map((t) => [t.id, t.attempt])).toEqual([[lost, 2]]);
    expect(await h.store.cancel(cancelled)).toBe(CancelOutcome.REQUESTED);
    release.open();
    await until(() => outcomes.size === 4, 'four completions');
    await worker.idle();
    expect(counted.calls).toEqual({ complete: 0, completeMany: 1, batchSizes: [4] });
    expect(Object.fromEntries(outcomes)).toEqual({ [lost]: 'REJECTED_STALE', [cancelled]: 'CANCELLED_BEFORE_COMMIT', [a]: 'DONE', [b]: 'DONE' });
    expect(stale).toEqual([`${lost}:complete`]);
    expect(await h.store.getTask(lost)).toMatchObject({ state: TaskState.CLAIMED, attempt: 2, leaseOwner: 'other-worker' });
    expect(await h.store.getTask(cancelled)).toMatchObject({ state: TaskState.CANCELLED });
    for (const id of [lost, cancelled]) expect(await h.store.getCompletion(id)).toBeNull();
    for (const id of [a, b]) expect(await h.store.getCompletion(id)).toMatchObject({ attempt: 1, worker: worker.id });
  });

  it('handlers with onCompleteTx writes share the completeMany (group commit): each writes once, committed with its DONE', async () => {
    h = await makeHarness();
    const harness = h;
    const counted = countCompletes(harness.store);
    worker = createWorker({
      store: counted.store,
      concurrency: 5,
      pacing: new ManualPacing(),
      handlers: {
        ...plainAndBooked(harness),
      },
    });
    const plain = await scheduleN(harness.store, 'plain', 3);
    const booked = await scheduleN(harness.store, 'booked', 2);
    await worker.runOnce();
    await worker.idle();
    expect(counted.calls).toEqual({ complete: 0, completeMany: 1, batchSizes: [5] });
    expect((await harness.bookings()).sort((a, b) => a.taskId.localeCompare(b.taskId))).toEqual(booked.map((taskId) => ({ taskId, attempt: 1 })).sort((a, b) => a.taskId.localeCompare(b.taskId)));
    for (const id of [...plain, ...booked]) {
      expect((await harness.store.getTask(id))?.state).toBe(TaskState.DONE);
      expect(await harness.store.getCompletion(id)).toMatchObject({ attempt: 1 });
    }
  });

  it('a write that throws in a shared batch: nothing of the batch commits, each task is completed alone; only the throwing one fails', async () => {
    h = await makeHarness();
    const harness = h;
    const counted = countCompletes(harness.store);
    const failed: string[] = [];
    worker = createWorker({
      store: counted.store,
      concurrency: 4,
      pacing: new ManualPacing(),
      handlers: {
        ...plainAndBooked(harness),
        refused: async (task, ctx) => {
          ctx.onCompleteTx((tx) => harness.writeBooking(tx, { taskId: task.id, attempt: task.attempt }));
          ctx.onCompleteTx(async () => {
            throw new Error('write refused');
          });
          return 'refused';
        },
      },
    });
    worker.on('failed', ({ task, error }) => failed.push(`${task.kind}:${error}`));
    const [plain] = (await scheduleN(harness.store, 'plain', 1)) as [string];
    const booked = await scheduleN(harness.store, 'booked', 2);
    const refused = (await harness.store.schedule({ kind: 'refused', payload: {}, maxAttempts: 1 })).id;
    await worker.runOnce();
    await worker.idle();
    // One batch of 4 that rolled back, then 4 completes alone.
    expect(counted.calls).toEqual({ complete: 4, completeMany: 1, batchSizes: [4] });
    expect(failed).toEqual(['refused:Error: write refused']);
    expect(await harness.store.getTask(refused)).toMatchObject({ state: TaskState.DEAD, lastError: 'Error: write refused' });
    expect(await harness.store.getCompletion(refused)).toBeNull();
    expect((await harness.bookings()).map((b) => b.taskId).sort()).toEqual([...booked].sort());
    for (const id of [plain, ...booked]) expect(await harness.store.getCompletion(id)).toMatchObject({ attempt: 1, worker: worker.id });
  });

  it('completeBatchSize 1 turns batching off: every completion is its own complete', async () => {
    h = await makeHarness();
    const counted = countCompletes(h.store);
    worker = createWorker({ store: counted.store, concurrency: 3, completeBatchSize: 1, pacing: new ManualPacing(), handlers: { quick: async () => 'ok' } });
    await scheduleN(h.store, 'quick', 3);
    await worker.runOnce();
    await worker.idle();
    expect(counted.calls).toEqual({ complete: 3, completeMany: 0, batchSizes: [] });
    expect(await h.store.countByState()).toMatchObject({ DONE: 3 });
  });
});

describe('completion batching: a batch the store refuses as invalid', () => {
  it('a write whose own store call is refused (a schedule in the completing transaction over the size limit) fails its attempt, alone or batched', async () => {
    // Found in review: the refusal is a PostponeError, which counted as the store's failure, so the
    // task stayed CLAIMED until its lease ran out and the handler ran again after each reclaim.
    const store = createMemoryStore({ maxPayloadBytes: 100 });
    for (const completeBatchSize of [1, 10]) {
      let runs = 0;
      const counted = countCompletes(store);
      const worker = createWorker({
        store: counted.store,
        concurrency: 2,
        completeBatchSize,
        pacing: new ManualPacing(),
        handlers: {
          notify: async (task: ClaimedTask<{ size: number }>, ctx) => {
            runs += 1;
            ctx.onCompleteTx(async (tx) => {
              await store.schedule({ kind: 'mail', payload: 'x'.repeat(task.payload.size) }, { tx });
            });
            return 'ok';
          },
        },
      });
      const [fits, tooBig] = (await store.scheduleMany([10, 500].map((size) => ({ kind: 'notify', payload: { size }, maxAttempts: 1 })))).map((t) => t.id);
      await worker.runOnce();
      await worker.idle();
      const [a, b] = await Promise.all([store.getTask(fits as string), store.getTask(tooBig as string)]);
      expect(a?.state, `completeBatchSize ${completeBatchSize}`).toBe(TaskState.DONE);
      expect(b, `completeBatchSize ${completeBatchSize}`).toMatchObject({ state: TaskState.DEAD, failures: 1 });
      expect(b?.lastError).toMatch(/^ValidationError \[PAYLOAD_TOO_LARGE\]: payload: is 502 bytes of JSON, the limit is 100/);
      expect(runs).toBe(2);
      // Batched: one completeMany held both (it rolled back whole), then each was completed alone.
      expect(counted.calls).toEqual(completeBatchSize === 1 ? { complete: 2, completeMany: 0, batchSizes: [] } : { complete: 2, completeMany: 1, batchSizes: [2] });
      expect((await store.countByState()).SCHEDULED).toBe(completeBatchSize === 1 ? 1 : 2); // the one mail that fit, each round
      await worker.stop({ timeoutMs: 0 });
    }
    await store.close();
  });

  it('is sent again item by item, so a result over the store\'s size limit fails only its own attempt, with the store\'s error', async () => {
    const store = createMemoryStore({ maxPayloadBytes: 100 });
    const counted = countCompletes(store);
    const worker = createWorker({ store: counted.store, concurrency: 3, pacing: new ManualPacing(), handlers: { sized: async (task: ClaimedTask<{ size: number }>) => 'x'.repeat(task.payload.size) } });
    const ids = (await store.scheduleMany([10, 500, 20].map((size) => ({ kind: 'sized', payload: { size }, maxAttempts: 1 })))).map((t) => t.id);
    await worker.runOnce();
    await worker.idle();
    expect(counted.calls).toEqual({ complete: 3, completeMany: 1, batchSizes: [3] });
    // The oversized result is a verdict on the handler's output: its attempt fails at once with the
    // store's error (it used to stay CLAIMED until its lease ran out, then DEAD as "lease expired").
    const tasks = await Promise.all(ids.map((id) => store.getTask(id)));
    expect(tasks.map((t) => t?.state)).toEqual([TaskState.DONE, TaskState.DEAD, TaskState.DONE]);
    expect(tasks[1]?.lastError).toMatch(/^ValidationError \[INVALID_RESULT\]: result: is 502 bytes of JSON, the limit is 100/);
    await worker.stop({ timeoutMs: 0 });
    await store.close();
  });
});
