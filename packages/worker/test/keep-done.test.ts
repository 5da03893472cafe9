/**
 * DONE not kept (options `keepDone`, `keepDoneByKind`; docs/contract.md#done-not-kept): the worker
 * completes with `keep: false`, so a finished task leaves the store with no history and no completion
 * row; a completion that answers NOT_FOUND (the row is already gone, e.g. a retry after a lost
 * reply) counts as finished — a `completed` event, never a failure or a retry. Real stores.
 */
import { createMemoryStore } from '@postpone/memory';
import { type CompleteManyItem, type CompleteOutcome, type CompleteParams, ConnectionLostError, overrideStore, type Store, TaskState, ValidationError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { createWorker, ManualPacing } from '../src/index.js';
import { type Harness, memoryHarness, perTest, pgHarness, postgresJsHarness, until } from './harness.js';

/** A proxy over the real store recording the `keep` flag of every complete and completeMany item. */
function recordKeep<Tx>(store: Store<Tx>): { store: Store<Tx>; keeps: Map<string, boolean | undefined> } {
  const keeps = new Map<string, boolean | undefined>();
  const proxy = overrideStore(store, {
    complete: (params: CompleteParams<Tx>) => {
      keeps.set(params.id, params.keep);
      return store.complete(params);
    },
    completeMany: (items: readonly CompleteManyItem[]) => {
      for (const i of items) keeps.set(i.id, i.keep);
      return store.completeMany(items);
    },
  });
  return { store: proxy, keeps };
}

describe.each([
  ['memory', memoryHarness],
  ['pg', pgHarness],
  ['postgres-js', postgresJsHarness],
] as const)('DONE not kept (%s)', (_name, makeHarness) => {
  const t = perTest();

  it('keepDone: false drops DONE tasks (batched and with onCompleteTx); keepDoneByKind keeps one kind; DEAD is kept', async () => {
    const h: Harness<any> = await t.open(makeHarness as () => Promise<Harness<any>>);
    const recorded = recordKeep(h.store);
    const outcomes = new Map<string, CompleteOutcome>();
    const worker = t.track(
      createWorker({
        store: recorded.store,
        concurrency: 8,
        keepDone: false,
        keepDoneByKind: { audited: true },
        pacing: new ManualPacing(),
        handlers: {
          quick: async (task) => ({ n: (task.payload as { i: number }).i }),
          booked: async (task, ctx) => {
            ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: task.attempt }));
            return 'booked';
          },
          audited: async () => 'kept',
          broken: async () => {
            throw new Error('always');
          },
        },
      }),
    );
    worker.on('completed', ({ task, outcome }) => outcomes.set(task.id, outcome));
    const quick = (await h.store.scheduleMany([0, 1, 2, 3].map((i) => ({ kind: 'quick', payload: { i } })))).map((x) => x.id);
    const { id: booked } = await h.store.schedule({ kind: 'booked' });
    const { id: audited } = await h.store.schedule({ kind: 'audited' });
    const { id: broken } = await h.store.schedule({ kind: 'broken', maxAttempts: 1 });
    expect((await worker.runOnce()).length).toBe(7);
    await worker.idle();
    expect(Object.fromEntries(outcomes)).toEqual(Object.fromEntries([...quick, booked, audited].map((id) => [id, 'DONE'])));
    for (const id of [...quick, booked]) {
      expect(recorded.keeps.get(id)).toBe(false);
      expect(await h.store.getTask(id)).toBeNull();
      expect(await h.store.getCompletion(id)).toBeNull();
    }
    // The handler's own write committed with the fenced delete.
    expect(await h.bookings()).toEqual([{ taskId: booked, attempt: 1 }]);
    // The kind kept by keepDoneByKind: the flag is not sent, the task is in history with its completion.
    expect(recorded.keeps.get(audited)).toBeUndefined();
    expect(await h.store.getTask(audited)).toMatchObject({ state: TaskState.DONE, result: 'kept' });
    expect(await h.store.getCompletion(audited)).toMatchObject({ attempt: 1, worker: worker.id });
    expect(await h.store.getTask(broken)).toMatchObject({ state: TaskState.DEAD });
    expect(await h.store.countByState()).toMatchObject({ DONE: 1, DEAD: 1, SCHEDULED: 0, CLAIMED: 0 });
  });

  it('a completion whose reply was lost is tried again and answers NOT_FOUND: completed, not failed, not retried', async () => {
    const h: Harness<any> = await t.open(makeHarness as () => Promise<Harness<any>>);
    let lost = 0;
    // The batch commits, then its reply is lost: the worker cannot know it committed and sends it again.
    const store = overrideStore(h.store, {
      completeMany: async (items: readonly CompleteManyItem[]) => {
        const outcomes = await h.store.completeMany(items);
        if (lost++ === 0) throw new ConnectionLostError('reply lost (injected)');
        return outcomes;
      },
    });
    const outcomes: CompleteOutcome[] = [];
    const failed: string[] = [];
    const worker = t.track(createWorker({ store, concurrency: 2, keepDone: false, handlers: { quick: async () => 'ok' } }));
    worker.on('completed', ({ outcome }) => outcomes.push(outcome));
    worker.on('failed', ({ task }) => failed.push(task.id));
    const ids = (await h.store.scheduleMany([{ kind: 'quick' }, { kind: 'quick' }])).map((x) => x.id);
    await worker.runOnce();
    await until(() => outcomes.length === 2, 'two completions', 10_000);
    await worker.idle();
    expect(lost).toBe(2);
    expect(outcomes).toEqual(['NOT_FOUND', 'NOT_FOUND']);
    expect(failed).toEqual([]);
    for (const id of ids) expect(await h.store.getTask(id)).toBeNull();
    expect(await h.store.countByState()).toMatchObject({ SCHEDULED: 0, CLAIMED: 0, DONE: 0, DEAD: 0 });
  });
});

describe('DONE not kept: options', () => {
  it('keepDone must be a boolean, keepDoneByKind an object of kind → boolean', () => {
    const store = createMemoryStore();
    const handlers = { quick: async () => 'ok' };
    const field = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (error) {
        expect(ValidationError.isInstance(error)).toBe(true);
        return (error as ValidationError).field;
      }
      return undefined;
    };
    expect(field(() => createWorker({ store, handlers, keepDone: 'no' as never }))).toBe('keepDone');
    expect(field(() => createWorker({ store, handlers, keepDoneByKind: [] as never }))).toBe('keepDoneByKind');
    expect(field(() => createWorker({ store, handlers, keepDoneByKind: { quick: 1 as never } }))).toBe('keepDoneByKind["quick"]');
    expect(field(() => createWorker({ store, handlers, keepDone: false, keepDoneByKind: { quick: true } }))).toBeUndefined();
  });
});
