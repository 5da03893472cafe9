/**
 * `@postpone/postgres/pg` — the store over node-postgres (`pg`, a peer dependency).
 *
 * ```ts
 * import { createPgStore } from '@postpone/postgres/pg';
 * const store = createPgStore({ connectionString: process.env.DATABASE_URL });
 * await store.migrate();
 * ```
 */
import { rejectUnknownFields, ValidationError } from '@postpone/core';
import pg from 'pg';
import type { Driver, ListenOptions, Param, QueryFn, Row, Unlisten } from './driver.js';
import { PostgresStore, type PostgresStoreOptions, STORE_OPTION_NAMES } from './store.js';

/** The native transaction handle of this adapter: the pool client running the transaction. */
export type PgTx = pg.PoolClient;

export interface PgStoreOptions extends PostgresStoreOptions {
  /** A pool you own: the store never ends it (end it yourself after `store.close()`). */
  readonly pool?: pg.Pool;
  /** Or a connection string: the store creates a pool (`max` 10) and ends it on `close()`. */
  readonly connectionString?: string;
  /** More settings for the pool the store creates from `connectionString` (ssl, max, timeouts…). */
  readonly poolConfig?: Omit<pg.PoolConfig, 'connectionString'>;
}

/** `max` of a pool the store creates, and node-postgres's own default. */
const DEFAULT_POOL_MAX = 10;

/** First and largest pause between reconnect attempts of a listener, in ms. */
const RECONNECT_FIRST_MS = 100;
const RECONNECT_MAX_MS = 5_000;

type QueryResults = pg.QueryResult<Row> | pg.QueryResult<Row>[];

function rowsOf(result: QueryResults): Row[] {
  // A parameterless multi-statement text (simple query protocol) yields one result per statement.
  return Array.isArray(result) ? (result.at(-1)?.rows ?? []) : result.rows;
}

async function run(client: pg.Pool | pg.ClientBase, text: string, params?: readonly Param[]): Promise<Row[]> {
  const result = (await client.query(text, params === undefined ? undefined : [...params])) as unknown as QueryResults;
  return rowsOf(result);
}

/**
 * LISTEN on a pool client held for the purpose. When that connection fails ('error' or 'end'), the
 * client is discarded and a new one listens again, pausing 100 ms doubling to 5 s between tries,
 * until stopped; `options.onReconnect` runs after each successful re-LISTEN.
 * @throws the driver error when the first LISTEN fails (nothing keeps running then)
 */
async function listenOnPool(pool: pg.Pool, channel: string, onNotify: (payload: string) => void, options: ListenOptions = {}): Promise<Unlisten> {
  let current: { client: pg.PoolClient; detach: () => void } | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let pauseMs = RECONNECT_FIRST_MS;

  const onNotification = (message: pg.Notification) => {
    if (message.channel === channel) onNotify(message.payload ?? '');
  };

  /** Checks out a client and LISTENs; a failure here is the caller's to handle. */
  const connect = async (): Promise<void> => {
    const client = await pool.connect();
    const onLost = (error?: Error) => {
      detach();
      client.release(error ?? true);
      if (current?.client === client) {
        current = undefined;
        if (!stopped) reconnectLater();
      }
    };
    const onEnd = () => onLost();
    const detach = () => {
      client.off('notification', onNotification);
      client.off('error', onLost);
      client.off('end', onEnd);
    };
    client.on('notification', onNotification);
    client.on('error', onLost);
    client.on('end', onEnd);
    try {
      await client.query(`listen ${pg.escapeIdentifier(channel)}`);
    } catch (error) {
      onLost(error as Error);
      throw error;
    }
    current = { client, detach };
    if (stopped) await stop(); // unlistened while this reconnect was in flight
  };

  const reconnectLater = () => {
    if (timer !== undefined || stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      connect().then(
        () => {
          pauseMs = RECONNECT_FIRST_MS;
          if (!stopped) options.onReconnect?.();
        },
        () => {
          pauseMs = Math.min(pauseMs * 2, RECONNECT_MAX_MS);
          reconnectLater();
        },
      );
    }, pauseMs);
  };

  const stop = async () => {
    const held = current;
    current = undefined;
    if (held === undefined) return;
    held.detach();
    try {
      await held.client.query(`unlisten ${pg.escapeIdentifier(channel)}`);
      held.client.release();
    } catch (error) {
      held.client.release(error as Error);
    }
  };

  await connect();
  return async () => {
    if (stopped) return;
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    await stop();
  };
}

