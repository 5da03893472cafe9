/**
 * @postpone/postgres — the Postpone store on PostgreSQL (docs/contract.md#stores).
 *
 * This entry imports no driver. Pick one:
 * - `@postpone/postgres/pg` — node-postgres: `createPgStore({ pool | connectionString })`
 * - `@postpone/postgres/postgres-js` — postgres.js: `createPostgresJsStore({ sql | connectionString })`
 *
 * Both bind the same SQL text (`statements(schema)`, from `packages/postgres/src/sql`), build the same
 * `PostgresStore` (from `packages/postgres/src/store`), apply the same migrations, and pass the same
 * conformance suite. This entry re-exports what those two packages offer applications.
 */
export { type Migration, migrations, MIN_SCHEMA_VERSION, SCHEMA_VERSION } from './sql/migrations.js';
export { PAUSE_MIGRATION_VERSION } from './sql/pause-sql.js';
export { KEY_LIMIT_MIGRATION_VERSION } from './sql/key-limit-sql.js';
export { KEY_RATE_MIGRATION_VERSION } from './sql/key-rate-sql.js';
export { KEY_LIMIT_REFRESH_MS } from './store/key-limit.js';
export { defaultNotifyChannel, type PauseNotice, parsePauseNotice, parseTaskNotice, parseWorkerNotice, type TaskNotice, type TaskNoticeOp, type WorkerNotice } from './sql/notice.js';
export { quoteIdent } from './sql/quote.js';
export { type CitusRewrite, citusRewrites, type Dialect, migrationStatements } from './sql/citus.js';
export { SqlSplitError, splitStatements } from './sql/split.js';
export { NOTICE_QUEUE_LIMIT, type Statements, statements } from './sql/sql.js';
export { type Driver, type DriverEvents, type ListenOptions, type Param, type QueryFn, type Row, type Unlisten, type SqlExecutor, isSqlExecutor } from './store/driver.js';
export { isCachedPlanChanged, isReadOnlyNode, NO_VERDICT_SQLSTATES, SHAPE_SQLSTATES, SqlState, sqlStateOf, translateError } from './store/errors.js';
export { NoticeCoalescer } from './store/notice-coalescer.js';
export { DEFAULT_PEEK_LIMIT, DEFAULT_RECLAIM_LIMIT, DEFAULT_SCHEMA, LISTEN_PROBE_TIMEOUT_MS, NEAR_NOTICE_MS, MAX_PEEK_LIMIT, MAX_RECLAIM_LIMIT, PAUSE_SCHEMA_RECHECK_MS, PostgresStore, type PostgresStoreOptions, type SchemaCheck } from './store/store.js';
export type { OldestSnapshot, TableVacuumHealth, VacuumHealth } from './sql/health-sql.js';
export { BATCH_MIGRATION_VERSION, batchStatements, type BatchStatements } from './sql/batch-sql.js';
export { BATCH_CLOCK_MIGRATION_VERSION, STORE_NOW_SETTING } from './sql/batch-clock-sql.js';
export { DEPENDENCY_FLAG_MIGRATION_VERSION } from './sql/dependency-flag-sql.js';
export { FINISH_HANDOFF_MIGRATION_VERSION } from './sql/finish-handoff-sql.js';
export { DEPENDENCY_MIGRATION_VERSION } from './sql/dependency-sql.js';
export { finishChannel, MAX_IDS_PER_FINISH_NOTICE, parseFinishNotice, PROGRESS_MIGRATION_VERSION, progressWaitStatements, type ProgressWaitStatements } from './sql/progress-wait-sql.js';
export { DEFAULT_WAIT_FALLBACK_MS, WAIT_READ_BATCH, type WaitForStats } from './store/wait-for.js';
export { MAX_SHARD_GROUPS, SHARD_ID_BITS } from './sql/shard-sql.js';
export { createShardedStore, DEFAULT_EMPTY_BACKOFF_MS, fnv1a32, ShardedStore, type ShardedStoreOptions, shardIdRange, shardOfId } from './sharded/sharded-store.js';
