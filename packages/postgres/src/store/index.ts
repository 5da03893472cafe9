/**
 * @postpone/postgres — `PostgresStore`, the core `Store` contract over PostgreSQL, written
 * against a driver port (`Driver`) instead of a client library: the statements come from
 * `@postpone/postgres`, driver errors become core's typed errors in one place
 * (`translateError`). No driver dependency.
 *
 * Applications use `@postpone/postgres`, whose adapters (`@postpone/postgres/pg`,
 * `@postpone/postgres/postgres-js`) build a `PostgresStore` on node-postgres or postgres.js and
 * re-export everything here. What an adapter needs besides the port — `listenerSet`,
 * `isConnectionLoss`, `validateDriverOptions`, `connectionEvents` — is exported for them.
 */
export * from './driver.js';
export * from './errors.js';
export * from './store.js';
export type { OldestSnapshot, TableVacuumHealth, VacuumHealth } from '../sql/health-sql.js';
export { NoticeCoalescer } from './notice-coalescer.js';
