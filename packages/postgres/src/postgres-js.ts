/**
 * `@postpone/postgres/postgres-js` — the store over postgres.js (`postgres`, a peer dependency).
 *
 * ```ts
 * import { createPostgresJsStore } from '@postpone/postgres/postgres-js';
 * const store = createPostgresJsStore({ connectionString: process.env.DATABASE_URL });
 * await store.migrate();
 * ```
 */
import { rejectUnknownFields, ValidationError } from '@postpone/core';
import postgres from 'postgres';
import type { Driver, Param, QueryFn, Row, Unlisten } from './driver.js';
import { PostgresStore, type PostgresStoreOptions, STORE_OPTION_NAMES } from './store.js';

/** The native transaction handle of this adapter: the `sql` of `sql.begin`. */
export type PostgresJsTx = postgres.TransactionSql;

/** Grace for in-flight queries when the store ends an `sql` it created, in seconds (postgres.js unit). */
const END_TIMEOUT_S = 5;

// A user's `sql` may carry any custom type map.
type AnySql = postgres.Sql<any>;

export interface PostgresJsStoreOptions extends PostgresStoreOptions {
  /** An `sql` you own: the store never ends it (call `sql.end()` yourself after `store.close()`). */
  readonly sql?: AnySql;
  /** Or a connection string: the store creates an `sql` (`max` 10) and ends it on `close()`. */
  readonly connectionString?: string;
  /** More settings for the `sql` the store creates from `connectionString` (ssl, max, timeouts…). */
  readonly connectionOptions?: postgres.Options<{}>;
}

/**
 * A {@link Driver} over a postgres.js `sql`. Statements go through `sql.unsafe(text, params)`, as
 * named prepared statements when the instance has `prepare` on (its default), so each statement is
 * parsed once per connection. LISTEN uses postgres.js's own listener connection, which listens
 * again after a reconnect (the second and later `onlisten` calls are reported as `onReconnect`).
 *
 * @param ownsSql end the instance on `close()` (only when this package created it)
 */
export function createPostgresJsDriver(sql: AnySql, ownsSql: boolean): Driver<PostgresJsTx> {
  const prepare = sql.options.prepare !== false;
  const run = async (target: AnySql | PostgresJsTx, text: string, params?: readonly Param[]): Promise<Row[]> => {
    const rows = await target.unsafe(text, params === undefined ? [] : [...params], { prepare: prepare && params !== undefined });
    return rows as unknown as Row[];
  };
  const listeners = new Set<Unlisten>();
  let closed: Promise<void> | undefined;
  return {
    name: 'postgres',
    // sql.listen() opens a connection of its own, outside `max` (postgres.js 3.4 README, "Listen & notify").
    connectionBudget: { max: sql.options.max, listen: false, shared: !ownsSql },
    query: (text, params) => run(sql, text, params),
    // Only the sql of sql.begin() has savepoint(); the top-level sql would run outside the transaction.
    isTx: (value): value is PostgresJsTx =>
      typeof value === 'function' &&
      typeof (value as { unsafe?: unknown }).unsafe === 'function' &&
      typeof (value as { savepoint?: unknown }).savepoint === 'function',
    queryIn: (tx, text, params) => run(tx, text, params),
    async transaction<T>(fn: (query: QueryFn, tx: PostgresJsTx) => Promise<T>): Promise<T> {
      return (await sql.begin((tx) => fn((text, params) => run(tx, text, params), tx))) as T;
    },
    async listen(channel, onNotify, options) {
      let listened = 0;
      const meta = await sql.listen(channel, onNotify, () => {
        listened += 1;
        if (listened > 1) options?.onReconnect?.();
      });
      let done = false;
      const remove: Unlisten = async () => {
        if (done) return;
        done = true;
        listeners.delete(remove);
        await meta.unlisten();
      };
      listeners.add(remove);
      return remove;
    },
    close() {
      closed ??= (async () => {
        await Promise.all([...listeners].map((unlisten) => unlisten()));
        // In-flight queries get 5 s; the timeout also bounds postgres.js 3.4.9's end(), which never
        // settles after a connection died mid-query (porsager/postgres#1097).
        if (ownsSql) await sql.end({ timeout: END_TIMEOUT_S });
      })();
      return closed;
    },
  };
}

/**
 * Creates a PostgreSQL store over postgres.js. Give `sql` (yours; never ended by the store) or
 * `connectionString` with optional `connectionOptions` (the store creates and ends the instance).
 * Call `migrate()` before use.
 * @throws ValidationError INVALID_OPTION unless exactly one of `sql` and `connectionString` is given
 */
export function createPostgresJsStore(options: PostgresJsStoreOptions): PostgresStore<PostgresJsTx> {
  if (typeof options !== 'object' || options === null) throw new ValidationError('INVALID_OPTION', 'options', 'must be an object');
  rejectUnknownFields(options, [...STORE_OPTION_NAMES, 'sql', 'connectionString', 'connectionOptions']);
  if ((options.sql === undefined) === (options.connectionString === undefined)) {
    throw new ValidationError('INVALID_OPTION', 'sql', 'give exactly one of sql and connectionString');
  }
  const owns = options.sql === undefined;
  const sql = options.sql ?? postgres(options.connectionString as string, { max: 10, onnotice: () => {}, ...options.connectionOptions });
  return new PostgresStore(createPostgresJsDriver(sql, owns), options);
}
