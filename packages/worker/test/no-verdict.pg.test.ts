/**
 * Writes the database gave no verdict on (issue 26 A), on a real PostgreSQL: a fenced complete or
 * fail cut short by a lock timeout (55P03), a statement timeout (57014) or a serialization failure
 * (40001) is not the handler's failure and does not give the task up: the worker tries it again
 * while it holds the lease, renews the lease meanwhile, and the task ends as if nothing happened
 * (attempt 1, failures 0 for a handler that succeeded).
 *
 * Each test injects its fault with SQL only: a row lock held from another session with the worker's
 * `lock_timeout` low; a trigger that sleeps in the completion's DELETE with the worker's
 * `statement_timeout` low; a trigger that raises 40001 on the fail's UPDATE. Then the fault is lifted.
 */
import { type StoreError, type TaskId, StoreError as StoreErrorClass } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import { createPostgresJsStore } from '@postpone/postgres/postgres-js';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker, type WorkerEventName, type WorkerEvents } from '../src/index.js';
import { gate, until } from './harness.js';

const url = testDatabaseUrl();
const schema = uniqueSchemaName('no_verdict');
const admin = new pg.Pool({ connectionString: url, max: 3 });
const t = (name: string) => `${schema}.${name}`;

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => void unhandled.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  const store = createPgStore({ connectionString: url, schema });
  await store.migrate();
  await store.close();
  await admin.query(`create table ${t('fault')} (name text primary key, active boolean not null)`);
  await admin.query(`insert into ${t('fault')} values ('slow_complete', false), ('serialization_on_fail', false)`);
  // The completion moves the row out of `task` with a DELETE: slow it down while the fault is on.
  await admin.query(`create function ${t('slow_complete')}() returns trigger language plpgsql as $$
    begin
      if (select active from ${t('fault')} where name = 'slow_complete') then perform pg_sleep(2); end if;
      return old;
    end $$`);
  await admin.query(`create trigger slow_complete before delete on ${t('task')} for each row execute function ${t('slow_complete')}()`);
  // The fail is an UPDATE that counts a failure (a renewal changes only the lease): refuse it with 40001 while on.
  await admin.query(`create function ${t('serialization_on_fail')}() returns trigger language plpgsql as $$
    begin
      if new.failures <> old.failures and (select active from ${t('fault')} where name = 'serialization_on_fail') then
        raise exception 'could not serialize access (injected)' using errcode = '40001';
      end if;
      return new;
    end $$`);
  await admin.query(`create trigger serialization_on_fail before update on ${t('task')} for each row execute function ${t('serialization_on_fail')}()`);
});

afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await admin.end();
  await dropSchema(url, schema);
});

const workers: Worker<PgTx>[] = [];
const stores: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 0 })));
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await admin.query(`update ${t('fault')} set active = false`);
  await admin.query(`delete from ${t('task')}`);
});

type Settings = { lock_timeout?: number; statement_timeout?: number };

/** A store of `driver` whose sessions have `settings` (e.g. `{ lock_timeout: 200 }`), as the worker's store. */
function storeWith(settings: Settings, driver: 'pg' | 'postgres-js' = 'pg') {
  const store =
    driver === 'pg'
      ? createPgStore({ connectionString: url, schema, poolConfig: settings })
      : createPostgresJsStore({ connectionString: url, schema, connectionOptions: { connection: settings } });
  stores.push(store as { close(): Promise<void> });
  // One type for both: the tests use only the Store API, never the transaction handle.
  return store as ReturnType<typeof createPgStore>;
}

/** Every event of `names` the worker emits, in order. */
function record(worker: Worker<PgTx>, names: readonly WorkerEventName[]): { name: WorkerEventName; payload: unknown }[] {
  const seen: { name: WorkerEventName; payload: unknown }[] = [];
  for (const name of names) worker.on(name, (payload) => void seen.push({ name, payload }));
  return seen;
}

/** The store errors of `operation` among the recorded `error` events, as (sqlState, transient). */
function storeErrors(seen: { name: WorkerEventName; payload: unknown }[], operation: string): { sqlState: string | undefined; transient: boolean }[] {
  return seen
    .filter((e) => e.name === 'error' && (e.payload as WorkerEvents['error']).operation === operation)
    .map((e) => (e.payload as WorkerEvents['error']).error)
    .map((error) => {
      expect(StoreErrorClass.isInstance(error) && (error as StoreError).code === 'STORE_ERROR', String(error)).toBe(true);
      return { sqlState: (error as StoreError).sqlState, transient: (error as StoreError).transient };
    });
}

