/**
 * Bulk test data written straight into Postpone's `task_history` table (finished tasks live there
 * since migration 11, docs/contract.md#live-and-history; ids drawn from `task`'s sequence) with one
 * `INSERT ... SELECT generate_series` (PostgreSQL 17 §9.26): a million finished tasks in seconds,
 * where the store's API would need a million complete transactions. Only the bench writes this way.
 */
import { TaskState } from '@postpone/core';
import pg from 'pg';

/**
 * Inserts `count` finished (DONE) tasks, due and completed in the past, into `<schema>.task_history`.
 * @param client a connection to the database holding the schema
 */
export async function insertFinishedHistory(client: pg.ClientBase, schema: string, count: number): Promise<void> {
  if (count <= 0) return;
  const task = `${pg.escapeIdentifier(schema)}.task`;
  await client.query(
    `insert into ${task}_history (id, kind, payload, state, due_at, attempt, max_attempts, result, created_at, updated_at, finished_at)
     select nextval(pg_get_serial_sequence($3::text, 'id')), 'bench_history', '{}'::jsonb, $2::text, now() - interval '2 days' + g * interval '1 millisecond', 1, 5,
            'null'::jsonb, now() - interval '2 days', now() - interval '1 day', now() - interval '1 day'
       from generate_series(1, $1::int) g`,
    [count, TaskState.DONE, task],
  );
}

/** `VACUUM (ANALYZE)` of the task and history tables, as autovacuum would after a bulk load (PostgreSQL 17 §24.1). */
export async function vacuumAnalyze(client: pg.ClientBase, schema: string): Promise<void> {
  await client.query(`vacuum (analyze) ${pg.escapeIdentifier(schema)}.task, ${pg.escapeIdentifier(schema)}.task_history`);
}

/** What {@link insertPrunableHistory} wrote. */
export interface PrunableHistory {
  /** Finished tasks: 80 % DONE, 10 % CANCELLED, 10 % DEAD. */
  readonly tasks: number;
  /**
   * Rows of the legacy `effect` table written with them: 0 — a completion since migration 13 writes
   * none (the DONE rows carry their worker in `finished_by` instead, as a real completion writes).
   */
  readonly effects: number;
}

/**
 * Inserts `count` finished tasks of kind `bench_history` in the three terminal states (every tenth
 * DEAD, every tenth + 1 CANCELLED, the rest DONE, with its worker in `finished_by` as a completion
 * writes it since migration 13), finished (`updated_at`) a day ago: the history `prune` deletes. Bulk SQL as {@link insertFinishedHistory}.
 */
export async function insertPrunableHistory(client: pg.ClientBase, schema: string, count: number): Promise<PrunableHistory> {
  if (count <= 0) return { tasks: 0, effects: 0 };
  const task = `${pg.escapeIdentifier(schema)}.task`;
  await client.query(
    `insert into ${task}_history (id, kind, payload, state, due_at, attempt, max_attempts, result, last_error, failures, created_at, updated_at, finished_at, finished_by)
     select nextval(pg_get_serial_sequence($5::text, 'id')), 'bench_history', '{}'::jsonb,
            case g % 10 when 0 then $3::text when 1 then $4::text else $2::text end,
            now() - interval '2 days' + g * interval '1 millisecond', 1, 1,
            'null'::jsonb, case g % 10 when 0 then 'bench: failed' end, case g % 10 when 0 then 1 else 0 end,
            now() - interval '2 days', now() - interval '1 day' + g * interval '1 millisecond', now() - interval '1 day' + g * interval '1 millisecond',
            case when g % 10 > 1 then 'bench-history' end
       from generate_series(1, $1::int) g`,
    [count, TaskState.DONE, TaskState.DEAD, TaskState.CANCELLED, task],
  );
  return { tasks: count, effects: 0 };
}
