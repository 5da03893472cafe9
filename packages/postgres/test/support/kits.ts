/**
 * Test kits: one per driver, each with its own connections to the test database, building stores
 * on them and offering raw access that bypasses the store (for setup and for checking rows).
 */
import type { Clock } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll } from 'vitest';
import type { Param, PostgresStore, PostgresStoreOptions, Row } from '../../src/index.js';
import { createPgStore, type PgTx } from '../../src/drivers/pg.js';
import { type PlanNode, planNodes } from './plans.js';
import { createPostgresJsStore, type PostgresJsTx } from '../../src/drivers/postgres-js.js';

export type DriverName = 'pg' | 'postgres';

export interface Kit<Tx> {
  readonly driver: DriverName;
  readonly url: string;
  /** A store on the kit's pool / sql (closing the store leaves them open). */
  store(options?: PostgresStoreOptions & { clock?: Clock }): PostgresStore<Tx>;
  /** Runs `fn` in a native transaction of the kit's own, then commits or rolls back. */
  inTransaction(fn: (tx: Tx) => Promise<void>, end: 'commit' | 'rollback'): Promise<void>;
  /** Runs one raw statement in autocommit on the kit's own pool / sql (bypassing the store). */
  query(text: string, params?: readonly Param[]): Promise<Row[]>;
  /** Runs one statement on the caller's native transaction. */
  queryIn(tx: Tx, text: string, params?: readonly Param[]): Promise<Row[]>;
  close(): Promise<void>;
}

const ROLLBACK = Symbol('rollback');

function pgKit(url: string): Kit<PgTx> {
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  pool.on('error', () => {});
  return {
    driver: 'pg',
    url,
    store: (options = {}) => createPgStore({ ...options, pool }),
    async inTransaction(fn, end) {
      const client = await pool.connect();
      try {
        await client.query('begin');
        await fn(client);
        await client.query(end);
      } catch (error) {
        await client.query('rollback');
        throw error;
      } finally {
        client.release();
      }
    },
    async query(text, params) {
      return (await pool.query(text, params ? [...params] : undefined)).rows;
    },
    async queryIn(tx, text, params) {
      return (await tx.query(text, params ? [...params] : undefined)).rows;
    },
    close: () => pool.end(),
  };
}

function postgresJsKit(url: string): Kit<PostgresJsTx> {
  const sql = postgres(url, { max: 8, onnotice: () => {} });
  return {
    driver: 'postgres',
    url,
    store: (options = {}) => createPostgresJsStore({ ...options, sql }),
    async inTransaction(fn, end) {
      try {
        await sql.begin(async (tx) => {
          await fn(tx);
          if (end === 'rollback') throw ROLLBACK;
        });
      } catch (error) {
        if (error !== ROLLBACK) throw error;
      }
    },
    async query(text, params) {
      return (await sql.unsafe(text, params ? [...params] : [])) as unknown as Row[];
    },
    async queryIn(tx, text, params) {
      return (await tx.unsafe(text, params ? [...params] : [])) as unknown as Row[];
    },
    // A timeout: end() after a connection died mid-query never settles otherwise (porsager/postgres#1097).
    close: () => sql.end({ timeout: 1 }),
  };
}

export function makeKit(driver: DriverName, url = testDatabaseUrl()): Kit<any> {
  return driver === 'pg' ? pgKit(url) : postgresJsKit(url);
}

export const DRIVERS: readonly DriverName[] = ['pg', 'postgres'];

type ExplainRow = { 'QUERY PLAN': [{ Plan: PlanNode }] };

/** What a plan test reads of one EXPLAIN: the root node, every node ({@link planNodes}), and the shared buffers touched (hit + read; 0 without `buffers`). */
export type ExplainedPlan = { root: PlanNode; nodes: PlanNode[]; buffers: number };

function readPlan(row: ExplainRow): ExplainedPlan {
  const root = row['QUERY PLAN'][0].Plan;
  return { root, nodes: planNodes(root), buffers: (root['Shared Hit Blocks'] ?? 0) + (root['Shared Read Blocks'] ?? 0) };
}

/**
 * Raw access for assertions: a pg pool of its own (so checks never go through the code under test's
 * adapter), plus the schema of the test file.
 */
export class Admin {
  readonly pool: pg.Pool;
  constructor(
    readonly url: string,
    readonly schema: string,
  ) {
    this.pool = new pg.Pool({ connectionString: url, max: 4 });
    this.pool.on('error', () => {});
  }

  static create(prefix: string, url = testDatabaseUrl()): Admin {
    return new Admin(url, uniqueSchemaName(prefix));
  }