async function row(id: TaskId): Promise<{ state: string; attempt: number; failures: number }> {
  const task = await storeWith({}).getTask(id);
  if (task === null) throw new Error(`no task ${id}`);
  return { state: task.state, attempt: task.attempt, failures: task.failures };
}

const EVENTS: readonly WorkerEventName[] = ['error', 'completed', 'failed', 'leaseLost', 'reclaimed', 'renewed', 'rejectedStale'];

/**
 * A worker whose `charge` handler holds its first run until `proceed` opens (later runs return at
 * once), with one `charge` task scheduled and that first run started; `charges()` counts the runs.
 */
async function startHeldCharge(store: ReturnType<typeof storeWith>, options: { id: string; leaseMs: number; renewEveryMs?: number; reclaimEveryMs?: number }) {
  const started = gate();
  const proceed = gate();
  let calls = 0;
  const worker = createWorker({
    store,
    ...options,
    pollIntervalMs: 20,
    completeBatchSize: 1,
    handlers: {
      charge: async () => {
        calls += 1;
        if (calls === 1) {
          started.open();
          await proceed.promise;
        }
        return { charged: calls };
      },
    },
  });
  workers.push(worker);
  const seen = record(worker, EVENTS);
  const { id } = await store.schedule({ kind: 'charge' });
  worker.start();
  await started.promise;
  return { seen, id, proceed, charges: () => calls };
}

