/**
 * @postpone/postgres — every SQL statement and migration of the Postpone PostgreSQL store, once,
 * as text with `$1..$n` placeholders, for any driver (River's "SQL exists once"). No driver
 * dependency: `@postpone/postgres` runs these statements over a driver port, and
 * `@postpone/postgres` binds them to node-postgres and postgres.js.
 *
 * - `statements(schema)`: the task, completion, clock and migration statements (`./sql.ts`);
 * - `adminStatements(schema)`: list, retry, prune and stats (`./admin-sql.ts`);
 * - `HEALTH_STATEMENTS`: autovacuum's record and the oldest snapshot, for `vacuumHealth()` (`health-sql.ts` of `@postpone/postgres`);
 * - `cronStatements(schema)`: recurring schedules (`./cron-sql.ts`);
 * - `pauseStatements(schema)`: paused queues and kinds (`./pause-sql.ts`);
 * - `rateLimitStatements(schema)`: rate limits and the limited claim (`./rate-limit-sql.ts`);
 * - `keyLimitStatements(schema)`: per-key concurrency and the keyed claim (`./key-limit-sql.ts`);
 * - `keyRateStatements(schema)`: per-key rate limits (`./key-rate-sql.ts`);
 * - `historyStatements(schema)`, `historyInsert`: history partitions, moves and retention (re-exported from `@postpone/postgres`);
 * - `dedupStatements(schema)`: the throttle gate and the debounce key hand-over (`./dedup-sql.ts`);
 * - `renewStatements(schema)`: one lease renewal for many attempts, `extendMany` (`./renew-sql.ts`);
 * - `migrations(schema)`: the numbered, frozen schema migrations (`./migrations.ts`);
 * - the NOTIFY payload the statements send, and its parser (`./notice.ts`);
 * - `RECLAIM_LOCK_SQL`: one reclaimer at a time per schema (`./reclaim-lock-sql.ts`).
 */
export { ADMIN_MIGRATION_VERSION, type AdminStatements, adminMigrationSql, adminStatements } from './admin-sql.js';
export { HEALTH_STATEMENTS, type HealthStatements, type OldestSnapshot, type TableVacuumHealth, type VacuumHealth, vacuumHealthFrom } from './health-sql.js';
export { COMPLETION_MIGRATION_VERSION, completionMigrationSql } from './completion-sql.js';
export { CRON_MIGRATION_VERSION, type CronScheduleRow, type CronStatements, cronMigrationSql, cronStatements } from './cron-sql.js';
export { HISTORY_DAYS_AHEAD, HISTORY_MIGRATION_VERSION, HISTORY_STATES, type HistoryPartitionRow, type HistoryStatements, historyMigrationSql, historyStatements, historyStateTable, historyInsert, TASK_COLUMN_NAMES } from './history-sql.js';
export { DEDUP_MODES_MIGRATION_VERSION, type DedupStatements, dedupModesMigrationSql, dedupStatements } from './dedup-sql.js';
export { LIVE_INDEX_MIGRATION_VERSION, liveIndexMigrationSql } from './live-index-sql.js';
export { LIVE_STATE_CONSTRAINT, LIVE_STATE_MIGRATION_VERSION } from './live-state-sql.js';
export { type Migration, migrations, MIN_SCHEMA_VERSION, SCHEMA_VERSION } from './migrations.js';
export { PAUSE_MIGRATION_VERSION, type PauseRow, type PauseStatements, pauseMigrationSql, pauseStatements } from './pause-sql.js';
export {
  defaultNotifyChannel,
  MAX_IDENTIFIER_LENGTH,
  MAX_TASKS_PER_NOTICE,
  type PauseNotice,
  parsePauseNotice,
  parseScheduledMany,
  parseTaskNotice,
  parseWorkerNotice,
  scheduledManyPayloads,
  type TaskNotice,
  type TaskNoticeOp,
  type WorkerNotice,
  workerNoticePayload,
} from './notice.js';
export { type KeyBacklogStatements, keyBacklogStatements } from './key-backlog-sql.js';
export { KEY_LIMIT_MIGRATION_VERSION, type KeyLimitStatements, keyLimitMigrationSql, keyLimitStatements } from './key-limit-sql.js';
export { KEY_RATE_MIGRATION_VERSION, type KeyRateLimitRow, type KeyRateStatements, keyRateMigrationSql, keyRateStatements } from './key-rate-sql.js';
export { RATE_LIMIT_MIGRATION_VERSION, type RateLimitRow, type RateLimitStatements, rateLimitMigrationSql, rateLimitStatements } from './rate-limit-sql.js';
export { RECLAIM_LOCK_SQL } from './reclaim-lock-sql.js';
export { SqlSplitError, splitStatements } from './split.js';
export { CITUS_CLOCK, CITUS_DETECT, CITUS_NOTIFY, type CitusRewrite, citusRewrites, type CitusStatement, citusStatement, type Dialect, migrationStatements } from './citus.js';
export { type RenewStatements, renewStatements } from './renew-sql.js';
export { quoteIdent, type Statements, STATE_CHECK_LIST, statements, type TaskRow } from './sql.js';
export { DEPENDENCY_MIGRATION_VERSION, type DependencyStatements, dependencyMigrationSql, dependencyStatements, HELD_DUE_AT_SQL } from './dependency-sql.js';
export { DEPENDENCY_FLAG_MIGRATION_VERSION, dependencyFlagMigrationSql, dependencyReleaseFunctionSql } from './dependency-flag-sql.js';
export { FINISH_HANDOFF_MIGRATION_VERSION, finishHandoffMigrationSql } from './finish-handoff-sql.js';
export { FINISHED_SETTING, withoutFinishHandoff } from './finish-handoff.js';
