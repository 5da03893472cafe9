/**
 * The harness's own effect table, `<schema>.app_effect` — the seed's `effect` table, moved out of the
 * library (issue #24, migration 13 of `@postpone/postgres`): the planned handler writes one row per
 * completion through `ctx.onCompleteTx`, in the transaction that commits DONE, with the task id as
 * primary key. That key and the fenced complete together are what the seed's cases check: at most
 * one local effect per task, and none from a stale attempt (a late commit rolls back with its row).
 */
import pg from 'pg';

/** The table name, unquoted. */
export const APP_EFFECT_TABLE = 'app_effect';

/** `insert` of one row: `$1` task id, `$2` attempt, `$3` worker. */
export function appEffectInsert(schema: string): string {
  return `insert into ${pg.escapeIdentifier(schema)}.${APP_EFFECT_TABLE} (task_id, attempt, worker) values ($1::bigint, $2::int, $3::text)`;
}

/**
 * Creates `app_effect` when missing: `task_id bigint primary key`, `attempt`, `worker`, `created_at`
 * (the completing transaction's start, `now()`). Safe from many processes at once: `create table if
 * not exists` alone may fail with 23505 when two sessions create the same table concurrently, so it
 * runs under a transaction-level advisory lock per schema (PostgreSQL 17 §9.28.10).
 */
export async function createAppEffectTable(pool: pg.Pool, schema: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(`select pg_advisory_xact_lock(hashtextextended($1, 0))`, [`postpone-harness:app_effect:${schema}`]);
    await client.query(
      `create table if not exists ${pg.escapeIdentifier(schema)}.${APP_EFFECT_TABLE} (
  task_id bigint primary key,
  attempt integer not null,
  worker text not null,
  created_at timestamptz not null default now()
)`,
    );
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