/**
 * A {@link Driver} over a `pg.Pool`.
 * @param ownsPool end the pool on `close()` (only when this package created it)
 */
export function createPgDriver(pool: pg.Pool, ownsPool: boolean): Driver<PgTx> {
  const listeners = new Set<Unlisten>();
  const connectionErrorListeners = new Set<(error: unknown) => void>();
  // The pool emits 'error' when an idle client's connection dies (and drops that client).
  pool.on('error', (error) => connectionErrorListeners.forEach((listener) => listener(error)));
  let closed: Promise<void> | undefined;
  return {
    name: 'pg',
    onConnectionError(listener) {
      connectionErrorListeners.add(listener);
      return () => connectionErrorListeners.delete(listener);
    },
    connectionBudget: { max: pool.options.max ?? DEFAULT_POOL_MAX, listen: true, shared: !ownsPool },
    query: (text, params) => run(pool, text, params),
    // A client has query(); a Pool has it too but would run the insert outside the caller's transaction.
    isTx: (value): value is PgTx =>
      typeof (value as { query?: unknown } | null)?.query === 'function' && typeof (value as { totalCount?: unknown }).totalCount !== 'number',
    queryIn: (tx, text, params) => run(tx, text, params),
    async transaction<T>(fn: (query: QueryFn, tx: PgTx) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('begin');
        const result = await fn((text, params) => run(client, text, params), client);
        await client.query('commit');
        return result;
      } catch (error) {
        try {
          await client.query('rollback');
        } catch (rollbackError) {
          broken = rollbackError as Error; // the connection is unusable: discard it
        }
        throw error;
      } finally {
        client.release(broken);
      }
    },
    async listen(channel, onNotify, options) {
      const unlisten = await listenOnPool(pool, channel, onNotify, options);
      const remove: Unlisten = async () => {
        listeners.delete(remove);
        await unlisten();
      };
      listeners.add(remove);
      return remove;
    },
    close() {
      closed ??= (async () => {
        await Promise.all([...listeners].map((unlisten) => unlisten()));
        if (ownsPool) await pool.end();
      })();
      return closed;
    },
  };
}

/**
 * Creates a PostgreSQL store over node-postgres. Give `pool` (yours; never ended by the store) or
 * `connectionString` with optional `poolConfig` (the store creates and ends the pool). Call
 * `migrate()` before use.
 * @throws ValidationError INVALID_OPTION unless exactly one of `pool` and `connectionString` is given
 */
export function createPgStore(options: PgStoreOptions): PostgresStore<PgTx> {
  if (typeof options !== 'object' || options === null) throw new ValidationError('INVALID_OPTION', 'options', 'must be an object');
  rejectUnknownFields(options, [...STORE_OPTION_NAMES, 'pool', 'connectionString', 'poolConfig']);
  if ((options.pool === undefined) === (options.connectionString === undefined)) {
    throw new ValidationError('INVALID_OPTION', 'pool', 'give exactly one of pool and connectionString');
  }
  let pool = options.pool;
  const owns = pool === undefined;
  if (pool === undefined) {
    pool = new pg.Pool({ max: DEFAULT_POOL_MAX, ...options.poolConfig, connectionString: options.connectionString });
    // An idle client whose connection dies is removed by the pool, which also emits 'error';
    // without a listener that event would crash the process.
    pool.on('error', () => {});
  }
  return new PostgresStore(createPgDriver(pool, owns), options);
}
