/**
 * `@postpone/postgres/pg` — the store over node-postgres (`pg`, a peer dependency).
 *
 * ```ts
 * import { createPgStore } from '@postpone/postgres/pg';
 * const store = createPgStore({ connectionString: process.env.DATABASE_URL });
 * await store.migrate();
 * ```
 */
import { Socket } from 'node:net';
import { PoolTimeoutError } from '@postpone/core';
import pg from 'pg';
import { connectionEvents, PostgresStore, type PostgresStoreOptions, validateDriverOptions } from '../store/store.js';
import { type Driver, type DriverEvents, type Param, type QueryFn, type Row, listenerSet } from '../store/driver.js';
import { isCachedPlanChanged, isConnectionLoss, isReadOnlyNode } from '../store/errors.js';
import { type OpenListenConnection, READ_ONLY_PROBE, type SharedListener, sharedListenerFor } from './shared-listener.js';
import { ListenHeartbeat } from './listen-heartbeat.js';
import { DEFAULT_REPLY_TIMEOUT_MS, guardReplies } from './socket.js';

/** The native transaction handle of this adapter: the pool client running the transaction. */
export type PgTx = pg.PoolClient;

export interface PgStoreOptions extends PostgresStoreOptions {
  /**
   * A pool you own: the store never ends it (end it yourself after `store.close()`). Give it an
   * `error` listener (`pool.on('error', …)`): an idle client whose connection dies makes the pool
   * emit `error`. The store adds a listener of its own while it is open, so that event never
   * crashes the process, and reports it through `onConnectionError`. Set `query_timeout` and
   * `connectionTimeoutMillis` on it to bound half-open connections (the store cannot add its
   * socket guard to a pool it did not create).
   */
  readonly pool?: pg.Pool;
  /**
   * Or a connection string: the store creates a pool (`max` 10, `keepAlive`, `connectionTimeoutMillis`
   * = `replyTimeoutMs`, and without TLS a socket that is destroyed after `replyTimeoutMs` without a
   * reply) and ends it on `close()`.
   */
  readonly connectionString?: string;
  /** More settings for the pool the store creates from `connectionString` (ssl, max, timeouts…); they win over the store's. */
  readonly poolConfig?: Omit<pg.PoolConfig, 'connectionString'>;
}

/** `max` of a pool the store creates, and node-postgres's own default. */
const DEFAULT_POOL_MAX = 10;

/**
 * A listening connection that heard no notification for this long sends its heartbeat (the
 * read-only probe), and one that keeps hearing them sends it at least every 3 × this
 * (`ListenHeartbeat`); when no reply comes within the same time (a half-open connection: no FIN, no
 * RST), or the server is read-only, the connection is dropped and LISTEN starts again, so a lost
 * LISTEN connection is noticed within 2 × this of the last thing it heard. The same bound caps
 * UNLISTEN on stop.
 */
export const LISTEN_HEARTBEAT_MS = 5_000;

/** Resolves with `work`, or rejects after `ms` (the timer never keeps the process alive). */
function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no reply within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

type QueryResults = pg.QueryResult<Row> | pg.QueryResult<Row>[];

function rowsOf(result: QueryResults): Row[] {
  // A parameterless multi-statement text (simple query protocol) yields one result per statement.
  return Array.isArray(result) ? (result.at(-1)?.rows ?? []) : result.rows;
}

/**
 * Pools whose statements run as named prepared statements (`createPgStore` without
 * `pooler: 'transaction'`): a transaction pooler hands each transaction any server connection, where
 * the statement was never prepared (SQLSTATE 26000), so those pools stay unnamed.
 */
const PREPARING_POOLS = new WeakSet<pg.Pool>();

/** At most this many distinct statement texts get a name (the store's own are far fewer). */
const MAX_NAMED_STATEMENTS = 512;
const statementNames = new Map<string, string>();

/** Two 32-bit FNV-1a hashes of `text` (different offsets) as 16 hex digits: a name per text, no dependency. */
function textHash(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 13);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

/**
 * The name of `text` as a prepared statement, derived from the text itself (so one name never
 * stands for two texts, on any connection); undefined past {@link MAX_NAMED_STATEMENTS} texts.
 */
