/**
 * @postpone/postgres-store — `PostgresStore`, the core `Store` contract over PostgreSQL, written
 * against a driver port (`Driver`) instead of a client library: the statements come from
 * `@postpone/postgres-sql`, driver errors become core's typed errors in one place
 * (`translateError`). No driver dependency.
 *
 * Applications use `@postpone/postgres`, whose adapters (`@postpone/postgres/pg`,
 * `@postpone/postgres/postgres-js`) build a `PostgresStore` on node-postgres or postgres.js and
 * re-export everything here. What an adapter needs besides the port — `listenerSet`,
 * `isConnectionLoss`, `validateDriverOptions`, `connectionEvents` — is exported for them.
 */
export { type Driver, type DriverEvents, type ListenOptions, listenerSet, type Param, type QueryFn, type Row, type Unlisten } from './driver.js';
export { isConnectionLoss, isDriverLevelError, SqlState, sqlStateOf, translateError } from './errors.js';
export {
  connectionEvents,
  DEFAULT_PEEK_LIMIT,
  DEFAULT_RECLAIM_LIMIT,
  DEFAULT_SCHEMA,
  LISTEN_PROBE_TIMEOUT_MS,
  MAX_PEEK_LIMIT,
  MAX_RECLAIM_LIMIT,
  PostgresStore,
  type PostgresStoreOptions,
  STORE_OPTION_NAMES,
  validateDriverOptions,
} from './store.js';
