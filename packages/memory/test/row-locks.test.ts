/**
 * Row locks: while a complete({ work }) is in flight, other commands on that task wait for it (like
 * a PostgreSQL row lock held to commit), and claim / reclaim skip it (SKIP LOCKED).
 */
import { CancelOutcome, CompleteOutcome, TaskState, TestClock } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../src/index.js';

function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

async function setup() {
  const clock = new TestClock();
  const store = createMemoryStore({ clock });
  const { id } = await store.schedule({ kind: 'k', maxAttempts: 3 });
  const [c] = await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
  return { clock, store, id, attempt: c!.attempt };
}

/**
 * Starts `complete({ work })` for the claimed task and resolves once its work runs (holding the
 * row); `finish()` lets the work end — by throwing `failWith` when given.
 */
async function completeHeld(s: Awaited<ReturnType<typeof setup>>, failWith?: Error) {
  const workEntered = gate();
  const workMayFinish = gate();
  const completing = s.store.complete({
    id: s.id,
    attempt: s.attempt,
    owner: 'w1',
    work: async () => {
      workEntered.open();
      await workMayFinish.opened;
      if (failWith) throw failWith;
    },
  });
  await workEntered.opened;
  return { completing, finish: workMayFinish.open };
}

describe('row locks', () => {
  it('a cancel during work waits for the commit and then reports TOO_LATE', async () => {
    const s = await setup();
    const { store, id } = s;
    const { completing, finish } = await completeHeld(s);
    let cancelSettled = false;
    const cancelling = store.cancel(id).finally(() => {
      cancelSettled = true;
    });
    // The work still holds the row: the committed row is CLAIMED and the cancel has not answered.
    expect((await store.getTask(id))?.state).toBe(TaskState.CLAIMED);
    expect(cancelSettled).toBe(false);
    finish();
    expect(await completing).toBe(CompleteOutcome.DONE);
    expect(await cancelling).toBe(CancelOutcome.TOO_LATE);
    expect(await store.getTask(id)).toMatchObject({ state: TaskState.DONE, cancelRequested: false });
  });

  it('reclaim skips a task whose complete is in flight even after its lease expired', async () => {
    const s = await setup();
    const { clock, store, id } = s;
    const { completing, finish } = await completeHeld(s);
    clock.tick(5_000);
    expect(await store.reclaimExpired()).toEqual([]);
    finish();
    expect(await completing).toBe(CompleteOutcome.DONE);
    expect(await store.reclaimExpired()).toEqual([]);
    expect((await store.getCompletion(id))?.attempt).toBe(1);
  });

  it('after a work that throws, the expired lease is reclaimed as usual', async () => {
    const s = await setup();
    const { clock, store, id } = s;
    const { completing, finish } = await completeHeld(s, new Error('handler failed'));
    clock.tick(5_000);
    expect(await store.reclaimExpired()).toEqual([]);
    finish();
    await expect(completing).rejects.toThrow('handler failed');
    expect(await store.reclaimExpired()).toEqual([{ id, attempt: 1, outcome: 'SCHEDULED' }]);
  });

  it('claim skips a due task while a command holds its row', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const first = await store.schedule({ kind: 'k', delayMs: 0 });
    const second = await store.schedule({ kind: 'k', delayMs: 1 });
    clock.tick(1);
    // A raw UPDATE queued on `first` holds its row until it ran; claim takes the next due task.
    const updating = store.rawUpdateTask(first.id, { kind: 'renamed' });
    const claimed = await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 });
    expect(claimed.map((c) => c.id)).toEqual([second.id]);
    expect(await updating).toBe(true);
    expect((await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 })).map((c) => [c.id, c.kind])).toEqual([[first.id, 'renamed']]);
  });

  it('concurrent completes of one attempt: one DONE with one effect, the other DONE as a retry', async () => {
    const { store, id, attempt } = await setup();
    let workCalls = 0;
    const work = async () => {
      workCalls++;
    };
    const outcomes = await Promise.all([
      store.complete({ id, attempt, owner: 'w1', work }),
      store.complete({ id, attempt, owner: 'w1', work }),
    ]);
    expect(outcomes).toEqual([CompleteOutcome.DONE, CompleteOutcome.DONE]);
    expect(workCalls).toBe(1);
    expect(await store.getCompletion(id)).toMatchObject({ taskId: id, attempt: 1, worker: 'w1' });
  });
});
