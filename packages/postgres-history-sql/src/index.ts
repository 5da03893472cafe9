/**
 * @postpone/postgres-history-sql — the history side of the Postpone PostgreSQL store, as SQL text
 * for any driver (docs/contract.md#live-and-history, #retention): migration 11's `task_history`
 * (partitioned by state, then UTC day), the move of a finished row in the finishing statement
 * (`historyInsert`, used by the statements of `@postpone/postgres-sql`), and the partition and
 * retention statements; the vacuum health read of `vacuumHealth()` (`health-sql.ts`, dead rows and the
 * oldest snapshot holding back cleanup: docs/contract.md#vacuum); migration 12's CHECK that the live table holds
 * live states only (`live-state-sql.ts`); and the SQL quoting both SQL packages
 * share (`quote.ts`). `@postpone/postgres-sql` re-exports all of it.
 */
export {
  HISTORY_DAYS_AHEAD,
  HISTORY_MIGRATION_VERSION,
  HISTORY_STATES,
  type HistoryPartitionRow,
  type HistoryStatements,
  historyInsert,
  historyMigrationSql,
  historyStatements,
  historyStateTable,
  TASK_COLUMN_NAMES,
} from './history-sql.js';
export {
  HEALTH_STATEMENTS,
  type HealthStatements,
  type OldestSnapshot,
  type TableVacuumHealth,
  type VacuumHealth,
  vacuumHealthFrom,
} from './health-sql.js';
export { LIVE_STATE_CONSTRAINT, LIVE_STATE_MIGRATION_VERSION, liveStateMigrationSql } from './live-state-sql.js';
export { literal, quoteIdent } from './quote.js';
