/**
 * The cases every ORM adapter passes, on a real PostgreSQL (embedded, `@postpone/embedded/vitest-setup`),
 * against a store on each driver: a rollback leaves neither the task nor the caller's row; a commit
 * leaves exactly one task with the row; dedup keys and cancel inside the transaction; the top-level
 * client, and a transaction handle kept after its transaction ended, refused with NOT_IN_TRANSACTION.
 */
import { DuplicateKeyError, StoreError, ValidationError } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import type { PostgresStore } from '../../src/store/store.js';
import type { SqlExecutor } from '../../src/store/driver.js';
import { createPgStore } from '../../src/drivers/pg.js';
import { createPostgresJsStore } from '../../src/drivers/postgres-js.js';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

/** What a test file gives for its ORM: transactions of that ORM, and the caller's row written through it. */
export interface OrmKit {
  /**
   * Runs `fn` in a transaction of the ORM, then commits, or rolls back when `end` is 'rollback'
   * (by throwing through the ORM's own transaction call). `fn` gets the adapter's executor and an
   * `insert(id)` that writes a `reservation` row through the ORM in the same transaction.
   */
  transaction<T>(fn: (tx: SqlExecutor, insert: (id: number) => Promise<void>) => Promise<T>, end: 'commit' | 'rollback'): Promise<T | undefined>;
  /** The adapter called on the ORM's top-level client (must throw ValidationError NOT_IN_TRANSACTION). */
  outsideTransaction(): unknown;
  close(): Promise<void>;
}

/** A schema for one test file with the store's tables and `reservation (id int primary key, status text)`. */
export function testSchema(prefix: string): { readonly url: string; readonly schema: string } {
  const url = testDatabaseUrl();
  const schema = uniqueSchemaName(prefix);
  beforeAll(async () => {
    const store = createPgStore({ connectionString: url, schema });
    await store.migrate();
    await store.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`create table "${schema}".reservation (id int primary key, status text not null)`);
    await client.end();
  });
  afterAll(() => dropSchema(url, schema));
  return { url, schema };
}

const ROLLBACK = new Error('roll back');

/** Runs `fn` and swallows the error thrown to roll back. */
export async function rollingBack(fn: () => Promise<unknown>): Promise<undefined> {
  try {
    await fn();
  } catch (error) {
    if (error !== ROLLBACK) throw error;
  }
  return undefined;
}

/** Throw this from a transaction body to roll it back. */
export function rollback(): never {
  throw ROLLBACK;
}

