/**
 * @postpone/postgres — the Postpone store on PostgreSQL (docs/contract.md#stores).
 *
 * This entry imports no driver. Pick one:
 * - `@postpone/postgres/pg` — node-postgres: `createPgStore({ pool | connectionString })`
 * - `@postpone/postgres/postgres-js` — postgres.js: `createPostgresJsStore({ sql | connectionString })`
 *
 * Both bind the same SQL text (`statements(schema)`, from `@postpone/postgres-sql`), build the same
 * `PostgresStore` (from `@postpone/postgres-store`), apply the same migrations, and pass the same
 * conformance suite. This entry re-exports what those two packages offer applications.
 */
export {
  type Migration,
  migrations,
  defaultNotifyChannel,
  parseTaskNotice,
  parseWorkerNotice,
  type TaskNotice,
  type TaskNoticeOp,
  type WorkerNotice,
  quoteIdent,
  type Statements,
  statements,
} from '@postpone/postgres-sql';
export {
  type Driver,
  type DriverEvents,
  type ListenOptions,
  type Param,
  type QueryFn,
  type Row,
  type Unlisten,
  type SqlExecutor,
  isSqlExecutor,
  SqlState,
  sqlStateOf,
  translateError,
  DEFAULT_PEEK_LIMIT,
  DEFAULT_RECLAIM_LIMIT,
  DEFAULT_SCHEMA,
  LISTEN_PROBE_TIMEOUT_MS,
  NEAR_NOTICE_MS,
  MAX_PEEK_LIMIT,
  MAX_RECLAIM_LIMIT,
  PostgresStore,
  type PostgresStoreOptions,
  type OldestSnapshot,
  type TableVacuumHealth,
  type VacuumHealth,
} from '@postpone/postgres-store';
