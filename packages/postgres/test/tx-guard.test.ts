/**
 * `{ tx }` that is not inside an open transaction is refused with `ValidationError`
 * `NOT_IN_TRANSACTION` (`tx`) before anything is written, on both drivers: a `pg` client with no
 * BEGIN (known from its ReadyForQuery status, or checked with one statement when the client cannot
 * say), a pooled client kept after its release, the pool itself, a top-level or reserved postgres.js
 * `sql`, and an `SqlExecutor` that autocommits. Inside a transaction the same handles work and
 * roll back with it. The ORM adapters' cases are in ./orm/support.ts.
 */
import { captureError } from '@postpone/conformance';
import { ValidationError } from '@postpone/core';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';
import type { PostgresStore, SqlExecutor } from '../src/index.js';
import { Admin, makeKit } from './support/kits.js';

const admin = Admin.create('txguard');
beforeAll(async () => {
  const kit = makeKit('pg');
  await kit.store({ schema: admin.schema }).migrate();
  await kit.close();
});
afterEach(() => admin.truncate());
afterAll(() => admin.drop());

/** Every call that takes `{ tx }`, through `tx`; each must throw NOT_IN_TRANSACTION and write nothing. */
async function expectRefusedEverywhere(store: PostgresStore<any>, tx: unknown): Promise<void> {
  const { id } = await store.schedule({ kind: 'held', delayMs: 60_000 });
  const calls: [string, () => Promise<unknown>][] = [
    ['schedule', () => store.schedule({ kind: 'k', delayMs: 60_000 }, { tx: tx as never })],
    ['schedule keyed, replace', () => store.schedule({ kind: 'k', key: 'a' }, { tx: tx as never, onConflict: 'replace' })],
    ['schedule keyed, fail', () => store.schedule({ kind: 'k', key: 'b' }, { tx: tx as never, onConflict: 'fail' })],
    ['scheduleMany', () => store.scheduleMany([{ kind: 'k' }, { kind: 'k', delayMs: 10 }], { tx: tx as never })],
    ['cancel', () => store.cancel(id, { tx: tx as never })],
  ];
  for (const [what, call] of calls) {
    const error = await captureError(call);
    expect(error, what).toBeInstanceOf(ValidationError);
    expect(error, what).toMatchObject({ code: 'NOT_IN_TRANSACTION', field: 'tx' });
  }
  expect(await admin.count('task')).toBe(1); // only the task scheduled above
  expect((await store.getTask(id))?.state).toBe('SCHEDULED'); // the cancel did not commit
  expect(await admin.count('task_history')).toBe(0);
}

/** A `pg` client that hides `getTransactionStatus` (as pg before it had one): the store must ask the database. */
function withoutStatus(client: pg.Client): SqlExecutor {
  return { query: (text, params) => client.query(text, params as unknown[]) as never };
}

