/**
 * A full NOTIFY queue under a running worker (issue #26 item 4, README "Failure modes", evidence
 * `notify_queue_full`). A session LISTENs on Postpone's own channel — as a stuck worker would — and
 * then sits in an open transaction, so it never reads: PostgreSQL's one NOTIFY queue per cluster
 * cannot move past it, and once the queue is full every transaction that notifies fails at commit
 * with 54000. On a server of its own with the smallest queue (`max_notify_queue_pages=64`), a hybrid
 * worker on each driver is started after the queue is full (its LISTEN check cannot get a probe
 * through) and must still run every task: scheduled one by one and in a keyed batch, found by the
 * fallback poll since the store sends no notices now; a cancel reaches a running handler at its
 * lease renewal; and no `error` event, no unhandled rejection.
 */
import { TaskState } from '@postpone/core';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { defaultNotifyChannel, type PostgresStore } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import { createPostgresJsStore } from '@postpone/postgres/postgres-js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type WorkerEvents } from '../src/index.js';
import { until } from './harness.js';

let server: EmbeddedDatabase;
let pinned: pg.Client;
const SCHEMAS = { pg: 'notify_full_worker_pg', postgres: 'notify_full_worker_pgjs' } as const;
const FALLBACK_MS = 300;
const LEASE_MS = 1_500;

beforeAll(async () => {
  server = await startEmbeddedPostgres({ postgresFlags: ['-c', 'max_notify_queue_pages=64'] });
  // The stuck listener: LISTEN on the channel of the first schema, then an open transaction (it reads nothing until it ends).
  pinned = new pg.Client({ connectionString: server.url });
  await pinned.connect();
  await pinned.query(`listen ${defaultNotifyChannel(SCHEMAS.pg)}`);
  await pinned.query('begin');
  const filler = new pg.Client({ connectionString: server.url });
  await filler.connect();
  try {
    const payload = 'x'.repeat(7_000);
    let full = false;
    // Bounded: 2 000 notifies of 7 kB is 14 MB, far above 64 pages of 8 kB.
    for (let i = 0; i < 2_000 && !full; i++) {
      try {
        await filler.query('select pg_notify($1, $2)', ['filler', payload]);
      } catch (error) {
        expect((error as { code?: string }).code).toBe('54000');
        full = true;
      }
    }
    expect(full).toBe(true);
  } finally {
    await filler.end();
  }
}, 120_000);

afterAll(async () => {
  await pinned?.end().catch(() => {});
  await server?.stop();
});

async function usage(): Promise<number> {
  const { rows } = await pinned.query<{ u: number }>('select pg_notification_queue_usage()::float8 as u');
  return rows[0]?.u ?? -1;
}

describe.each(['pg', 'postgres'] as const)('a hybrid worker with the NOTIFY queue full (%s)', (driver) => {
  let store: PostgresStore<any>;
  beforeAll(async () => {
    const schema = SCHEMAS[driver];
    store = driver === 'pg' ? createPgStore({ connectionString: server.url, schema }) : createPostgresJsStore({ connectionString: server.url, schema });
    await store.migrate();
  });
  afterAll(() => store.close());

  it('runs every task (by the fallback poll), a cancel reaches the running handler, no error event', { timeout: 60_000 }, async () => {
    expect(await usage()).toBeGreaterThan(0.9);
    const errors: WorkerEvents['error'][] = [];
    let cancelledRun: { aborted: boolean; attempt: number } | null = null;
    const worker = createWorker<any>({
      store,
      discovery: 'hybrid',
      hybrid: { fallbackPollMs: FALLBACK_MS },
      leaseMs: LEASE_MS,
      logLevel: 'silent',
      handlers: {
        job: async () => 'ok',
        long: async (_payload, ctx) => {
          // Bounded: ends when cancelled, or after 20 s.
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 20_000);
            ctx.signal.addEventListener('abort', () => {
              clearTimeout(timer);
              resolve();
            });
          });
          cancelledRun = { aborted: ctx.signal.aborted, attempt: ctx.attempt };
          if (ctx.signal.aborted) throw new Error('cancelled');
        },
      },
    });
    worker.on('error', (e) => errors.push(e));
    worker.start();
    try {
      const single = await Promise.all(Array.from({ length: 5 }, (_, i) => store.schedule({ kind: 'job', payload: { i } })));
      const batch = await store.scheduleMany(Array.from({ length: 5 }, (_, i) => ({ kind: 'job', key: `k${i}`, payload: { i } })));
      const ids = [...single, ...batch].map((t) => t.id);
      await until(async () => {
        const tasks = await Promise.all(ids.map((id) => store.getTask(id)));
        return tasks.every((t) => t?.state === TaskState.DONE);
      }, 'every task DONE', 20_000);

      const long = await store.schedule({ kind: 'long' });
      await until(async () => (await store.getTask(long.id))?.state === TaskState.CLAIMED, 'the long task claimed', 20_000);
      expect(await store.cancel(long.id)).toBe('REQUESTED');
      await until(() => cancelledRun !== null, 'the handler seeing its cancel', 20_000);
      expect(cancelledRun).toEqual({ aborted: true, attempt: 1 });
      await until(async () => (await store.getTask(long.id))?.state === TaskState.CANCELLED, 'the long task CANCELLED', 20_000);
      // The queue is still full: nothing above read it, and every write above succeeded.
      expect(await usage()).toBeGreaterThan(0.9);
    } finally {
      await worker.stop({ timeoutMs: 5_000 });
    }
    expect(errors.map((e) => `${e.operation}: ${String((e.error as Error)?.message ?? e.error)}`)).toEqual([]);
  });
});
