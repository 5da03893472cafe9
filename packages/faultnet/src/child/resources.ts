/**
 * What a child process holds: its name, a small `pg` pool of its own, and the real PostgreSQL store
 * in the test's schema — over that pool (driver `pg`, the default) or over a postgres.js `sql` of its
 * own (driver `postgres`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Store } from '@postpone/core';
import { createPgStore, pgPoolConfig as productPoolConfig } from '@postpone/postgres/pg';
import { createPostgresJsStore, reconnectBackoff, replyGuardedSocket } from '@postpone/postgres/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { appEffectInsert } from '../app-effect.js';
import type { ChildConfig, ConnectionPlan } from './protocol.js';

export interface ChildResources {
  readonly name: string;
  readonly schema: string;
  /** The child's `pg` pool (the store's own with driver `pg`; the negative controls' otherwise). */
  readonly pool: pg.Pool;
  readonly store: Store<unknown>;
  /** Inserts one `history_effect` row inside the store's transaction handle `tx`. */
  insertHistoryEffect(tx: unknown, id: string, attempt: number, worker: string): Promise<void>;
  /** Inserts the task's `app_effect` row (primary key `task_id`) inside the store's transaction handle `tx`. */
  insertAppEffect(tx: unknown, id: string, attempt: number, worker: string): Promise<void>;
  /**
   * Both rows above in one statement (a data-modifying `with`, PostgreSQL 17 §7.8.4): what the two
   * inserts do, in one round trip. Fails as a whole when either insert fails (a second `app_effect`
   * row of a task: 23505).
   */
  insertBothEffects(tx: unknown, id: string, attempt: number, worker: string): Promise<void>;
  /** Takes one connection from the store's own pool; resolves with its release. */
  takeConnection(): Promise<() => void>;
  close(): Promise<void>;
}

/** What a child runs: started by the test (or at once), stopped gracefully. */
export interface Runner {
  start(): void;
  stop(): Promise<void>;
}

/** Startup probes of the database (100 ms doubling to 1 s between them: about 20 s in all). */
const STARTUP_PROBE_TRIES = 25;

function pgPoolConfig(url: string, max: number, c: ConnectionPlan): pg.PoolConfig {
  return {
    // With replyTimeoutMs: the product's settings for a pool (reply-guarded socket), then the plan's.
    ...(c.replyTimeoutMs === undefined ? {} : productPoolConfig(url, c.replyTimeoutMs)),
    connectionString: url,
    max,
    ...(c.queryTimeoutMs === undefined ? {} : { query_timeout: c.queryTimeoutMs }),
    ...(c.connectTimeoutMs === undefined ? {} : { connectionTimeoutMillis: c.connectTimeoutMs }),
    ...(c.keepAliveMs === undefined ? {} : { keepAlive: true, keepAliveInitialDelayMillis: c.keepAliveMs }),
  };
}

// biome-ignore lint/complexity/noBannedTypes: postgres.js's own default type parameter
function postgresJsOptions(max: number, c: ConnectionPlan): postgres.Options<{}> {
  return {
    max,
    onnotice: () => {},
    // What the README asks of an sql passed to the store: without it postgres.js waits up to 20 s
    // between reconnects once an outage has failed a few dozen attempts (see reconnectBackoff).
    backoff: reconnectBackoff,
    // Also what the README asks: no array-type fetch per new connection, whose dropped promise
    // crashes the process when the connection is terminated during it (porsager/postgres#1192).
    fetch_types: false,
    ...(c.connectTimeoutMs === undefined ? {} : { connect_timeout: Math.max(1, Math.ceil(c.connectTimeoutMs / 1_000)) }),
    ...(c.keepAliveMs === undefined ? {} : { keep_alive: Math.max(1, Math.ceil(c.keepAliveMs / 1_000)) }),
    ...(c.prepare === undefined ? {} : { prepare: c.prepare }),
    ...(c.replyTimeoutMs === undefined ? {} : { socket: replyGuardedSocket(c.replyTimeoutMs) }),
  };
}

/** The store options the plan sets: `pooler`, `listenConnectionString`, `replyTimeoutMs`. */
function storeOptions(c: ConnectionPlan) {
  return {
    ...(c.pooler === undefined ? {} : { pooler: c.pooler }),
    ...(c.listenUrl === undefined ? {} : { listenConnectionString: c.listenUrl }),
    ...(c.replyTimeoutMs === undefined ? {} : { replyTimeoutMs: c.replyTimeoutMs }),
  };
}

