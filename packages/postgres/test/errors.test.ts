/**
 * Driver errors → core typed errors (`packages/postgres/src/store` errors.ts), with real errors from both drivers and a real
 * lost connection (`pg_terminate_backend` from another session).
 */
import { ConnectionLostError, StoreClosedError, StoreError, TestClock, ValidationError } from '@postpone/core';
import pg from 'pg';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { captureError } from '@postpone/conformance';
import { NO_VERDICT_SQLSTATES, SqlState, sqlStateOf, translateError } from '../src/index.js';
import { isCachedPlanChanged, isDriverLevelError, isLockTimeout, isNotifyQueueFull } from '../src/store/errors.js';
import { createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';
import { blockStore, DRIVERS, makeKit, migratedSchema, waitFor } from './support/kits.js';

const admin = migratedSchema('errors');


/** One raw statement through each driver, returning what it threw. */
const RAW: Record<(typeof DRIVERS)[number], (text: string, params: unknown[]) => Promise<unknown>> = {
  async pg(text, params) {
    const client = new pg.Client({ connectionString: admin.url });
    await client.connect();
    try {
      return await captureError(() => client.query(text, params));
    } finally {
      await client.end();
    }
  },
  async postgres(text, params) {
    const sql = postgres(admin.url, { max: 1, onnotice: () => {} });
    try {
      return await captureError(() => sql.unsafe(text, params as string[]));
    } finally {
      // postgres.js 3.4.9: end() after a connection died mid-query waits for its timeout (porsager/postgres#1097).
      await sql.end({ timeout: 1 });
    }
  },
};

/** `select pg_sleep(5)` through each driver on a connection whose `statement_timeout` is 50 ms: what it threw. */
const TIMED_OUT: Record<(typeof DRIVERS)[number], () => Promise<unknown>> = {
  async pg() {
    const client = new pg.Client({ connectionString: admin.url, statement_timeout: 50 });
    await client.connect();
    try {
      return await captureError(() => client.query('select pg_sleep(5)'));
    } finally {
      await client.end();
    }
  },
  async postgres() {
    const sql = postgres(admin.url, { max: 1, onnotice: () => {}, connection: { statement_timeout: 50 } });
    try {
      return await captureError(() => sql.unsafe('select pg_sleep(5)'));
    } finally {
      await sql.end({ timeout: 1 });
    }
  },
};

describe.each(DRIVERS)('translateError with real %s errors', (driver) => {
  it('22P05 (\\u0000 in jsonb) → ValidationError INVALID_PAYLOAD', async () => {
    const error = translateError(await RAW[driver]('select $1::text::jsonb', ['"a\\u0000b"']));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe('INVALID_PAYLOAD');
  });

  it('23514 check violation → StoreError with sqlState', async () => {
    const error = translateError(
      await RAW[driver](`insert into ${admin.t('task')} (kind, state, due_at, max_attempts) values ('k', 'CLAIMED', now(), 1)`, []),
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).sqlState).toBe(SqlState.CHECK_VIOLATION);
    expect(await admin.count()).toBe(0);
  });

  it('23514 a finished state written into the live table (migration 12, task_live_state) → StoreError with sqlState', async () => {
    for (const state of ['DONE', 'DEAD', 'CANCELLED']) {
      const error = translateError(await RAW[driver](`insert into ${admin.t('task')} (kind, state, due_at, max_attempts) values ('k', $1, now(), 1)`, [state]));
      expect(error, state).toBeInstanceOf(StoreError);
      expect((error as StoreError).sqlState, state).toBe(SqlState.CHECK_VIOLATION);
      expect((error as StoreError).message, state).toContain('task_live_state');
    }
    expect(await admin.count()).toBe(0);
  });

  it('a syntax error → StoreError 42601', async () => {
    const error = translateError(await RAW[driver]('selec 1', []));
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).sqlState).toBe('42601');
  });

  it('57014 (a real statement_timeout) → StoreError transient: the statement has no verdict, a retry may succeed', async () => {
    const error = translateError(await TIMED_OUT[driver]());
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).sqlState).toBe(SqlState.QUERY_CANCELED);
    expect((error as StoreError).transient).toBe(true);
  });

  it.each([
    ['55P03', true],
    ['40P01', true],
    ['40001', true],
    ['57014', true],
    // A read-only node after a failover: "wrong node"; the adapter discards the connection, so a retry goes elsewhere.
    ['25006', true],
    ['23505', false],
    ['42P01', false],
  ])('SQLSTATE %s raised by the server → StoreError transient %s', async (sqlState, transient) => {
    const raw = await RAW[driver](`do $$ begin raise exception 'raised' using errcode = '${sqlState}'; end $$`, []);
    // Raised by a handler's own statement inside complete (`onCompleteTx`), these codes are the
    // store's to retry when transient — all but 55P03, which is the store's only when `lock_timeout`
    // raised it (the next test), not RAISE or a NOWAIT; the two refused ones are the handler's.
    expect(isDriverLevelError(raw)).toBe(transient && sqlState !== '55P03');
    const error = translateError(raw);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).sqlState).toBe(sqlState);
    expect((error as StoreError).transient).toBe(transient);
    // 25006 is not a no-verdict code (the same connection would answer the same): transient because its connection is discarded.
    expect(NO_VERDICT_SQLSTATES.has(sqlState)).toBe(transient && sqlState !== '25006');
  });

  it('55P03 of lock_timeout is the store\'s to retry inside a handler\'s write; 55P03 of NOWAIT is the write\'s own answer', async () => {
    const holder = new pg.Client({ connectionString: admin.url });
    await holder.connect();
    try {
      await holder.query(`create table if not exists ${admin.t('lock_probe')} (id int primary key)`);
      await holder.query(`insert into ${admin.t('lock_probe')} values (1) on conflict do nothing`);
      await holder.query('begin');
      await holder.query(`select id from ${admin.t('lock_probe')} where id = 1 for update`);
      const timedOut = await RAW[driver](`do $$ begin perform set_config('lock_timeout', '50ms', true); perform 1 from ${admin.t('lock_probe')} where id = 1 for update; end $$`, []);
      const nowait = await RAW[driver](`do $$ begin perform 1 from ${admin.t('lock_probe')} where id = 1 for update nowait; end $$`, []);
      expect([sqlStateOf(timedOut), sqlStateOf(nowait)]).toEqual(['55P03', '55P03']);
      expect(isLockTimeout(timedOut)).toBe(true);
      expect(isDriverLevelError(timedOut)).toBe(true);
      expect(isLockTimeout(nowait)).toBe(false);
      expect(isDriverLevelError(nowait)).toBe(false);
      // The store's own statements never use NOWAIT: there 55P03 is always a transient StoreError.
      expect((translateError(nowait) as StoreError).transient).toBe(true);
    } finally {
      await holder.query('rollback');
      await holder.end();
    }
  });

  it('57P01 (backend terminated) → ConnectionLostError', async () => {
    const error = translateError(await RAW[driver]('select pg_terminate_backend(pg_backend_pid())', []));
    expect(error).toBeInstanceOf(ConnectionLostError);
  });
});

