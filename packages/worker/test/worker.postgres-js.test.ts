import { type ClaimedTask, TaskState } from '@postpone/core';
import type { PostgresJsTx } from '@postpone/postgres/postgres-js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorker, waitForEvent } from '../src/index.js';
import { type Harness, postgresJsHarness } from './harness.js';

describe('worker on PostgreSQL (postgres.js)', () => {
  let h: Harness<PostgresJsTx>;
  beforeEach(async () => {
    h = await postgresJsHarness();
  });
  afterEach(async () => {
    await h.close();
  });

  it('commits the handler write with DONE through a postgres.js TransactionSql', async () => {
    const { id } = await h.store.schedule({ kind: 'book', payload: { n: 3 } });
    const worker = createWorker({
      store: h.store,
      handlers: {
        book: async (task: ClaimedTask<{ n: number }>, ctx) => {
          ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: ctx.attempt }));
          return task.payload.n + 1;
        },
      },
    });
    const completed = waitForEvent(worker, 'completed');
    await worker.runOnce();
    expect((await completed)[0]?.outcome).toBe('DONE');
    await worker.stop({ timeoutMs: 0 });
    expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DONE, result: 4 });
    expect(await h.store.getCompletion(id)).toMatchObject({ attempt: 1, worker: worker.id });
    expect(await h.bookings()).toEqual([{ taskId: id, attempt: 1 }]);
  });
});
