/**
 * Bulk test data written straight into Postpone's `task` table with one
 * `INSERT ... SELECT generate_series` (PostgreSQL 17 §9.26): a million finished tasks in seconds,
 * where the store's API would need a million complete transactions. Only the bench writes this way.
 */
import { TaskState } from '@postpone/core';
import pg from 'pg';

/**
 * Inserts `count` finished (DONE) tasks, due and completed in the past, into `<schema>.task`.
 * @param client a connection to the database holding the schema
 */
export async function insertFinishedHistory(client: pg.ClientBase, schema: string, count: number): Promise<void> {
  if (count <= 0) return;
  const task = `${pg.escapeIdentifier(schema)}.task`;
  await client.query(
    `insert into ${task} (kind, payload, state, due_at, attempt, max_attempts, result, created_at, updated_at)
     select 'bench_history', '{}'::jsonb, $2::text, now() - interval '2 days' + g * interval '1 millisecond', 1, 5,
            'null'::jsonb, now() - interval '2 days', now() - interval '1 day'
       from generate_series(1, $1::int) g`,
    [count, TaskState.DONE],
  );
}

/** `VACUUM (ANALYZE)` of the task table, as autovacuum would after a bulk load (PostgreSQL 17 §24.1). */
export async function vacuumAnalyze(client: pg.ClientBase, schema: string): Promise<void> {
  await client.query(`vacuum (analyze) ${pg.escapeIdentifier(schema)}.task`);
}