function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (name === undefined && statementNames.size < MAX_NAMED_STATEMENTS) {
    name = `postpone_${textHash(text)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** How many times each statement text was renamed after a cached plan changed result type. */
const renames = new Map<string, number>();

/**
 * After 0A000 "cached plan must not change result type" on statement `name` ({@link isCachedPlanChanged}):
 * `text` gets a new name, so every connection of the process prepares it afresh on its next use.
 * node-postgres never forgets a statement it parsed on a connection (`parsedStatements`), and the
 * server keeps the broken one: under the old name every later Bind on that connection would fail
 * the same way. The old name stays prepared but unused. A concurrent failure of the same name
 * renames once.
 */
function renameStatement(text: string, name: string): void {
  if (statementNames.get(text) !== name) return;
  const n = (renames.get(text) ?? 0) + 1;
  renames.set(text, n);
  statementNames.set(text, `postpone_${textHash(text)}_${n}`);
}

/**
 * Runs `text`; with `prepare` and parameters as a named prepared statement (node-postgres parses
 * it once per connection and then sends only Bind/Execute: PostgreSQL 17 §55.2.3, "Extended Query").
 */
async function run(client: pg.Pool | pg.ClientBase, text: string, params?: readonly Param[], prepare = false): Promise<Row[]> {
  const values = params === undefined ? undefined : [...params];
  const name = prepare && values !== undefined ? statementName(text) : undefined;
  try {
    const result = (await (name === undefined ? client.query(text, values) : client.query({ name, text, values }))) as unknown as QueryResults;
    return rowsOf(result);
  } catch (error) {
    if (name !== undefined && isCachedPlanChanged(error)) renameStatement(text, name);
    throw error;
  }
}

/**
 * True when the statement surely never reached the server: the pooled client was already dead
 * (its socket reset before the write, or pg marked it not queryable). Retrying on another client is safe.
 */
function neverSent(error: unknown): boolean {
  const e = error as { syscall?: unknown; message?: unknown } | null;
  if (typeof e !== 'object' || e === null) return false;
  if (e.message === 'Client has encountered a connection error and is not queryable') return true;
  return e.syscall === 'write' && isConnectionLoss(error);
}

/**
 * Checks out a client with `onError` already listening. `await pool.connect()` is not enough: when a
 * released client goes straight to a waiting `connect()`, the rest of the socket chunk that held the
 * previous reply (a FATAL 57P01 after `pg_terminate_backend`, say) is parsed before the awaiting code
 * runs, and an `error` event with no listener crashes the process. A callback runs synchronously.
 * @throws the pool's connect error
 */
function checkout(pool: pg.Pool, onError: (error: Error) => void): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((error, client) => {
      if (error || client === undefined) {
        reject(error ?? new Error('pool.connect returned no client'));
        return;
      }
      client.on('error', onError);
      resolve(client);
    });
  });
}

/** What pg-pool rejects a waiting `connect()` with when `connectionTimeoutMillis` runs out before a client was free. */
const POOL_WAIT_TIMEOUT_MESSAGE = 'timeout exceeded when trying to connect';

/**
 * `error` as a {@link PoolTimeoutError} when it is pg-pool's wait timeout and the pool is full
 * (`totalCount >= max`): the call waited in the pool's queue, the database was never asked. Any
 * other error (a connect that timed out against the server, with room in the pool) is returned as is,
 * for `translateError` to make it a `ConnectionError` TIMEOUT.
 */
function poolTimeoutOr(pool: pg.Pool, error: unknown, startedAt: number): unknown {
  if (!(error instanceof Error) || error.message !== POOL_WAIT_TIMEOUT_MESSAGE) return error;
  const max = pool.options.max ?? DEFAULT_POOL_MAX;
  if (pool.totalCount < max) return error;
  return new PoolTimeoutError(Math.round(performance.now() - startedAt), max, pool.waitingCount, { cause: error });
}

/** Runs `fn`, which takes a client of `pool`; a wait for a client of a full pool that timed out is a {@link PoolTimeoutError}. */
async function fromPool<T>(pool: pg.Pool, fn: () => Promise<T>): Promise<T> {
  const startedAt = performance.now();
  try {
    return await fn();
  } catch (error) {
    throw poolTimeoutOr(pool, error, startedAt);
  }
}

/**
 * {@link run} on the pool, retried once on a fresh client when a stale idle one never sent it, or
 * once under a new statement name when its cached plan changed result type (0A000 at Bind: the
 * statement did not run), or once when the server was read-only (25006, a failover: the statement
 * wrote nothing, and `pool.query` released its client with the error, so the pool discarded it;
 * `onReadOnly` runs first, e.g. to move the listener too).
 */
async function runOnPool(pool: pg.Pool, text: string, params?: readonly Param[], onReadOnly?: () => void): Promise<Row[]> {
  const prepare = PREPARING_POOLS.has(pool);
  try {
    return await run(pool, text, params, prepare);
  } catch (error) {
    const readOnly = isReadOnlyNode(error);
    if (readOnly) onReadOnly?.();
    if (!neverSent(error) && !isCachedPlanChanged(error) && !readOnly) throw error;
    return await run(pool, text, params, prepare);
  }
}

/** Drops the socket of a client whose connection is half-open, so the pool does not keep it. */
function destroySocket(client: pg.PoolClient): void {
  (client as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection?.stream?.destroy?.();
}

/**
 * The driver's one listening connection (see `sharedListener`): a pool client held for the
 * purpose. It counts as lost on 'error' or 'end', on a failed LISTEN, or when the heartbeat
 * (the read-only probe, after {@link LISTEN_HEARTBEAT_MS} in which no notification arrived, and at least every 3 × that) gets no reply within the same time; a lost client
 * is released with the error, so the pool discards it. `close` sends `unlisten *` (bounded by the
 * same time) and hands the client back to the pool.
 * @throws the pool's connect error
 */
function openPgListenConnection(pool: pg.Pool): OpenListenConnection {
  return async ({ onNotify, onLost }) => {
    // An error between the checkout and the listeners below is kept and handled as a loss.
    let early: Error | undefined;
    let onError: ((error: Error) => void) | undefined;
    const relay = (error: Error) => {
      if (onError) onError(error);
      else early ??= error;
    };
    const client = await checkout(pool, relay);
    let done = false;
    let heartbeat: ListenHeartbeat | undefined;
    const onNotification = (message: pg.Notification) => {
      heartbeat?.heard();
      onNotify(message.channel, message.payload ?? '');
    };
    const detach = () => {
      heartbeat?.stop();
      client.off('notification', onNotification);
      client.off('error', relay);
      client.off('end', onEnd);
    };
    // The client's 'error', 'end', a failed LISTEN and a silent heartbeat report one loss: release once.
    const lose = (error?: Error) => {
      if (done) return;
      done = true;
      detach();
      if (error !== undefined) destroySocket(client);
      client.release(error ?? true);
      onLost();
    };
    const onEnd = () => lose();
    client.on('notification', onNotification);
    onError = lose;
    client.on('end', onEnd);
    if (early !== undefined) {
      lose(early);
      throw early;
    }
    heartbeat = new ListenHeartbeat(
      LISTEN_HEARTBEAT_MS,
      async () => (await client.query<{ ro: string }>(READ_ONLY_PROBE)).rows[0]?.ro === 'on',
      lose,
    );
    const send = async (statement: string) => {
      if (done) throw new Error('the listening connection was lost');
      try {
        await within(client.query(statement), LISTEN_HEARTBEAT_MS, statement);
      } catch (error) {
        lose(error as Error);
        throw error;
      }
    };
    return {
      listen: (channel) => send(`listen ${pg.escapeIdentifier(channel)}`),
      unlisten: (channel) => send(`unlisten ${pg.escapeIdentifier(channel)}`),
      async readOnly() {
        if (done) throw new Error('the listening connection was lost');
        try {
          const result = await within(client.query<{ ro: string }>(READ_ONLY_PROBE), LISTEN_HEARTBEAT_MS, 'read-only probe');
          return result.rows[0]?.ro === 'on';
        } catch (error) {
          lose(error as Error);
          throw error;
        }
      },
      async close() {
        if (done) return;
        done = true;
        detach();
        // Until released the client is ours: pg emits 'error' for a connection cut during UNLISTEN even
        // though the query also rejects ("Connection terminated unexpectedly"), and without a listener
        // that event would crash the process (seen when the database restarted under a hybrid worker).
        let broken: Error | undefined;
        const onClosingError = (error: Error) => {
          broken ??= error;
        };
        client.on('error', onClosingError);
        try {
          await within(client.query('unlisten *'), LISTEN_HEARTBEAT_MS, 'unlisten');
        } catch (error) {
          broken ??= error as Error;
          destroySocket(client); // a half-open connection never answers
        } finally {
          // A broken client keeps the listener: it may still emit 'error' after its release.
          if (broken === undefined) client.off('error', onClosingError);
          client.release(broken);
        }
      },
    };
  };
}

/**
 * The settings of the pool the store creates: its defaults, then the user's `poolConfig`. With
 * `sockets`, every socket the pool opens stays in that set until it closes (the store destroys the
 * ones left when it closes).
 */
export function pgPoolConfig(
  connectionString: string,
  replyTimeoutMs: number,
  poolConfig: Omit<pg.PoolConfig, 'connectionString'> = {},
  sockets?: Set<Socket>,
): pg.PoolConfig {
  // Connection passes its config (with `ssl`): under TLS the TLS layer reads the socket, so no guard.
  const open = (config: { ssl?: unknown }): Socket => {
    const socket = config.ssl ? new Socket() : guardReplies(new Socket(), replyTimeoutMs);
    if (sockets !== undefined) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    }
    return socket;
  };
  return {
    max: DEFAULT_POOL_MAX,
    keepAlive: true,
    connectionTimeoutMillis: replyTimeoutMs,
    stream: open as unknown as pg.PoolConfig['stream'],
    ...poolConfig,
    connectionString,
  };
}

/**
 * A {@link Driver} over a `pg.Pool`.
 *
 * Every client it checks out has an `error` listener while held (a connection cut mid-call rejects
 * the call, never crashes the process) and is released with the error when it broke, so the pool
 * destroys it. The pool gets an `error` listener of the driver's own until `close()`: an idle client
 * lost is reported to `events.onConnectionError` instead of crashing the process.
 *
 * @param ownsPool end the pool on `close()` (only when this package created it)
 * @param listenPool a pool of direct connections for LISTEN (behind a transaction pooler); ended on `close()` when owned
 * @param sockets the sockets of the pools this package created (`pgPoolConfig`); any still open are destroyed on `close()`
 */
export function createPgDriver(
  pool: pg.Pool,
  ownsPool: boolean,
  events: DriverEvents = {},
  listenPool?: { readonly pool: pg.Pool; readonly owned: boolean },
  sockets?: ReadonlySet<Socket>,
): Driver<PgTx> {
  // One listening connection per pool in this process, shared by every store on it; this driver's own subscriptions end on close().
  const listenOn = listenPool?.pool ?? pool;
  const shared: SharedListener = sharedListenerFor(listenOn, () => openPgListenConnection(listenOn));
  // A write met 25006 (a failover): the listener may be on the old primary too.
  const onReadOnly = () => shared.recheck();
  const listeners = listenerSet();
  const connectionErrorListeners = new Set<(error: unknown) => void>();
  let closed: Promise<void> | undefined;
  // The pool emits 'error' when an idle client's connection dies (and drops that client); without a
  // listener that event would crash the process.
  const onPoolError = (error: Error) => {
    events.onConnectionError?.(error);
    for (const listener of connectionErrorListeners) listener(error);
  };
  pool.on('error', onPoolError);
  listenPool?.pool.on('error', onPoolError);
  return {
    name: 'pg',
    onConnectionError(listener) {
      connectionErrorListeners.add(listener);
      return () => connectionErrorListeners.delete(listener);
    },
    // LISTEN holds a connection of the main pool unless it has a direct pool of its own.
    connectionBudget: { max: pool.options.max ?? DEFAULT_POOL_MAX, listen: listenPool === undefined, shared: !ownsPool },
    directListen: listenPool !== undefined,
    query: (text, params) => fromPool(pool, () => runOnPool(pool, text, params, onReadOnly)),
    // A client has query(); a Pool has it too but would run the insert outside the caller's transaction.
    isTx: (value): value is PgTx =>
      typeof (value as { query?: unknown } | null)?.query === 'function' && typeof (value as { totalCount?: unknown }).totalCount !== 'number',
    queryIn: (tx, text, params) => run(tx, text, params),
    async transaction<T>(fn: (query: QueryFn, tx: PgTx) => Promise<T>): Promise<T> {
      // A pooled connection may have died while idle and not been noticed yet: when `begin` itself
      // fails on a lost connection nothing ran, so one retry on a fresh client is safe.
      for (let attempt = 1; ; attempt++) {
        let broken: Error | undefined;
        let begun = false;
        // Held: the pool's idle listener is off, so without this a cut connection is an uncaught 'error'.
        const onError = (error: Error) => {
          broken ??= error;
        };
        const client = await fromPool(pool, () => checkout(pool, onError));
        try {
          await client.query('begin');
          begun = true;
          const prepare = PREPARING_POOLS.has(pool);
          const result = await fn((text, params) => run(client, text, params, prepare), client);
          await client.query('commit');
          return result;
        } catch (error) {
          if (!begun && attempt === 1 && (isConnectionLoss(error) || neverSent(error))) {
            broken ??= error as Error;
            continue;
          }
          if (broken === undefined) {
            try {
              await client.query('rollback');
            } catch (rollbackError) {
              broken = rollbackError as Error; // the connection is unusable: discard it
            }
          }
          // A prepared statement whose cached plan changed result type (renamed by run): the
          // transaction rolled back whole, so it runs once more, its statements prepared afresh.
          if (attempt === 1 && broken === undefined && isCachedPlanChanged(error)) continue;
          if (isReadOnlyNode(error)) {
            // 25006: a read-only server (wrong node after a failover). Released with the error, the
            // client is discarded, not handed back; the transaction wrote nothing and runs once more
            // on another client (a new connection goes where the endpoint now points).
            broken ??= error as Error;
            onReadOnly();
            if (attempt === 1) continue;
          }
          throw error;
        } finally {
          client.off('error', onError);
          client.release(broken);
        }
      }
    },
    // One listening connection for every listen() of this driver (docs/contract.md#connection-budget).
    listen: async (channel, onNotify, options) => listeners.track(await shared.listen(channel, onNotify, options)),
    close() {
      closed ??= (async () => {
        await listeners.closeAll();
        if (listenPool?.owned) await listenPool.pool.end();
        if (ownsPool) await pool.end();
        // pg 8 leaves the socket of a connection whose SASL exchange failed (no password given) open
        // after end(), which kept the process alive: destroy what is left of the pools' sockets.
        for (const socket of sockets ?? []) socket.destroy();
        // Off after end: a client lost while ending still finds a listener.
        pool.off('error', onPoolError);
        listenPool?.pool.off('error', onPoolError);
      })();
      return closed;
    },
  };
}

/**
 * Creates a PostgreSQL store over node-postgres. Give `pool` (yours; never ended by the store) or
 * `connectionString` with optional `poolConfig` (the store creates and ends the pool). Call
 * `migrate()` before use.
 *
 * Behind a transaction pooler (`pooler: 'transaction'`), LISTEN goes over a pool of its own on
 * `listenConnectionString` (a direct connection), created with the same `poolConfig`. Otherwise the
 * store's statements run as named prepared statements on the pool's connections (parsed and planned
 * once per connection; PostgreSQL 17 PREPARE); behind a transaction pooler they run unnamed.
 *
 * @throws ValidationError INVALID_OPTION unless exactly one of `pool` and `connectionString` is
 *   given, or for a bad `replyTimeoutMs`, `pooler` or `listenConnectionString`
 */
export function createPgStore(options: PgStoreOptions): PostgresStore<PgTx> {
  const { replyTimeoutMs = DEFAULT_REPLY_TIMEOUT_MS, listenConnectionString } = validateDriverOptions(options, 'pool', ['poolConfig']);
  const owns = options.pool === undefined;
  // Every socket of the pools created here, for the driver's close() (see createPgDriver).
  const sockets = new Set<Socket>();
  const pool = options.pool ?? new pg.Pool(pgPoolConfig(options.connectionString as string, replyTimeoutMs, options.poolConfig, sockets));
  if (options.pooler !== 'transaction') PREPARING_POOLS.add(pool);
  const listenPool =
    listenConnectionString === undefined
      ? undefined
      : { pool: new pg.Pool({ ...pgPoolConfig(listenConnectionString, replyTimeoutMs, options.poolConfig, sockets), max: 2 }), owned: true };
  return new PostgresStore(createPgDriver(pool, owns, connectionEvents(options), listenPool, sockets), options);
}