/**
 * Runs `probe` until it succeeds, at most STARTUP_PROBE_TRIES times (pauses 100 ms doubling to 1 s),
 * for `waitForDatabase`: a refused connection at startup is not a crash of a running worker.
 * @throws the last error of `probe`
 */
async function untilReachable(probe: () => Promise<unknown>): Promise<void> {
  for (let tryNo = 1, pauseMs = 100; ; tryNo++, pauseMs = Math.min(pauseMs * 2, 1_000)) {
    try {
      await probe();
      return;
    } catch (error) {
      if (tryNo >= STARTUP_PROBE_TRIES) throw error;
      await sleep(pauseMs);
    }
  }
}

/**
 * Opens the pool and the store, and makes one round trip, so a child reports `ready` only once it can
 * reach the database (and its first claim pays no connection setup).
 * @throws the driver's error when the database cannot be reached
 */
export async function openResources(config: ChildConfig): Promise<ChildResources> {
  const c = config.connection ?? {};
  // A worker refuses a shared pool below concurrency + 3 (+1 for LISTEN): see POOL_RESERVE in @postpone/worker.
  const max = config.poolSize ?? (config.run.mode === 'worker' ? config.run.worker.concurrency + 4 : 4);
  const pool = new pg.Pool(pgPoolConfig(config.databaseUrl, max, c));
  // An idle client whose connection dies is dropped by the pool, which then emits 'error'.
  pool.on('error', () => {});
  const historyEffect = `insert into ${pg.escapeIdentifier(config.schema)}.history_effect (task_id, attempt, worker) values ($1::bigint, $2, $3)`;
  const appEffect = appEffectInsert(config.schema);
  const bothEffects = `with history as (${historyEffect}) ${appEffect}`;
  const closers: (() => Promise<void>)[] = [];
  const reach = c.waitForDatabase ? untilReachable : async (probe: () => Promise<unknown>) => void (await probe());
  let store: Store<unknown>;
  // One parameterised statement inside the store's transaction handle, by driver.
  let execute: (tx: unknown, text: string, params: readonly unknown[]) => Promise<void>;
  let takeConnection: ChildResources['takeConnection'];
  if ((c.driver ?? 'pg') === 'pg') {
    const pgStore = createPgStore({ pool, schema: config.schema, ...storeOptions(c) });
    store = pgStore as Store<unknown>;
    closers.push(() => pgStore.close());
    execute = async (tx, text, params) => {
      await (tx as pg.PoolClient).query(text, params as unknown[]);
    };
    takeConnection = () =>
      new Promise((resolve, reject) => {
        // The error listener goes on in the callback: after an `await pool.connect()` an error parsed
        // from the same socket chunk would find no listener and crash the child.
        pool.connect((error, client) => {
          if (error || client === undefined) return reject(error ?? new Error('no client'));
          let broken: Error | undefined;
          const onError = (e: Error) => {
            broken ??= e;
          };
          client.on('error', onError);
          resolve(() => {
            if (broken === undefined) client.off('error', onError);
            client.release(broken);
          });
        });
      });
  } else {
    const sql = postgres(c.postgresJsUrl ?? config.databaseUrl, postgresJsOptions(max, c));
    const jsStore = createPostgresJsStore({ sql, schema: config.schema, ...storeOptions(c) });
    store = jsStore as Store<unknown>;
    closers.push(async () => {
      await jsStore.close();
      await sql.end({ timeout: 2 });
    });
    execute = async (tx, text, params) => {
      await (tx as postgres.TransactionSql).unsafe(text, params as postgres.ParameterOrJSON<never>[]);
    };
    takeConnection = async () => {
      const reserved = await sql.reserve();
      return () => reserved.release();
    };
    await reach(() => sql.unsafe('select 1'));
  }
  await reach(() => pool.query('select 1'));
  return {
    name: config.name,
    schema: config.schema,
    pool,
    store,
    insertHistoryEffect: (tx, id, attempt, worker) => execute(tx, historyEffect, [id, attempt, worker]),
    insertAppEffect: (tx, id, attempt, worker) => execute(tx, appEffect, [id, attempt, worker]),
    insertBothEffects: (tx, id, attempt, worker) => execute(tx, bothEffects, [id, attempt, worker]),
    takeConnection,
    async close() {
      for (const close of closers) await close().catch(() => {});
      await pool.end();
    },
  };
}