export function describeOrm(name: string, db: { readonly url: string; readonly schema: string }, makeKit: () => OrmKit): void {
  describe.each(['pg', 'postgres'] as const)(`${name} transaction, store on %s`, (driver) => {
    let kit: OrmKit;
    let store: PostgresStore<unknown>;
    let check: pg.Pool;
    let sql: postgres.Sql | undefined;
    const t = (table: string) => `"${db.schema}".${table}`;
    const count = async (table: string, where = 'true') => Number((await check.query(`select count(*)::int as n from ${t(table)} where ${where}`)).rows[0].n);

    beforeAll(() => {
      kit = makeKit();
      check = new pg.Pool({ connectionString: db.url, max: 2 });
      if (driver === 'pg') {
        store = createPgStore({ connectionString: db.url, schema: db.schema }) as PostgresStore<unknown>;
      } else {
        sql = postgres(db.url, { max: 2, onnotice: () => {} });
        store = createPostgresJsStore({ sql, schema: db.schema }) as PostgresStore<unknown>;
      }
    });
    beforeEach(() => check.query(`truncate ${t('effect')}, ${t('task')}, ${t('task_history')}, ${t('reservation')} restart identity cascade`));
    afterAll(async () => {
      await store.close();
      await sql?.end();
      await check.end();
      await kit.close();
    });

    it('rollback leaves no task and no row; commit leaves exactly one task with the row', async () => {
      let rolledBack = '';
      await kit.transaction(async (tx, insert) => {
        await insert(41);
        rolledBack = (await store.schedule({ kind: 'close-reservation', payload: { reservationId: 41 }, delayMs: 1_800_000 }, { tx })).id;
        expect(await count('task')).toBe(0); // not visible outside before commit
      }, 'rollback');
      expect(rolledBack).toMatch(/^[0-9]+$/);
      expect(await store.getTask(rolledBack)).toBeNull();
      expect(await count('task')).toBe(0);
      expect(await count('reservation')).toBe(0);

      const before = await store.now();
      const scheduled = await kit.transaction(async (tx, insert) => {
        await insert(42);
        return await store.schedule({ kind: 'close-reservation', payload: { reservationId: 42, note: 'ünïcode ✓' }, delayMs: 1_800_000, maxAttempts: 3 }, { tx });
      }, 'commit');
      expect(scheduled).toMatchObject({ created: true, replaced: false });
      expect(await count('task')).toBe(1);
      expect(await count('reservation', 'id = 42')).toBe(1);
      const task = await store.getTask(scheduled?.id as string);
      expect(task).toMatchObject({ kind: 'close-reservation', state: 'SCHEDULED', payload: { reservationId: 42, note: 'ünïcode ✓' }, maxAttempts: 3, attempt: 0 });
      expect(task?.dueAt.getTime()).toBe(scheduled?.dueAt.getTime());
      // due 30 minutes after the transaction's now(), which is at or after `before`
      expect((task?.dueAt.getTime() as number) - before.getTime()).toBeGreaterThanOrEqual(1_800_000 - 1);
      expect((task?.dueAt.getTime() as number) - before.getTime()).toBeLessThan(1_800_000 + 60_000);
    });

    it('scheduleMany in the transaction: all tasks commit with the row, in input order', async () => {
      const ids = await kit.transaction(async (tx, insert) => {
        await insert(7);
        return (await store.scheduleMany([{ kind: 'a', payload: [1, 'x', null] }, { kind: 'b', runAt: new Date('2030-01-02T03:04:05.678Z') }], { tx })).map((s) => s.id);
      }, 'commit');
      expect(await count('task')).toBe(2);
      expect((await store.getTask(ids?.[0] as string))?.payload).toEqual([1, 'x', null]);
      expect((await store.getTask(ids?.[1] as string))?.dueAt.toISOString()).toBe('2030-01-02T03:04:05.678Z');
    });

    it('dedup key inside the transaction: keep returns the holder, fail throws and leaves the transaction usable, replace rewrites', async () => {
      const result = await kit.transaction(async (tx, insert) => {
        await insert(42);
        const first = await store.schedule({ kind: 'close-reservation', key: 'reservation-42', payload: { v: 1 }, delayMs: 60_000 }, { tx });
        const kept = await store.schedule({ kind: 'close-reservation', key: 'reservation-42', payload: { v: 2 } }, { tx });
        const failed = await store.schedule({ kind: 'close-reservation', key: 'reservation-42' }, { tx, onConflict: 'fail' }).catch((e: unknown) => e);
        // the savepoint undid only the schedule: the transaction goes on
        const replaced = await store.schedule({ kind: 'close-reservation', key: 'reservation-42', payload: { v: 3 }, delayMs: 120_000 }, { tx, onConflict: 'replace' });
        return { first, kept, failed, replaced };
      }, 'commit');
      expect(result?.first.created).toBe(true);
      expect(result?.kept).toMatchObject({ id: result?.first.id, created: false, replaced: false });
      expect(result?.failed).toBeInstanceOf(DuplicateKeyError);
      expect((result?.failed as DuplicateKeyError | undefined)?.taskId).toBe(result?.first.id);
      expect(result?.replaced).toMatchObject({ id: result?.first.id, created: false, replaced: true });
      expect(await count('task')).toBe(1);
      expect(await count('reservation')).toBe(1);
      expect((await store.getTask(result?.first.id as string))?.payload).toEqual({ v: 3 });

      // a committed holder is kept by a schedule in a later transaction; rolling that back changes nothing
      await kit.transaction(async (tx) => {
        expect(await store.schedule({ kind: 'close-reservation', key: 'reservation-42', payload: { v: 4 } }, { tx, onConflict: 'replace' })).toMatchObject({
          id: result?.first.id,
          replaced: true,
        });
      }, 'rollback');
      expect((await store.getTask(result?.first.id as string))?.payload).toEqual({ v: 3 });
      expect(await count('task')).toBe(1);
    });

    it('cancel inside the transaction: rolled back → still SCHEDULED; committed → CANCELLED with the row', async () => {
      const { id } = await store.schedule({ kind: 'close-reservation', delayMs: 60_000 });
      await kit.transaction(async (tx, insert) => {
        await insert(1);
        expect(await store.cancel(id, { tx })).toBe('CANCELLED');
      }, 'rollback');
      expect((await store.getTask(id))?.state).toBe('SCHEDULED');
      const outcomes = await kit.transaction(async (tx, insert) => {
        await insert(2);
        // ids travel as text cast to bigint: the largest one arrives exact (a JS number would be out of range)
        return [await store.cancel(id, { tx }), await store.cancel(id, { tx }), await store.cancel('9223372036854775807', { tx })];
      }, 'commit');
      expect(outcomes).toEqual(['CANCELLED', 'ALREADY_CANCELLED', 'NOT_FOUND']);
      expect((await store.getTask(id))?.state).toBe('CANCELLED');
      expect(await count('reservation', 'id = 2')).toBe(1);
    });

    it('a database error in the transaction surfaces as StoreError with its SQLSTATE', async () => {
      const error = await kit
        .transaction(async (_tx, insert) => {
          await insert(5);
          await insert(5); // 23505 through the ORM: the transaction is aborted
          return 'unreachable';
        }, 'commit')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      const aborted = await kit
        .transaction(async (tx, insert) => {
          await insert(6);
          await tx.query('select 1/0');
          return 'unreachable';
        }, 'commit')
        .catch((e: unknown) => e);
      expect(aborted).toBeInstanceOf(Error);
      // the same failure through the store is translated: 25P02 after the ORM's own error
      const viaStore = await kit
        .transaction(async (tx, insert) => {
          await insert(8);
          await tx.query('select 1/0').catch(() => {});
          return await store.schedule({ kind: 'x' }, { tx });
        }, 'commit')
        .catch((e: unknown) => e);
      expect(viaStore).toBeInstanceOf(StoreError);
      expect((viaStore as StoreError).sqlState).toBe('25P02');
      expect(await count('task')).toBe(0);
      expect(await count('reservation')).toBe(0);
    });

    it('the top-level client is refused: ValidationError NOT_IN_TRANSACTION tx, nothing written', async () => {
      let error: unknown;
      try {
        await store.schedule({ kind: 'x' }, { tx: kit.outsideTransaction() as SqlExecutor });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ code: 'NOT_IN_TRANSACTION', field: 'tx' });
      expect(await count('task')).toBe(0);
    });

    it('a transaction handle kept after its transaction committed or rolled back is refused: NOT_IN_TRANSACTION, nothing written', async () => {
      const { id } = await store.schedule({ kind: 'held', delayMs: 60_000 });
      for (const end of ['commit', 'rollback'] as const) {
        let kept: SqlExecutor | undefined;
        await kit.transaction(async (tx) => {
          kept = tx;
        }, end);
        const tx = kept as SqlExecutor;
        const calls: [string, () => Promise<unknown>][] = [
          ['schedule', () => store.schedule({ kind: 'k' }, { tx })],
          ['schedule fail', () => store.schedule({ kind: 'k', key: 'a' }, { tx, onConflict: 'fail' })],
          ['scheduleMany', () => store.scheduleMany([{ kind: 'k' }, { kind: 'k' }], { tx })],
          ['cancel', () => store.cancel(id, { tx })],
        ];
        for (const [what, call] of calls) {
          const error = await call().catch((e: unknown) => e);
          expect(error, `${what} after ${end}`).toBeInstanceOf(ValidationError);
          expect(error, `${what} after ${end}`).toMatchObject({ code: 'NOT_IN_TRANSACTION', field: 'tx' });
        }
      }
      expect(await count('task')).toBe(1);
      expect((await store.getTask(id))?.state).toBe('SCHEDULED');
    });
  });
}
