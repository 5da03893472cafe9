/**
 * The driver port: the little the store needs from a PostgreSQL client (pg-boss's `executeSql`,
 * River's driver interface). Adapters, in `@postpone/postgres`:
 * `pg.ts` (node-postgres) and `postgres-js.ts` (postgres.js).
 *
 * Drivers throw their native errors; the store translates them once, in `./errors.ts`.
 */

import type { ConnectionBudget } from '@postpone/core';

/** A parameter value: primitives only (Dates as ISO text, JSON as text), cast explicitly in the SQL. */
export type Param = string | number | boolean | null;

/** A result row keyed by column alias. */
export type Row = Record<string, unknown>;

/** Runs one statement. Without parameters it may hold several statements (simple query protocol). */
export type QueryFn = (text: string, params?: readonly Param[]) => Promise<Row[]>;

/**
 * Any SQL client inside the caller's open transaction, for `schedule`, `scheduleMany` and `cancel`
 * with `{ tx }` (docs/contract.md#transactions): `query` sends `text` with its `$1..$n` placeholders
 * and `params` unchanged (every parameter is a primitive cast in the SQL, so any PostgreSQL client
 * binds it the same; `params` is absent or empty for a statement without any, e.g. SAVEPOINT) and
 * resolves with the result's rows, keyed by column alias. A `pg` client is
 * one as it is; `@postpone/postgres` wraps Kysely, Drizzle, Knex and Prisma transactions. It must run on
 * the transaction's own connection. Before it writes, the store checks that this connection is inside
 * a transaction block (a `LOCK TABLE … IN ACCESS SHARE MODE`, or the savepoint of an `onConflict: 'fail'`
 * schedule, fails with 25P01 outside one) and throws `ValidationError` `NOT_IN_TRANSACTION` when it is not.
 */
export interface SqlExecutor {
  query(text: string, params?: readonly Param[]): Promise<{ readonly rows: readonly Row[] }>;
}

/** True when `value` is a `pg.Pool` (it counts its connections): each statement would commit on its own. */
export function isPool(value: unknown): boolean {
  return typeof (value as { query?: unknown } | null)?.query === 'function' && typeof (value as { totalCount?: unknown }).totalCount === 'number';
}

/**
 * True when `value` is a postgres.js `sql` that is not a transaction: the top-level `sql` (it has
 * `begin`) or a reserved one (`release`); the `tx` of `sql.begin()` has `savepoint` and neither.
 */
export function isPostgresJsSql(value: unknown): boolean {
  const sql = value as { unsafe?: unknown; savepoint?: unknown; begin?: unknown; release?: unknown } | null;
  return (
    typeof value === 'function' &&
    typeof sql?.unsafe === 'function' &&
    typeof sql.savepoint !== 'function' &&
    (typeof sql.begin === 'function' || typeof sql.release === 'function')
  );
}

/**
 * The transaction status a client reports of its own connection, when it does: newer `pg` clients' (8.23 has it)
 * `getTransactionStatus()` returns the status byte of the server's last ReadyForQuery — `I` idle (no
 * transaction block), `T` in a transaction block, `E` in a failed one. `undefined` when the client has
 * no such method or it throws.
 */
export function transactionStatusOf(value: unknown): string | undefined {
  try {
    const client = value as { getTransactionStatus?: unknown } | null;
    if (typeof client?.getTransactionStatus !== 'function') return undefined;
    const status: unknown = (client.getTransactionStatus as () => unknown).call(client);
    return typeof status === 'string' ? status : undefined;
  } catch {
    return undefined;
  }
}

/** True when `value` has a `query` method (an {@link SqlExecutor}). */
export function isSqlExecutor(value: unknown): value is SqlExecutor {
  return typeof (value as { query?: unknown } | null)?.query === 'function';
}

export interface ListenOptions {
  /**
   * Called after the listening connection was lost and LISTEN was issued again on a new one.
   * Notifications sent while disconnected are lost: re-read the store (e.g. `peekDue`) here.
   */
  readonly onReconnect?: () => void;
}

/** Stops listening. Idempotent. */
export type Unlisten = () => Promise<void>;

/** The LISTENs a driver opened, so its `close()` ends them all; each `Unlisten` handed out runs once. */
export function listenerSet(): { track(unlisten: Unlisten): Unlisten; closeAll(): Promise<void> } {
  const listeners = new Set<Unlisten>();
  return {
    track(unlisten) {
      let done = false;
      const remove: Unlisten = async () => {
        if (done) return;
        done = true;
        listeners.delete(remove);
        await unlisten();
      };
      listeners.add(remove);
      return remove;
    },
    async closeAll() {
      await Promise.all([...listeners].map((unlisten) => unlisten()));
    },
  };
}

/** What an adapter reports outside any call. */
export interface DriverEvents {
  /** An idle connection was lost (the driver error, untranslated). Must not throw. */
  readonly onConnectionError?: (error: unknown) => void;
}

export interface Driver<Tx> {
  /** `pg` or `postgres`. */
  readonly name: string;

  /** The pool's size, whether LISTEN takes one of its connections, and whether the caller owns it. */
  readonly connectionBudget?: ConnectionBudget;
  /** True when LISTEN goes over a direct connection of its own (`listenConnectionString`), not the main pool. */
  readonly directListen: boolean;

  /** Runs one statement in autocommit (its own implicit transaction). */
  readonly query: QueryFn;

  /** True when `value` looks like this driver's native transaction handle (checked before {@link queryIn}). */
  isTx(value: unknown): value is Tx;

  /** Runs one statement on the caller's native transaction handle (a `pg` client, a postgres.js transaction `sql`). */
  queryIn(tx: Tx, text: string, params?: readonly Param[]): Promise<Row[]>;

  /**
   * Runs `fn` in one READ COMMITTED transaction on one connection: commit when it resolves, rollback
   * (and rethrow the same error) when it throws. `fn` gets a query function bound to the transaction
   * and the native handle for code that writes in the same transaction.
   */
  transaction<T>(fn: (query: QueryFn, tx: Tx) => Promise<T>): Promise<T>;

  /**
   * LISTEN on `channel` (PostgreSQL 17 LISTEN/NOTIFY) over the driver's ONE listening connection,
   * shared by every call (docs/contract.md#connection-budget); `onNotify` gets each payload. After a
   * lost connection the adapter reconnects, listens again on every channel and calls each
   * subscriber's `options.onReconnect`.
   */
  listen(channel: string, onNotify: (payload: string) => void, options?: ListenOptions): Promise<Unlisten>;

  /** Calls `listener` when the pool loses an idle connection. @returns a function that removes it */
  onConnectionError?(listener: (error: unknown) => void): () => void;

  /** Stops every listener, and ends the pool only when the adapter created it. Idempotent. */
  close(): Promise<void>;
}