describe.each(['pg', 'postgres-js'] as const)('writes with no verdict are tried again under the lease (PostgreSQL, %s)', (driver) => {
  it('55P03: a complete blocked by another session’s row lock past lock_timeout ends DONE at attempt 1 with failures 0', async () => {
    const store = storeWith({ lock_timeout: 200 }, driver);
    const { seen, id, proceed } = await startHeldCharge(store, { id: 'no-verdict-lock', leaseMs: 5_000 });

    // Another session takes the row lock the fenced complete needs, and holds it.
    const holder = await admin.connect();
    try {
      await holder.query('begin');
      await holder.query(`select id from ${t('task')} where id = $1 for update`, [id]);
      proceed.open();
      await until(() => storeErrors(seen, 'complete').length >= 3, 'three complete tries refused with 55P03');
      expect(await row(id)).toEqual({ state: 'CLAIMED', attempt: 1, failures: 0 });
      await holder.query('commit');
    } finally {
      holder.release();
    }

    await until(() => seen.some((e) => e.name === 'completed'), 'the completion');
    const errors = storeErrors(seen, 'complete');
    expect(errors.length).toBeGreaterThanOrEqual(3);
    expect(errors.every((e) => e.sqlState === '55P03' && e.transient)).toBe(true);
    const completed = seen.filter((e) => e.name === 'completed').map((e) => (e.payload as WorkerEvents['completed']).outcome);
    expect(completed).toEqual(['DONE']);
    expect(seen.filter((e) => ['failed', 'leaseLost', 'reclaimed', 'rejectedStale'].includes(e.name))).toEqual([]);
    expect(await row(id)).toEqual({ state: 'DONE', attempt: 1, failures: 0 });
    expect(unhandled).toEqual([]);
  });

  /**
   * A `send` task (maxAttempts 1) whose handler succeeds and writes `statement` to the invoice row in
   * its completing transaction, on a store of `driver` with `lock_timeout` 200 ms, while another
   * session holds that row (`holder`, in an open transaction): scheduled, and the worker started.
   */
  async function startInvoiceWrite(statement: string, workerId: string) {
    await admin.query(`create table if not exists ${t('invoice')} (id int primary key, sent int not null default 0)`);
    await admin.query(`insert into ${t('invoice')} values (1, 0) on conflict (id) do update set sent = 0`);
    const store = storeWith({ lock_timeout: 200 }, driver);
    const started = gate();
    const worker = createWorker({
      store,
      id: workerId,
      leaseMs: 5_000,
      pollIntervalMs: 20,
      handlers: {
        send: async (_task, ctx) => {
          ctx.onCompleteTx(async (tx) => {
            if (driver === 'pg') await tx.query(statement);
            else await (tx as unknown as { unsafe(text: string): Promise<unknown> }).unsafe(statement);
          });
          started.open();
          return 'sent';
        },
      },
    });
    workers.push(worker);
    const seen = record(worker, EVENTS);
    const holder = await admin.connect();
    await holder.query('begin');
    await holder.query(`select id from ${t('invoice')} where id = 1 for update`);
    const { id } = await store.schedule({ kind: 'send', maxAttempts: 1 });
    worker.start();
    return { seen, id, started, holder };
  }

  it('55P03 in the handler’s own onCompleteTx write (its row locked past lock_timeout): tried again, DONE at attempt 1 with failures 0, the write committed once', async () => {
    const { seen, id, started, holder } = await startInvoiceWrite(`update ${t('invoice')} set sent = sent + 1 where id = 1`, 'no-verdict-work-lock');
    try {
      await started.promise;
      await until(() => storeErrors(seen, 'complete').length >= 3, 'three completes whose write met 55P03');
      expect(await row(id)).toEqual({ state: 'CLAIMED', attempt: 1, failures: 0 });
      await holder.query('commit');

      await until(() => seen.some((e) => e.name === 'completed'), 'the completion');
      expect(storeErrors(seen, 'complete').every((e) => e.sqlState === '55P03' && e.transient)).toBe(true);
      expect(seen.filter((e) => e.name === 'completed').map((e) => (e.payload as WorkerEvents['completed']).outcome)).toEqual(['DONE']);
      expect(seen.filter((e) => ['failed', 'leaseLost', 'reclaimed', 'rejectedStale'].includes(e.name))).toEqual([]);
      expect(await row(id)).toEqual({ state: 'DONE', attempt: 1, failures: 0 });
      expect((await admin.query(`select sent from ${t('invoice')} where id = 1`)).rows[0].sent).toBe(1);
      expect(unhandled).toEqual([]);
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
  });

  it('55P03 of the write\'s own NOWAIT is the answer it asked for: the handler\'s failure, counted once, not retried', async () => {
    const { seen, id, holder } = await startInvoiceWrite(`select id from ${t('invoice')} where id = 1 for update nowait`, 'no-verdict-nowait');
    try {
      await until(() => seen.some((e) => e.name === 'failed'), 'the failed attempt');
      // Tried once: one error event, the driver's own error (no StoreError), and no second try.
      const tries = seen.filter((e) => e.name === 'error' && (e.payload as WorkerEvents['error']).operation === 'complete');
      expect(tries).toHaveLength(1);
      const [only] = tries;
      expect(only && StoreErrorClass.isInstance((only.payload as WorkerEvents['error']).error)).toBe(false);
      const task = await storeWith({}).getTask(id);
      expect(task).toMatchObject({ state: 'DEAD', attempt: 1, failures: 1 });
      expect(task?.lastError).toMatch(/55P03/);
      expect(task?.lastError).toMatch(/could not obtain lock/);
      expect(unhandled).toEqual([]);
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
  });

  it('57014: completions cut by statement_timeout for longer than two leases are retried, the lease renewed meanwhile; DONE at attempt 1, failures 0', async () => {
    const leaseMs = 1_500;
    const store = storeWith({ statement_timeout: 300 }, driver);
    const worker = createWorker({
      store,
      id: 'no-verdict-timeout',
      leaseMs,
      renewEveryMs: 400,
      pollIntervalMs: 20,
      handlers: { ship: async () => ({ shipped: 1 }) },
    });
    workers.push(worker);
    const seen = record(worker, EVENTS);
    await admin.query(`update ${t('fault')} set active = true where name = 'slow_complete'`);
    const { id } = await store.schedule({ kind: 'ship' });
    worker.start();

    await until(() => storeErrors(seen, 'complete').length >= 1, 'a complete cut by statement_timeout');
    const firstErrorAt = Date.now();
    const renewedBefore = seen.filter((e) => e.name === 'renewed').length;
    // Longer than two leases: without renewals while retrying, the lease would run out and reclaim count a failure.
    await new Promise((resolve) => setTimeout(resolve, 2 * leaseMs + 500));
    expect(await row(id)).toEqual({ state: 'CLAIMED', attempt: 1, failures: 0 });
    await admin.query(`update ${t('fault')} set active = false where name = 'slow_complete'`);
    const liftedAt = Date.now();

    await until(() => seen.some((e) => e.name === 'completed'), 'the completion');
    expect(liftedAt - firstErrorAt).toBeGreaterThan(2 * leaseMs);
    const errors = storeErrors(seen, 'complete');
    expect(errors.length).toBeGreaterThanOrEqual(3);
    expect(errors.every((e) => e.sqlState === '57014' && e.transient)).toBe(true);
    expect(seen.filter((e) => e.name === 'renewed').length - renewedBefore).toBeGreaterThanOrEqual(3);
    expect(seen.filter((e) => e.name === 'completed').map((e) => (e.payload as WorkerEvents['completed']).outcome)).toEqual(['DONE']);
    expect(seen.filter((e) => ['failed', 'leaseLost', 'reclaimed', 'rejectedStale'].includes(e.name))).toEqual([]);
    expect(await row(id)).toEqual({ state: 'DONE', attempt: 1, failures: 0 });
    expect(unhandled).toEqual([]);
  }, 20_000);

  it('a fault that outlasts the lease: retries stop once the lease is gone (bounded, nothing unhandled), and reclaim takes the task', async () => {
    const leaseMs = 1_500;
    const store = storeWith({ lock_timeout: 200 }, driver);
    const { seen, id, proceed, charges } = await startHeldCharge(store, { id: 'no-verdict-lost', leaseMs, renewEveryMs: 500, reclaimEveryMs: 100 });

    // The row lock is held for two leases: renewals and completes are all refused with 55P03.
    const holder = await admin.connect();
    try {
      await holder.query('begin');
      await holder.query(`select id from ${t('task')} where id = $1 for update`, [id]);
      proceed.open();
      await new Promise((resolve) => setTimeout(resolve, leaseMs + 1_000));
      const triesAfterLease = storeErrors(seen, 'complete').length;
      await new Promise((resolve) => setTimeout(resolve, leaseMs));
      // No try since the lease ran out: the worker left the task to reclaim.
      expect(storeErrors(seen, 'complete').length).toBe(triesAfterLease);
      expect(triesAfterLease).toBeGreaterThanOrEqual(2);
      expect(storeErrors(seen, 'extend').every((e) => e.sqlState === '55P03' && e.transient)).toBe(true);
      expect(await row(id)).toEqual({ state: 'CLAIMED', attempt: 1, failures: 0 });
      await holder.query('commit');
    } finally {
      holder.release();
    }

    await until(() => seen.some((e) => e.name === 'completed'), 'the completion of attempt 2');
    expect(seen.filter((e) => e.name === 'reclaimed')).toHaveLength(1);
    expect(seen.filter((e) => e.name === 'completed').map((e) => (e.payload as WorkerEvents['completed']).task.attempt)).toEqual([2]);
    expect(seen.filter((e) => e.name === 'failed')).toEqual([]);
    expect(charges()).toBe(2);
    // Reclaim counts the expired lease (docs/contract.md#transitions): the one failure is the lost lease's.
    expect(await row(id)).toEqual({ state: 'DONE', attempt: 2, failures: 1 });
    expect(unhandled).toEqual([]);
  }, 20_000);

  it('40001: a fail refused with a serialization failure is retried and counted once; the next attempt completes', async () => {
    const store = storeWith({}, driver);
    let calls = 0;
    const worker = createWorker({
      store,
      id: 'no-verdict-fail',
      leaseMs: 5_000,
      pollIntervalMs: 20,
      backoffBaseMs: 0,
      handlers: {
        flaky: async () => {
          calls += 1;
          if (calls === 1) throw new Error('the payment service said 503');
          return 'ok';
        },
      },
    });
    workers.push(worker);
    const seen = record(worker, EVENTS);
    await admin.query(`update ${t('fault')} set active = true where name = 'serialization_on_fail'`);
    const { id } = await store.schedule({ kind: 'flaky' });
    worker.start();

    await until(() => storeErrors(seen, 'fail').length >= 3, 'three fail tries refused with 40001');
    expect(await row(id)).toEqual({ state: 'CLAIMED', attempt: 1, failures: 0 });
    await admin.query(`update ${t('fault')} set active = false where name = 'serialization_on_fail'`);

    await until(() => seen.some((e) => e.name === 'completed'), 'the second attempt’s completion');
    expect(storeErrors(seen, 'fail').every((e) => e.sqlState === '40001' && e.transient)).toBe(true);
    const failed = seen.filter((e) => e.name === 'failed').map((e) => (e.payload as WorkerEvents['failed']).result.outcome);
    expect(failed).toEqual(['SCHEDULED']);
    expect(calls).toBe(2);
    expect(seen.filter((e) => ['leaseLost', 'reclaimed', 'rejectedStale'].includes(e.name))).toEqual([]);
    expect(await row(id)).toEqual({ state: 'DONE', attempt: 2, failures: 1 });
    expect(unhandled).toEqual([]);
  });
});
