/**
 * The reclaimer's advisory lock (docs/contract.md#connection-budget): of N workers on one schema,
 * one reclaims expired leases per round, the others skip at once instead of scanning the same rows.
 *
 * `pg_try_advisory_xact_lock` never waits: it returns false while another transaction holds the
 * key, and the lock is released at that transaction's commit or rollback (PostgreSQL 17 §9.28.10,
 * "Advisory Lock Functions"). The key is derived from the schema name like the migration and
 * kind-cap keys (`hashtextextended(…, 0)`, a bigint), so two schemas on one database reclaim
 * independently.
 */

/**
 * `$1` schema name → one row `{ locked: boolean }`: the reclaim lock taken on its own (e.g. to hold it
 * off in a test). The store's reclaim statement (`taskReclaimExpired`) takes the same key itself.
 */
export const RECLAIM_LOCK_SQL = `select pg_try_advisory_xact_lock(hashtextextended('postpone:reclaim:' || $1::text, 0)) as locked`;