  async query<T = Row>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(text, params)).rows as T[];
  }

  /** `"schema".name` */
  t(name: string): string {
    return `${pg.escapeIdentifier(this.schema)}.${name}`;
  }

  /**
   * `EXPLAIN (options, FORMAT JSON)` of `text` (PostgreSQL 17 §14.1): the plan's root, every node
   * ({@link planNodes}) and the shared buffers it touched (hit + read; 0 without `buffers`).
   */
  async explainPlan(text: string, params: readonly unknown[], options = 'analyze, buffers'): Promise<ExplainedPlan> {
    const [row] = await this.query<ExplainRow>(`explain (${options}, format json) ${text}`, [...params]);
    return readPlan(row!);
  }

  /**
   * `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` of `text` on one connection, in a transaction rolled
   * back at the end: ANALYZE runs the statement, so a write leaves nothing behind, and `setup` (run
   * first, in the same transaction) may change the schema for this plan only (e.g. drop an index).
   */
  async explainRolledBack(text: string, params: readonly unknown[], setup?: (client: pg.PoolClient) => Promise<void>): Promise<ExplainedPlan> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      await setup?.(client);
      const { rows } = await client.query<ExplainRow>(`explain (analyze, buffers, format json) ${text}`, [...params]);
      return readPlan(rows[0]!);
    } finally {
      await client.query('rollback');
      client.release();
    }
  }

  /** `VACUUM ANALYZE` of one table of the schema, then its size in pages (`pg_class.relpages`). */
  async vacuumPages(table = 'task'): Promise<number> {
    await this.query(`vacuum analyze ${this.t(table)}`);
    const [row] = await this.query<{ pages: number }>('select relpages::int as pages from pg_class where oid = $1::regclass', [this.t(table)]);
    return Number(row?.pages ?? 0);
  }

  async count(table = 'task'): Promise<number> {
    const [row] = await this.query<{ n: number }>(`select count(*)::int as n from ${this.t(table)}`);
    return row?.n ?? 0;
  }

  /**
   * Empties every table of the store (ids restart at 1). A table left out keeps rows naming ids the
   * next run reuses: a dependency edge of an earlier sequence cancelled a new task in the differential test.
   */
  async truncate(extra: readonly string[] = []): Promise<void> {
    await this.query(`truncate ${['effect', 'task', 'task_history', 'cron_schedule', 'pause', 'dedup_throttle', 'rate_limit', 'key_limit', 'key_rate_limit', 'key_rate_log', 'task_dependency', 'task_batch', ...extra].map((n) => this.t(n)).join(', ')} restart identity cascade`);
  }

  async drop(): Promise<void> {
    await this.pool.end();
    await dropSchema(this.url, this.schema);
  }
}

/** Polls `check` every 10 ms until it returns true or `timeoutMs` passes. @throws Error on timeout */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/**
 * A fresh schema and a `pg` kit for one test file: migrated before its tests; the kit closed and the
 * schema dropped after them. Call it at the top level of the file.
 */
export function migratedKit(prefix: string): { admin: Admin; kit: Kit<any> } {
  const admin = Admin.create(prefix);
  const kit = makeKit('pg');
  beforeAll(async () => {
    await kit.store({ schema: admin.schema }).migrate();
  });
  afterAll(async () => {
    await kit.close();
    await admin.drop();
  });
  return { admin, kit };
}

/**
 * A fresh schema for one test file: migrated (through pg) before its tests, dropped after them.
 * Call at the top level of the file.
 */
export function migratedSchema(prefix: string): Admin {
  const admin = Admin.create(prefix);
  beforeAll(async () => {
    const kit = makeKit('pg');
    await kit.store({ schema: admin.schema }).migrate();
    await kit.close();
  });
  afterAll(() => admin.drop());
  return admin;
}

/**
 * The store of one `describe` block on `admin`'s schema: made before its tests, then closed with
 * `kit` after them (and the tables emptied with `truncate`). Tests read it as `store()`.
 */
export function blockStore(
  kit: Kit<any>,
  admin: Admin,
  options: Omit<PostgresStoreOptions, 'schema'> & { readonly truncate?: boolean } = {},
): () => PostgresStore<any> {
  const { truncate, ...storeOptions } = options;
  let store: PostgresStore<any> | undefined;
  beforeAll(() => {
    store = kit.store({ schema: admin.schema, ...storeOptions });
  });
  afterAll(async () => {
    await store?.close();
    await kit.close();
    if (truncate) await admin.truncate();
  });
  return () => {
    if (store === undefined) throw new Error('blockStore: read inside a test, after beforeAll');
    return store;
  };
}