describe('pg store', () => {
  let pool: pg.Pool;
  let store: PostgresStore<any>;
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: admin.url, max: 4 });
    pool.on('error', () => {});
    store = createPgStore({ pool, schema: admin.schema }) as PostgresStore<any>;
  });
  afterAll(async () => {
    await store.close();
    await pool.end();
  });

  it('a client with no BEGIN is refused: NOT_IN_TRANSACTION, nothing written (with and without getTransactionStatus)', async () => {
    const client = new pg.Client({ connectionString: admin.url });
    await client.connect();
    try {
      expect(client.getTransactionStatus()).toBe('I');
      await expectRefusedEverywhere(store, client);
      await admin.truncate();
      await expectRefusedEverywhere(store, withoutStatus(client));
      expect(client.getTransactionStatus()).toBe('I'); // the failed check left no transaction behind
    } finally {
      await client.end();
    }
  });

  it('the pool, and a pooled client kept after its release, are refused', async () => {
    await expectRefusedEverywhere(store, pool);
    await admin.truncate();
    const client = await pool.connect();
    client.release();
    await expectRefusedEverywhere(store, client);
  });

  it('an SqlExecutor that autocommits (runs on a pool) is refused, also when it wraps the driver error', async () => {
    await expectRefusedEverywhere(store, { query: (text: string, params?: unknown[]) => pool.query(text, params) });
    await admin.truncate();
    const wrapping: SqlExecutor = {
      async query(text, params) {
        try {
          return await pool.query(text, params as unknown[]);
        } catch (error) {
          throw new Error('my ORM failed', { cause: error });
        }
      },
    };
    await expectRefusedEverywhere(store, wrapping);
  });

  it('inside BEGIN the same client works and rolls back with it; the check costs no statement when the client knows its status', async () => {
    const client = new pg.Client({ connectionString: admin.url });
    await client.connect();
    const sent: string[] = [];
    const query = client.query.bind(client);
    try {
      const { id } = await store.schedule({ kind: 'held', delayMs: 60_000 });
      await client.query('begin');
      client.query = ((text: string, params?: unknown[]) => {
        sent.push(text);
        return query(text, params);
      }) as never;
      await store.schedule({ kind: 'k', delayMs: 60_000 }, { tx: client });
      await store.scheduleMany([{ kind: 'k' }, { kind: 'k' }], { tx: client });
      expect(await store.cancel(id, { tx: client })).toBe('CANCELLED');
      expect(sent.filter((text) => /^lock table/.test(text))).toEqual([]);
      expect(sent).toHaveLength(3);
      client.query = query;
      await client.query('rollback');
      expect(await admin.count('task')).toBe(1);
      expect((await store.getTask(id))?.state).toBe('SCHEDULED');

      // without getTransactionStatus the store asks first (one LOCK … ACCESS SHARE) and goes on
      const executor = withoutStatus(client);
      await client.query('begin');
      const inside = await store.schedule({ kind: 'k', key: 'c' }, { tx: executor, onConflict: 'fail' });
      await store.schedule({ kind: 'k' }, { tx: executor });
      await client.query('commit');
      expect((await store.getTask(inside.id))?.state).toBe('SCHEDULED');
      expect(await admin.count('task')).toBe(3);
    } finally {
      client.query = query;
      await client.end();
    }
  });
});

describe('postgres.js store', () => {
  let sql: postgres.Sql;
  let store: PostgresStore<any>;
  beforeAll(() => {
    sql = postgres(admin.url, { max: 3, onnotice: () => {} });
    store = createPostgresJsStore({ sql, schema: admin.schema }) as PostgresStore<any>;
  });
  afterAll(async () => {
    await store.close();
    await sql.end({ timeout: 1 });
  });

  it('the top-level sql and a reserved sql are refused: NOT_IN_TRANSACTION, nothing written', async () => {
    await expectRefusedEverywhere(store, sql);
    await admin.truncate();
    const reserved = await sql.reserve();
    try {
      await expectRefusedEverywhere(store, reserved);
    } finally {
      reserved.release();
    }
  });

  it('a pg client with no BEGIN, as an SqlExecutor, is refused', async () => {
    const client = new pg.Client({ connectionString: admin.url });
    await client.connect();
    try {
      await expectRefusedEverywhere(store, client);
      await admin.truncate();
      await expectRefusedEverywhere(store, withoutStatus(client));
    } finally {
      await client.end();
    }
  });

  it('the tx of sql.begin() works and rolls back with it', async () => {
    const { id } = await store.schedule({ kind: 'held', delayMs: 60_000 });
    const rollback = new Error('roll back');
    const error = await captureError(() =>
      sql.begin(async (tx) => {
        await store.schedule({ kind: 'k' }, { tx });
        await store.schedule({ kind: 'k', key: 'd' }, { tx, onConflict: 'fail' });
        expect(await store.cancel(id, { tx })).toBe('CANCELLED');
        throw rollback;
      }),
    );
    expect(error).toBe(rollback);
    expect(await admin.count('task')).toBe(1);
    expect((await store.getTask(id))?.state).toBe('SCHEDULED');
  });
});
