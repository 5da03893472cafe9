/**
 * `@postpone/postgres/postgres-js` — the store over postgres.js (`postgres`, a peer dependency).
 *
 * ```ts
 * import { createPostgresJsStore } from '@postpone/postgres/postgres-js';
 * const store = createPostgresJsStore({ connectionString: process.env.DATABASE_URL });
 * await store.migrate();
 * ```
 */
import { Socket } from 'node:net';
import { ValidationError } from '@postpone/core';
import postgres from 'postgres';
import { type Driver, type Param, type QueryFn, type Row, listenerSet } from '../store/driver.js';
import { isCachedPlanChanged, isConnectionLoss, isReadOnlyNode } from '../store/errors.js';
import { PostgresStore, type PostgresStoreOptions, validateDriverOptions } from '../store/store.js';
import { type OpenListenConnection, READ_ONLY_PROBE, sharedListenerFor } from './shared-listener.js';
import { ListenHeartbeat } from './listen-heartbeat.js';
import { DEFAULT_REPLY_TIMEOUT_MS, guardReplies } from './socket.js';

/** The native transaction handle of this adapter: the `sql` of `sql.begin`. */
export type PostgresJsTx = postgres.TransactionSql;

/** Grace for in-flight queries when the store ends an `sql` it created, in seconds (postgres.js unit). */
const END_TIMEOUT_S = 5;

// A user's `sql` may carry any custom type map.
type AnySql = postgres.Sql<any>;

/** Largest pause between reconnect attempts of a connection, in seconds (postgres.js unit). */
export const RECONNECT_MAX_PAUSE_S = 0.5;

/**
 * The reconnect backoff the store sets on the `sql` it creates (postgres.js `backoff` option, in
 * seconds): 50 ms doubling per failed attempt up to {@link RECONNECT_MAX_PAUSE_S}, times a jitter
 * in [0.5, 1].
 *
 * Why: postgres.js's default is `(0.5 + random/2) * min(3 ** retries / 100, 20)` s, where
 * `retries` counts failed connection attempts of ALL connections of the instance and is reset only
 * by a successful one. During a 1.5 s outage a pool of 10 fails dozens of attempts, so the next
 * attempt waits 10–20 s after the database is back. Capped at 0.5 s, a connection is back within
 * about half a second of the database, while an outage costs at most ~2 attempts per second per
 * connection (each a refused TCP connect).
 *
 * Set it on an `sql` you pass, with `fetch_types: false` (see `createSql`):
 * `postgres(url, { backoff: reconnectBackoff, fetch_types: false, connect_timeout: 10 })`.
 */
export function reconnectBackoff(retries: number): number {
  return Math.min(0.05 * 2 ** Math.max(0, retries - 1), RECONNECT_MAX_PAUSE_S) * (0.5 + Math.random() / 2);
}

/**
 * A postgres.js `socket` option: plain TCP to the first host of the options, destroyed after
 * `replyTimeoutMs` without a reply (see `guardReplies`). The store sets it on the `sql` it creates
 * when that uses no TLS, one host and no Unix socket; you may set it on yours on the same terms:
 * `postgres(url, { socket: replyGuardedSocket(30_000) })`.
 */
export function replyGuardedSocket(replyTimeoutMs: number): (options: { host: string[]; port: number[] }) => Socket {
  return (options) => {
    const socket = new Socket();
    socket.connect(options.port[0] ?? 5432, options.host[0] ?? 'localhost');
    return guardReplies(socket, replyTimeoutMs);
  };
}

export interface PostgresJsStoreOptions extends PostgresStoreOptions {
  /**
   * An `sql` you own: the store never ends it (call `sql.end()` yourself after `store.close()`).
   * Set on it what the store sets on its own: `backoff: reconnectBackoff` (else a reconnect after
   * an outage can take 20 s), `connect_timeout` (seconds, default 30), and to bound half-open
   * connections `socket: replyGuardedSocket(ms)` (no TLS) or `keep_alive`; behind a transaction
   * pooler `prepare: false` (required with `pooler: 'transaction'`).
   */
  readonly sql?: AnySql;
  /**
   * Or a connection string: the store creates an `sql` (`max` 10, `backoff: reconnectBackoff`,
   * `connect_timeout` = `replyTimeoutMs`, a reply-guarded socket when plain TCP to one host,
   * `prepare: false` with `pooler: 'transaction'`) and ends it on `close()`.
   */
  readonly connectionString?: string;
  /** More settings for the `sql` the store creates from `connectionString` (ssl, max, timeouts…); they win over the store's. */
  // biome-ignore lint/complexity/noBannedTypes: postgres.js's own default type parameter
  readonly connectionOptions?: postgres.Options<{}>;
}

