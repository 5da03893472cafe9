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
 *
 * Then the same with the queue pinned the other way a production queue gets pinned: a process that
 * listens on Postpone's channel through the store (`fixtures/listen-child.mjs`) is stopped
 * (SIGSTOP: a frozen container, a debugger); once its socket buffers are full its backend stops
 * reading (about 4.5 MB of notices on loopback here) and the queue fills. Postpone's own notices
 * alone never fill it: scheduling with a notice per task, the queue reaches half full (about 40 000
 * tasks here, most of them taken by the stopped client's socket buffers) and stays there (0.53 after
 * 10 000 more). After SIGCONT the stopped process reads again and the queue drains below half.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TaskState } from '@postpone/core';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { defaultNotifyChannel, NOTICE_QUEUE_LIMIT, type PostgresStore } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import { createPostgresJsStore } from '@postpone/postgres/postgres-js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type WorkerEvents } from '../src/index.js';
import { until } from './harness.js';

let server: EmbeddedDatabase;
let pinned: pg.Client;
const SCHEMAS = { pg: 'notify_full_worker_pg', postgres: 'notify_full_worker_pgjs' } as const;
const STOPPED_SCHEMAS = { pg: 'notify_stopped_worker_pg', postgres: 'notify_stopped_worker_pgjs' } as const;
const LISTEN_CHILD = fileURLToPath(new URL('./fixtures/listen-child.mjs', import.meta.url));
const FALLBACK_MS = 300;
const LEASE_MS = 1_500;

beforeAll(async () => {
  server = await startEmbeddedPostgres({ postgresFlags: ['-c', 'max_notify_queue_pages=64'] });
  // The stuck listener: LISTEN on the channel of the first schema, then an open transaction (it reads nothing until it ends).
  pinned = new pg.Client({ connectionString: server.url });
  await pinned.connect();
  await pinned.query(`listen ${defaultNotifyChannel(SCHEMAS.pg)}`);
  await pinned.query('begin');
  expect(await fill()).toBeLessThan(2_000);
}, 120_000);

/**
 * Notifies 7 kB at a time on `channel` until one fails with 54000 (a stopped client pins the queue
 * only with notices of a channel it listens on: its backend skips the others without writing); returns how many went through. Bounded: 6 000
 * notifies (42 MB, above 64 pages of 8 kB plus a stopped client's socket buffers). @throws when it never filled
 */
async function fill(channel = 'filler'): Promise<number> {
  const filler = new pg.Client({ connectionString: server.url });
  await filler.connect();
  try {
    const payload = 'x'.repeat(7_000);
    for (let i = 0; i < 6_000; i++) {
      try {
        await filler.query('select pg_notify($1, $2)', [channel, payload]);
      } catch (error) {
        expect((error as { code?: string }).code).toBe('54000');
        return i;
      }
    }
    throw new Error('the NOTIFY queue did not fill after 6 000 notifies');
  } finally {
    await filler.end();
  }
}

let stoppedChild: ChildProcess | undefined;
afterAll(async () => {
  await pinned?.end().catch(() => {});
  if (stoppedChild?.pid !== undefined && stoppedChild.exitCode === null) {
    process.kill(stoppedChild.pid, 'SIGCONT');
    stoppedChild.kill('SIGKILL');
  }
  await server?.stop();
});

async function usage(): Promise<number> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ u: number }>('select pg_notification_queue_usage()::float8 as u');
    return rows[0]?.u ?? -1;
  } finally {
    await client.end();
  }
}