describe('classifying what a caller threw never throws', () => {
  // A handler's same-transaction write may throw anything; the store looks at it (driver-level?
  // cached plan? full NOTIFY queue?) before rethrowing it. Each of these used to make that look throw a
  // TypeError of its own, which then replaced the caller's error (found by the worker suite's
  // "resists being turned into text" case after the 0A000 retry was added).
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const getterThrows = Object.defineProperty(new Error('outer'), 'code', {
    get() {
      throw new Error('code getter threw');
    },
  });
  const everyTrapThrows = new Proxy({}, { get: () => { throw 1; }, getPrototypeOf: () => { throw 2; }, ownKeys: () => { throw 3; } }); // prettier-ignore
  it.each([
    ['a revoked proxy', revoked.proxy],
    ['an Error whose code getter throws', getterThrows],
    ['a proxy whose every trap throws', everyTrapThrows],
  ])('%s', (_label, thrown) => {
    expect(isDriverLevelError(thrown)).toBe(false);
    expect(isCachedPlanChanged(thrown)).toBe(false);
    expect(isNotifyQueueFull(thrown)).toBe(false);
    expect(sqlStateOf(thrown)).toBeUndefined();
    expect(translateError(thrown)).toBeInstanceOf(StoreError);
  });
});

describe('translateError with ended clients', () => {
  it('pg pool ended → StoreClosedError', async () => {
    const pool = new pg.Pool({ connectionString: admin.url });
    await pool.end();
    expect(translateError(await captureError(() => pool.query('select 1')))).toBeInstanceOf(StoreClosedError);
  });

  it('postgres.js sql ended → StoreClosedError', async () => {
    const sql = postgres(admin.url, { max: 1 });
    await sql.end();
    expect(translateError(await captureError(() => sql.unsafe('select 1')))).toBeInstanceOf(StoreClosedError);
  });

  it('a store whose pool the owner ended throws StoreClosedError', async () => {
    const pool = new pg.Pool({ connectionString: admin.url });
    const { createPgStore } = await import('../src/drivers/pg.js');
    const store = createPgStore({ pool, schema: admin.schema });
    await pool.end();
    expect(await captureError(() => store.countByState())).toBeInstanceOf(StoreClosedError);
  });
});

