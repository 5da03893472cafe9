/**
 * One store under test plus the few raw seams the worker tests need: a side table the handlers write
 * in the completing transaction ("booking"), and a way to take a lease away (raw UPDATE + reclaim),
 * as another worker would after the holder froze.
 */
import type { Store, TaskId } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createMemoryStore, type MemoryTx } from '@postpone/memory';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import { createPostgresJsStore, type PostgresJsTx } from '@postpone/postgres/postgres-js';
import pg from 'pg';
import { afterEach } from 'vitest';

export interface Booking {
  readonly taskId: TaskId;
  readonly attempt: number;
}

export interface Harness<Tx> {
  readonly name: string;
  readonly store: Store<Tx>;
  /** The PostgreSQL schema of the store's tables (not for the in-memory store). */
  readonly schema?: string;
  /** Inserts the booking of a task (primary key task id) through the completing transaction. */
  writeBooking(tx: Tx, booking: Booking): Promise<void>;
  /** Committed bookings. */
  bookings(): Promise<Booking[]>;
  /** Makes the lease of `id` expired now (store clock), as if the holder stopped renewing long ago. */
  expireLease(id: TaskId): Promise<void>;
  close(): Promise<void>;
}

export async function memoryHarness(): Promise<Harness<MemoryTx>> {
  const store = createMemoryStore();
  return {
    name: 'memory',
    store,
    writeBooking: async (tx, booking) => tx.insert('booking', booking.taskId, { attempt: booking.attempt }),
    bookings: async () => [...store.table('booking')].map(([taskId, row]) => ({ taskId, attempt: (row as { attempt: number }).attempt })),
    expireLease: async (id) => {
      await store.rawUpdateTask(id, { leaseUntil: new Date(Date.now() - 1_000) });
    },
    close: () => store.close(),
  };
}

/** A fresh schema on the test database with the store's tables and a `booking` table. */
async function pgSchema(prefix: string): Promise<{ url: string; schema: string; pool: pg.Pool }> {
  const url = testDatabaseUrl();
  const schema = uniqueSchemaName(prefix);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  await pool.query(`create schema ${schema}`);
  return { url, schema, pool };
}

async function pgSeams<Tx>(name: string, store: Store<Tx>, schema: string, pool: pg.Pool, url: string, write: Harness<Tx>['writeBooking']): Promise<Harness<Tx>> {
  await store.migrate();
  await pool.query(`create table ${schema}.booking (task_id bigint primary key, attempt integer not null)`);
  return {
    name,
    store,
    schema,
    writeBooking: write,
    bookings: async () =>
      (await pool.query<{ task_id: string; attempt: number }>(`select task_id::text, attempt from ${schema}.booking order by task_id`)).rows.map((r) => ({
        taskId: r.task_id,
        attempt: r.attempt,
      })),
    expireLease: async (id) => {
      await pool.query(`update ${schema}.task set lease_until = now() - interval '1 second' where id = $1 and state = 'CLAIMED'`, [id]);
    },
    close: async () => {
      await store.close();
      await pool.end();
      await dropSchema(url, schema);
    },
  };
}

export async function pgHarness(): Promise<Harness<PgTx>> {
  const { url, schema, pool } = await pgSchema('worker_pg');
  const store = createPgStore({ connectionString: url, schema });
  return pgSeams('pg', store, schema, pool, url, async (tx, b) => {
    await tx.query(`insert into ${schema}.booking (task_id, attempt) values ($1, $2)`, [b.taskId, b.attempt]);
  });
}

export async function postgresJsHarness(): Promise<Harness<PostgresJsTx>> {
  const { url, schema, pool } = await pgSchema('worker_pgjs');
  const store = createPostgresJsStore({ connectionString: url, schema });
  return pgSeams('postgres-js', store, schema, pool, url, async (tx, b) => {
    await tx.unsafe(`insert into ${schema}.booking (task_id, attempt) values ($1, $2)`, [b.taskId, b.attempt]);
  });
}

/** Polls `check` every 10 ms until it returns true; fails after `timeoutMs` (never sleep-and-hope). */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A promise with its resolve, for gating handlers from the test. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** The stores the worker tests run against (`describe.each`): in memory and PostgreSQL through pg. */
export const STORE_HARNESSES: [string, () => Promise<Harness<unknown>>][] = [
  ['memory', memoryHarness],
  ['pg', pgHarness],
];

/**
 * What a test opens and must give back: call in a `describe`; `open` makes the test's harness and
 * `track` keeps a worker, and after each test the tracked workers are stopped (no wait for handlers)
 * and the harness is closed.
 */
export function perTest(): {
  open<Tx>(make: () => Promise<Harness<Tx>>): Promise<Harness<Tx>>;
  track<W extends { stop(options: { timeoutMs: number }): Promise<unknown> }>(worker: W): W;
} {
  const workers: { stop(options: { timeoutMs: number }): Promise<unknown> }[] = [];
  let harness: { close(): Promise<void> } | undefined;
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 0 })));
    await harness?.close();
    harness = undefined;
  });
  return {
    async open(make) {
      const h = await make();
      harness = h;
      return h;
    },
    track(worker) {
      workers.push(worker);
      return worker;
    },
  };
}