/** A hybrid worker on `driver` and `schemas[driver]` with the queue full: every task runs, a cancel arrives, no error event. */
function workerOnFullQueue(driver: 'pg' | 'postgres', schemas: Readonly<Record<'pg' | 'postgres', string>>, fillChannel: string): void {
  let store: PostgresStore<any>;
  beforeAll(async () => {
    // Full again (a stopped client's backend may have pushed a little more into its socket meanwhile).
    await fill(fillChannel);
    const schema = schemas[driver];
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
      // The queue is still pinned (notices off): every write above succeeded without them.
      expect(await usage()).toBeGreaterThanOrEqual(NOTICE_QUEUE_LIMIT);
    } finally {
      await worker.stop({ timeoutMs: 5_000 });
    }
    expect(errors.map((e) => `${e.operation}: ${String((e.error as Error)?.message ?? e.error)}`)).toEqual([]);
  });
}

describe.each(['pg', 'postgres'] as const)('a hybrid worker with the NOTIFY queue full, pinned by an open transaction (%s)', (driver) => {
  workerOnFullQueue(driver, SCHEMAS, 'filler');
});

describe('the NOTIFY queue pinned by a stopped worker process', () => {
  beforeAll(async () => {
    // Unpin: the session in an open transaction ends, and the queue drains below half (bounded: 200 × 50 ms).
    await pinned.end();
    const probe = new pg.Client({ connectionString: server.url });
    await probe.connect();
    try {
      for (let i = 0; i < 200 && (await usage()) >= 0.5; i++) {
        await probe.query("select pg_notify('filler', 'x')").catch((error: { code?: string }) => expect(error.code).toBe('54000'));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await probe.end();
    }
    expect(await usage()).toBeLessThan(0.5);
    const child = spawn(process.execPath, [LISTEN_CHILD, JSON.stringify({ url: server.url, schema: STOPPED_SCHEMAS.pg })], { stdio: ['ignore', 'pipe', 'inherit'] });
    stoppedChild = child;
    await until(() => child.stdout?.readableLength !== 0 || child.exitCode !== null, 'the listening child ready', 30_000);
    const first = String(child.stdout?.read() ?? '');
    expect(first).toContain('ready');
    process.kill(child.pid as number, 'SIGSTOP');
  }, 120_000);

  it("Postpone's own notices stop at half full: scheduling goes on and never fills the queue", { timeout: 120_000 }, async () => {
    const store = createPgStore({ connectionString: server.url, schema: STOPPED_SCHEMAS.pg, scheduleNotices: 'each' });
    try {
      const batch = () => store.scheduleMany(Array.from({ length: 200 }, (_, i) => ({ kind: 'flood', payload: { i } })));
      // Bounded: 1 000 batches of 200 notices (about 25 MB of them), far above the stopped client's socket buffers and the queue.
      let batches = 0;
      while (batches < 1_000 && (await usage()) < NOTICE_QUEUE_LIMIT) {
        await batch();
        batches += 1;
      }
      expect(await usage()).toBeGreaterThanOrEqual(NOTICE_QUEUE_LIMIT);
      // 50 batches more (10 000 tasks): no notice sent, so the queue stays where it was, below full.
      for (let i = 0; i < 50; i++) await batch();
      const plateau = await usage();
      expect(plateau).toBeGreaterThanOrEqual(NOTICE_QUEUE_LIMIT);
      // At most one batch's notices above the limit (200 × ~130 bytes of 512 kB: 0.05).
      expect(plateau).toBeLessThan(NOTICE_QUEUE_LIMIT + 0.06);
      expect(await store.countByState()).toMatchObject({ [TaskState.SCHEDULED]: (batches + 50) * 200 });
      await store.cancelMany({ kinds: ['flood'] }, { batchSize: 1_000 });
    } finally {
      await store.close();
    }
  });

  describe.each(['pg', 'postgres'] as const)('a hybrid worker (%s)', (driver) => {
    workerOnFullQueue(driver, STOPPED_SCHEMAS, defaultNotifyChannel(STOPPED_SCHEMAS.pg));
  });

  it('after SIGCONT the stopped process reads again and the queue drains below half', { timeout: 30_000 }, async () => {
    const child = stoppedChild as ChildProcess;
    process.kill(child.pid as number, 'SIGCONT');
    await until(async () => (await usage()) < 0.5, 'the queue drained', 20_000);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