describe.each(DRIVERS)('lost connection during a call (%s)', (driver) => {
  const kit = makeKit(driver);
  const store = blockStore(kit, admin, { truncate: true, clock: new TestClock() });

  it('a backend terminated while extend waits on a row lock → ConnectionLostError; the store then works again', async () => {
    const { id } = await store().schedule({ kind: `lost-${driver}` });
    await store().claim({ owner: 'w', limit: 1, leaseMs: 60_000 });
    const locker = await admin.pool.connect();
    try {
      await locker.query('begin');
      await locker.query(`select id from ${admin.t('task')} where id = $1 for update`, [id]);
      const pending = captureError(() => store().extend({ id, attempt: 1, leaseMs: 1_000 }));
      // The extend's backend is the one blocked by our lock.
      const lockerPid = (await locker.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid;
      let pid: number | undefined;
      await waitFor(async () => {
        const rows = await admin.query<{ pid: number }>('select pid from pg_stat_activity where $1::int = any(pg_blocking_pids(pid))', [lockerPid]);
        pid = rows[0]?.pid;
        return pid !== undefined;
      }, 'the extend to block on the row lock');
      await admin.query('select pg_terminate_backend($1)', [pid]);
      const error = await pending;
      expect(error).toBeInstanceOf(ConnectionLostError);
      expect((error as ConnectionLostError).code).toBe('CONNECTION_LOST');
    } finally {
      await locker.query('rollback');
      locker.release();
    }
    // Nothing changed, and the pool hands out a fresh connection.
    expect(await store().getTask(id)).toMatchObject({ state: 'CLAIMED', attempt: 1 });
    expect(await store().extend({ id, attempt: 1, leaseMs: 1_000 })).toBe(true);
  });
});

describe.each(DRIVERS)('misuse gets a clear error (%s)', (driver) => {
  it('an unmigrated schema names migrate() in the StoreError', async () => {
    const kit = makeKit(driver);
    try {
      const store = kit.store({ schema: `${admin.schema}_never_migrated` });
      const error = await captureError(() => store.schedule({ kind: 'k' }));
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).sqlState).toBe(SqlState.UNDEFINED_TABLE);
      expect((error as StoreError).message).toMatch(/call store\.migrate\(\)/);
    } finally {
      await kit.close();
    }
  });

  it('a tx that is not the driver’s transaction handle is refused before anything is sent', async () => {
    const kit = makeKit(driver);
    try {
      const store = kit.store({ schema: admin.schema });
      const before = await store.countByState();
      const error = await captureError(() => store.schedule({ kind: 'k' }, { tx: {} }));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).code).toBe('INVALID_OPTION');
      expect((error as ValidationError).field).toBe('tx');
      expect(await store.countByState()).toEqual(before);
    } finally {
      await kit.close();
    }
  });
});

describe('options that would silently leave the caller’s transaction are refused', () => {
  it('pg: the pool as tx, an unknown option key, an unknown factory option', async () => {
    const pool = new pg.Pool({ connectionString: admin.url, max: 2 });
    pool.on('error', () => {});
    const store = createPgStore({ pool, schema: admin.schema });
    try {
      const before = await store.countByState();
      for (const [options, code] of [
        [{ tx: pool }, 'NOT_IN_TRANSACTION'],
        [{ txn: {} }, 'INVALID_OPTION'],
        [{ transaction: {} }, 'INVALID_OPTION'],
      ] as const) {
        const error = await captureError(() => store.schedule({ kind: 'k' }, options as never));
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).code).toBe(code);
      }
      expect(await store.countByState()).toEqual(before);
      expect(() => createPgStore({ pool, schem: 'other' } as never)).toThrow(/schem: is not an option/);
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it('postgres.js: the top-level sql as tx is refused; the sql of sql.begin() is taken', async () => {
    const sql = postgres(admin.url, { max: 2, onnotice: () => {} });
    const store = createPostgresJsStore({ sql, schema: admin.schema });
    try {
      const error = await captureError(() => store.schedule({ kind: 'k' }, { tx: sql as never }));
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ code: 'NOT_IN_TRANSACTION', field: 'tx' });
      let id = '';
      await sql.begin(async (tx) => {
        id = (await store.schedule({ kind: 'k' }, { tx })).id;
      });
      expect((await store.getTask(id))?.state).toBe('SCHEDULED');
      expect(() => createPostgresJsStore({ sql, maxPayloadByte: 10 } as never)).toThrow(/maxPayloadByte: is not an option/);
    } finally {
      await store.close();
      await sql.end({ timeout: 1 });
    }
  });
});
