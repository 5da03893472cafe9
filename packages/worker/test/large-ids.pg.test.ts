/**
 * Large identifiers through the worker (issue #26, item 3): the id sequence restarted just below
 * 2⁵³, six tasks whose ids straddle it (9007199254740989 … 9007199254740994; a JavaScript number
 * would read …993 as …992), run by a polling and a hybrid worker on both drivers: each handler sees
 * its task's exact id, each booking (written through `ctx.onCompleteTx`, a `bigint` key) lands under that id,
 * and each task is DONE once at attempt 1.
 */
import { TaskState } from '@postpone/core';
import pg from 'pg';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../src/index.js';
import { type Harness, pgHarness, postgresJsHarness, until } from './harness.js';

const FIRST = 2n ** 53n - 3n;
const N = 6;

describe.each([
  ['pg', pgHarness],
  ['postgres-js', postgresJsHarness],
] as const)('ids past 2^53 through the worker (%s)', (_name, makeHarness) => {
  const open: { worker: Worker<unknown>; h: Harness<unknown> }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) {
      await o.worker.stop({ timeoutMs: 0 });
      await o.h.close();
    }
  });

  it.each(['poll', 'hybrid'] as const)('%s discovery runs each task once under its exact id', async (discovery) => {
    const h = (await makeHarness()) as Harness<unknown>;
    const admin = new pg.Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
    try {
      await admin.query(`alter table ${h.schema}.task alter column id restart with ${FIRST}`);
    } finally {
      await admin.end();
    }
    const seen: string[] = [];
    const worker = createWorker<unknown>({
      store: h.store,
      discovery,
      concurrency: 3,
      pollIntervalMs: 50,
      handlers: {
        big: async (task, ctx) => {
          seen.push(task.id);
          ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: task.attempt }));
          return { id: task.id };
        },
      },
    });
    open.push({ worker, h });
    worker.start();
    const scheduled = await h.store.scheduleMany(Array.from({ length: N }, (_, i) => ({ kind: 'big', delayMs: 100 + 20 * i })));
    const expected = Array.from({ length: N }, (_, i) => (FIRST + BigInt(i)).toString());
    expect(scheduled.map((t) => t.id)).toEqual(expected);
    await until(async () => (await h.bookings()).length === N, 'every task booked', 15_000);
    await until(async () => (await Promise.all(expected.map((id) => h.store.getTask(id)))).every((t) => t?.state === TaskState.DONE), 'every task DONE', 15_000);
    expect([...seen].sort()).toEqual(expected);
    expect((await h.bookings()).map((b) => [String(b.taskId), b.attempt]).sort()).toEqual(expected.map((id) => [id, 1]));
    for (const id of expected) expect(await h.store.getTask(id)).toMatchObject({ id, state: TaskState.DONE, attempt: 1, result: { id } });
  });
});