/** How long the LISTEN connection may hear nothing before its heartbeat is sent (at least every 3 × this in any case), and how long that may take to answer, in ms (as `pg`'s listener). */
export const LISTEN_HEARTBEAT_MS = 5_000;

/** How long a transaction whose connection was lost waits for postgres.js to report the close. */
const LOST_TX_SETTLE_MS = 1_000;

/** True when `settled` resolves within `ms`. */
async function settledWithin(settled: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([settled.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The driver's one listening connection (see `sharedListener`): a postgres.js instance of its own
 * (max 1, the settings of `base`), as `sql.listen` opens, but one the store controls: postgres.js
 * 3.4.9 keeps a failed channel of `sql.listen`, and later calls on it await the old failure. It
 * counts as lost when postgres.js reports the connection closed after a LISTEN, when a statement
 * fails, or when the heartbeat (the read-only probe, after {@link LISTEN_HEARTBEAT_MS} in which no notification arrived, and at least every 3 × that) gets no reply within
 * the same time (half-open: detected within two heartbeats); a lost instance is ended and never
 * reused. `close` ends the instance, bounded to 2 s (porsager/postgres#1097).
 */
function openPostgresJsListenConnection(base: AnySql): OpenListenConnection {
  return async ({ onNotify, onLost }) => {
    let done = false;
    let listening = false;
    const end = async () => {
      heartbeat.stop();
      // end() never settles while a query waits on a dead connection (porsager/postgres#1097), and the
      // heartbeat may be such a query on a half-open connection: bound the wait.
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([
        instance.end({ timeout: 1 }).catch(() => undefined),
        new Promise<void>((resolve) => {
          bound = setTimeout(resolve, 2_000);
        }),
      ]);
      clearTimeout(bound);
    };
    const lose = () => {
      if (done) return;
      done = true;
      void end();
      onLost();
    };
    // The parsed options of `base` (with `shared`) are taken as they are, as postgres.js's own listen does.
    const instance = postgres({
      // biome-ignore lint/complexity/noBannedTypes: postgres.js's own default type parameter
      ...(base.options as unknown as postgres.Options<{}>),
      max: 1,
      idle_timeout: null,
      max_lifetime: null,
      fetch_types: false,
      onnotify: (channel: string, payload: string) => {
        heartbeat.heard();
        onNotify(channel, payload);
      },
      onclose: () => {
        if (listening) lose();
      },
      // biome-ignore lint/complexity/noBannedTypes: postgres.js's own default type parameter
    } as unknown as postgres.Options<{}>) as AnySql;
    const heartbeat = new ListenHeartbeat(
      LISTEN_HEARTBEAT_MS,
      async () => (await instance.unsafe<{ ro: string }[]>(READ_ONLY_PROBE))[0]?.ro === 'on',
      () => lose(),
      () => listening && !done,
    );
    const send = async (statement: string) => {
      if (done) throw new Error('the listening connection was lost');
      try {
        await instance.unsafe(statement);
      } catch (error) {
        lose();
        throw error;
      }
    };
    const quote = (channel: string) => `"${channel.replace(/"/g, '""')}"`;
    return {
      async listen(channel) {
        await send(`listen ${quote(channel)}`);
        listening = true;
      },
      unlisten: (channel) => send(`unlisten ${quote(channel)}`),
      async readOnly() {
        if (done) throw new Error('the listening connection was lost');
        try {
          const rows = await instance.unsafe<{ ro: string }[]>(READ_ONLY_PROBE);
          return rows[0]?.ro === 'on';
        } catch (error) {
          lose();
          throw error;
        }
      },
      async close() {
        if (done) return;
        done = true;
        await end();
      },
    };
  };
}

/**
 * Run on a connection, ends it when its server is read-only (the backend terminates itself; on a
 * writable server it does nothing): postgres.js offers no way to drop one pooled connection, and
 * keeps a connection whose statement failed, so after 25006 every connection of the `sql` would
 * stay on the old primary. postgres.js opens a new one on the next use. A DO block that sleeps
 * after the terminate: the FATAL comes before any row. postgres.js 3.4.9 keeps the row count of a
 * statement cut off after a DataRow, and the first statement on the reconnected connection then
 * returns `[null, row]` (seen with `select pg_terminate_backend(pg_backend_pid())`, which returns a
 * row first).
 */
const LEAVE_IF_READ_ONLY =
  "do $$ begin if current_setting('transaction_read_only') = 'on' then perform pg_terminate_backend(pg_backend_pid()); perform pg_sleep(1); end if; end $$";

/** Longest time a sweep of the read-only connections may take (they answer at once, or are half-open). */
const READ_ONLY_SWEEP_MS = 2_000;

/**
 * After a read-only server was seen (a write met 25006, or a sweep ended a connection), the
 * connections are swept again every `READ_ONLY_RESWEEP_MS` until none was seen for
 * `READ_ONLY_WATCH_MS`, and the listener is asked again each time, in ms. One sweep reaches only the
 * connections idle or busy at that moment: not one inside a transaction or still opening, nor one
 * opened afterwards while the endpoint still sends new connections to the old primary (the statement
 * run again after the sweep opens one). postgres.js keeps an idle connection for ever (no
 * `idle_timeout` by default) and reads succeed on a read-only server, so such a connection stayed
 * there until a write happened to land on it, however long that took. Swept again, it leaves within
 * about one period (plus the statement it runs, when busy) of the endpoint moving.
 */
const READ_ONLY_RESWEEP_MS = 1_000;
const READ_ONLY_WATCH_MS = 10_000;

/**
 * Ends the connections of `sql` that sit on a read-only server: one {@link LEAVE_IF_READ_ONLY} per
 * connection of its `max`, sent at once (postgres.js spreads them over its idle connections, then
 * opens closed ones, then pipelines behind busy ones; a connection inside a transaction gets none),
 * each failure ignored (the one that ended its own connection fails by design). `onEnded` runs for
 * each probe whose connection was lost under it (as one on a read-only server is), also after the
 * sweep's bound. Bounded by {@link READ_ONLY_SWEEP_MS}.
 */
async function leaveReadOnlyNode(sql: AnySql, onEnded: () => void): Promise<void> {
  const max = Math.max(1, Math.min(100, Number(sql.options.max) || 10));
  const probes = Array.from({ length: max }, () => sql.unsafe(LEAVE_IF_READ_ONLY, [], { prepare: false }).then(
    () => undefined,
    (error: unknown) => {
      if (isConnectionLoss(error)) onEnded();
    },
  ));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(probes),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, READ_ONLY_SWEEP_MS);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}

/**
 * A {@link Driver} over a postgres.js `sql`. Statements go through `sql.unsafe(text, params)`, as
 * named prepared statements when the instance has `prepare` on (its default), so each statement is
 * parsed once per connection. LISTEN uses a connection of its own (see `listenOnOwnConnection`),
 * shared by every `listen` of the driver, which listens again after a reconnect and reports it as `onReconnect`.
 *
 * @param ownsSql end the instance on `close()` (only when this package created it)
 */
export function createPostgresJsDriver(sql: AnySql, ownsSql: boolean, listenSql?: { readonly sql: AnySql; readonly owned: boolean }): Driver<PostgresJsTx> {
  const prepare = sql.options.prepare !== false;
  const run = async (target: AnySql | PostgresJsTx, text: string, params?: readonly Param[]): Promise<Row[]> => {
    const rows = await target.unsafe(text, params === undefined ? [] : [...params], { prepare: prepare && params !== undefined });
    return rows as unknown as Row[];
  };
  // One listening connection per `sql` in this process, shared by every store on it; this driver's own subscriptions end on close().
  const listenOn = listenSql?.sql ?? sql;
  const shared = sharedListenerFor(listenOn, () => openPostgresJsListenConnection(listenOn));
  const listeners = listenerSet();
  let closed: Promise<void> | undefined;
  // One sweep at a time: every statement that met 25006 meanwhile awaits the same one.
  let sweeping: Promise<void> | undefined;
  const sweep = (): Promise<void> => {
    sweeping ??= leaveReadOnlyNode(sql, readOnlySeen).finally(() => {
      sweeping = undefined;
    });
    return sweeping;
  };
  // The follow-up sweeps (see READ_ONLY_RESWEEP_MS): when a read-only server was last seen (performance.now()), the next sweep's timer.
  let readOnlySeenAt = 0;
  let resweep: NodeJS.Timeout | undefined;
  const readOnlySeen = (): void => {
    readOnlySeenAt = performance.now();
    if (resweep !== undefined || closed !== undefined) return;
    const next = () => {
      resweep = setTimeout(() => {
        if (closed !== undefined || performance.now() - readOnlySeenAt > READ_ONLY_WATCH_MS) {
          resweep = undefined;
          return;
        }
        shared.recheck();
        void sweep().finally(next);
      }, READ_ONLY_RESWEEP_MS);
      resweep.unref();
    };
    next();
  };
  /**
   * After 25006 (a read-only server: wrong node after a failover): ends the connections that sit on
   * it, moves the listener too, then runs `again` once (the failed statement or transaction wrote
   * nothing), and sweeps again every READ_ONLY_RESWEEP_MS for a while. A second 25006 is thrown: the
   * caller retries later (the endpoint may still point at the old primary for a while).
   */
  const afterReadOnly = async <T>(error: unknown, again: () => Promise<T>): Promise<T> => {
    if (!isReadOnlyNode(error)) throw error;
    readOnlySeen();
    shared.recheck();
    await sweep();
    return await again();
  };
  /** One `sql.begin` transaction running `fn` (see `transaction`). */
  const once = async <T>(fn: (query: QueryFn, tx: PostgresJsTx) => Promise<T>): Promise<T> => {
    // postgres.js 3.4.9: when the connection closes inside sql.begin, begin() rejects at once
    // (its onclose race), but a callback that then rejects makes begin send `rollback` on the
    // closed connection: write() → setImmediate(nextWrite) → socket.write on a null socket, an
    // uncaught TypeError ("reading 'write'", connection.js:255) that killed the process; were the
    // connection reused by then, the rollback would go to another session. So after a connection
    // loss, once begin has settled (the connection is closed) the callback never settles; if begin
    // does not settle within LOST_TX_SETTLE_MS the connection is alive and the error is rethrown.
    let beginSettled = (): void => {};
    const settled = new Promise<void>((resolve) => (beginSettled = resolve));
    const begun = sql.begin(async (tx) => {
      try {
        return await fn((text, params) => run(tx, text, params), tx);
      } catch (error) {
        if (isConnectionLoss(error) && (await settledWithin(settled, LOST_TX_SETTLE_MS))) return new Promise<never>(() => {});
        throw error;
      }
    });
    begun.then(beginSettled, beginSettled);
    return (await begun) as T;
  };
  return {
    name: 'postgres',
    // sql.listen() opens a connection of its own, outside `max` (postgres.js 3.4 README, "Listen & notify").
    connectionBudget: { max: sql.options.max, listen: false, shared: !ownsSql },
    directListen: listenSql !== undefined,
    query: (text, params) => run(sql, text, params).catch((error: unknown) => afterReadOnly(error, () => run(sql, text, params))),
    // Only the sql of sql.begin() has savepoint(); the top-level sql would run outside the transaction.
    isTx: (value): value is PostgresJsTx =>
      typeof value === 'function' &&
      typeof (value as { unsafe?: unknown }).unsafe === 'function' &&
      typeof (value as { savepoint?: unknown }).savepoint === 'function',
    queryIn: (tx, text, params) => run(tx, text, params),
    async transaction<T>(fn: (query: QueryFn, tx: PostgresJsTx) => Promise<T>): Promise<T> {
      // postgres.js retries a statement whose cached plan changed result type (0A000) on its own
      // (`RevalidateCachedQuery`: it forgets the statement and sends it again), but inside a
      // transaction that retry meets the aborted transaction and the 0A000 comes back. The
      // transaction rolled back whole and the statement is forgotten: run it once more.
      try {
        return await once(fn);
      } catch (error) {
        if (isReadOnlyNode(error)) return await afterReadOnly(error, () => once(fn));
        if (!isCachedPlanChanged(error)) throw error;
        return await once(fn);
      }
    },
    // One listening connection for every listen() of this driver (docs/contract.md#connection-budget).
    listen: async (channel, onNotify, options) => listeners.track(await shared.listen(channel, onNotify, options)),
    close() {
      closed ??= (async () => {
        clearTimeout(resweep);
        await listeners.closeAll();
        // In-flight queries get 5 s; the timeout also bounds postgres.js 3.4.9's end(), which never
        // settles after a connection died mid-query (porsager/postgres#1097).
        if (listenSql?.owned) await listenSql.sql.end({ timeout: END_TIMEOUT_S });
        if (ownsSql) await sql.end({ timeout: END_TIMEOUT_S });
      })();
      return closed;
    },
  };
}

/** Creates the `sql` of a store from a connection string, with the store's defaults under the user's options. */
// biome-ignore lint/complexity/noBannedTypes: postgres.js's own default type parameter
function createSql(connectionString: string, replyTimeoutMs: number, transactionPooler: boolean, user: postgres.Options<{}> = {}, max = 10): AnySql {
  const sql = postgres(connectionString, {
    max,
    onnotice: () => {},
    backoff: reconnectBackoff,
    connect_timeout: Math.max(1, Math.ceil(replyTimeoutMs / 1_000)),
    // postgres.js 3.4.9 reads the array types on every new connection and drops that promise: a
    // connection terminated meanwhile crashes the process with an unhandled rejection
    // (porsager/postgres#1192, #1223). The store passes and reads no arrays (JSON text instead).
    fetch_types: false,
    ...(transactionPooler ? { prepare: false } : {}),
    ...user,
  });
  // `options` is the live object the connections read when they open a socket: guard plain TCP to one host.
  const o = sql.options as unknown as { ssl: unknown; host: string[]; path: unknown; socket: unknown };
  if (!o.ssl && o.host.length === 1 && !o.path && !o.socket) o.socket = replyGuardedSocket(replyTimeoutMs);
  return sql;
}

/**
 * Creates a PostgreSQL store over postgres.js. Give `sql` (yours; never ended by the store) or
 * `connectionString` with optional `connectionOptions` (the store creates and ends the instance).
 * Call `migrate()` before use.
 *
 * With `pooler: 'transaction'` the created `sql` runs without prepared statements, and LISTEN
 * goes over an `sql` of its own (max 1) on `listenConnectionString`.
 *
 * @throws ValidationError INVALID_OPTION unless exactly one of `sql` and `connectionString` is
 *   given; `prepare` when `pooler` is `'transaction'` and prepared statements are on (a pooler
 *   hands each transaction any server connection: "prepared statement does not exist", 26000);
 *   or for a bad `replyTimeoutMs`, `pooler`, `listenConnectionString`
 */
export function createPostgresJsStore(options: PostgresJsStoreOptions): PostgresStore<PostgresJsTx> {
  const { replyTimeoutMs = DEFAULT_REPLY_TIMEOUT_MS, listenConnectionString } = validateDriverOptions(options, 'sql', ['connectionOptions']);
  const transactionPooler = options.pooler === 'transaction';
  if (transactionPooler && (options.sql ? options.sql.options.prepare !== false : options.connectionOptions?.prepare === true)) {
    throw new ValidationError('INVALID_OPTION', 'prepare', "pooler 'transaction' needs prepare: false on the sql (prepared statements do not survive a transaction pooler)");
  }
  const owns = options.sql === undefined;
  const sql = options.sql ?? createSql(options.connectionString as string, replyTimeoutMs, transactionPooler, options.connectionOptions);
  const listenSql =
    listenConnectionString === undefined
      ? undefined
      : { sql: createSql(listenConnectionString, replyTimeoutMs, false, { ...options.connectionOptions, prepare: false }, 1), owned: true };
  return new PostgresStore(createPostgresJsDriver(sql, owns, listenSql), options);
}
