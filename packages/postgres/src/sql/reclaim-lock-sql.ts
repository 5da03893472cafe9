/**
 * The reclaimer's advisory lock (docs/contract.md#connection-budget): of N workers on one schema,
 * one reclaims expired leases per round, the others skip at once instead of scanning the same rows.
 * The reclaim statement takes it itself, in autocommit: one round trip per reclaim.
 *
 * `pg_try_advisory_xact_lock` never waits: it returns false while another transaction holds the
 * key, and the lock is released at that transaction's commit or rollback (PostgreSQL 17 §9.28.10,
 * "Advisory Lock Functions"). The key is derived from the schema name like the migration and
 * kind-cap keys (`hashtextextended(…, 0)`, a bigint), so two schemas on one database reclaim
 * independently.
 */

/** The reclaim lock's key (a bigint) for the schema name given by the SQL text expression `schemaText`. */
export function reclaimLockKey(schemaText: string): string {
  return `hashtextextended('postpone:reclaim:' || ${schemaText}::text, 0)`;
}

/**
 * `$1` schema name → one row `{ locked: boolean }`: takes the reclaim lock inside the caller's
 * transaction, for as long as it lasts. The store's reclaim takes the same lock inside its own
 * statement (`taskReclaimExpired` in `./sql.ts`); this one lets another session hold it (tests, or an
 * operator pausing reclaims).
 */
export const RECLAIM_LOCK_SQL = `select pg_try_advisory_xact_lock(${reclaimLockKey('$1')}) as locked`;
