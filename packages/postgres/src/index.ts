/**
 * @postpone/postgres — the Postpone store on PostgreSQL (docs/contract.md#stores).
 *
 * This entry imports no driver. Pick one:
 * - `@postpone/postgres/pg` — node-postgres: `createPgStore({ pool | connectionString })`
 * - `@postpone/postgres/postgres-js` — postgres.js: `createPostgresJsStore({ sql | connectionString })`
 *
 * Both bind the same SQL text (`statements(schema)`), apply the same migrations, and pass the same
 * conformance suite.
 */
export type { Driver, DriverEvents, ListenOptions, Param, QueryFn, Row, Unlisten } from './driver.js';
export { SqlState, sqlStateOf, translateError } from './errors.js';
export { type Migration, migrations } from './migrations.js';
export { defaultNotifyChannel, parseTaskNotice, type TaskNotice, type TaskNoticeOp } from './notice.js';
export { quoteIdent, type Statements, statements } from './sql.js';
export {
  DEFAULT_PEEK_LIMIT,
  DEFAULT_RECLAIM_LIMIT,
  DEFAULT_SCHEMA,
  LISTEN_PROBE_TIMEOUT_MS,
  MAX_PEEK_LIMIT,
  MAX_RECLAIM_LIMIT,
  PostgresStore,
  type PostgresStoreOptions,
} from './store.js';
