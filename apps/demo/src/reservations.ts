/**
 * The demo's own tables, next to the store's in the demo schema:
 * - `reservation`: what the tasks expire. `expired_count` counts every expiry, so a task whose effect
 *   committed twice would show 2 (the fenced complete and the unique `app_effect` row make that
 *   impossible; the demo checks it).
 * - `app_effect`: the handler's own record of its local effect, one row per task (primary key
 *   `task_id`), written in the completing transaction with the expiry — the seed's effect table,
 *   the application's since migration 13 of `@postpone/postgres` (the library writes none; its
 *   legacy `effect` table sits unused beside it in the same schema).
 * - `attempt_log`: one row per handler start, committed on its own (not in the completing
 *   transaction), so attempts cut short by the SIGKILL stay recorded.
 */
import type { PgTx } from '@postpone/postgres/pg';
import type pg from 'pg';

export function reservationDdl(schema: string): string {
  return `create table ${schema}.reservation (
  id integer primary key,
  status text not null default 'pending' check (status in ('pending', 'expired')),
  expired_count integer not null default 0,
  expired_at timestamptz,
  task_id bigint,
  due_at timestamptz
);
create table ${schema}.app_effect (
  task_id bigint primary key,
  attempt integer not null,
  worker text not null,
  created_at timestamptz not null default now()
);
create table ${schema}.attempt_log (
  task_id bigint not null,
  attempt integer not null,
  worker text not null,
  started_at timestamptz not null default now(),
  primary key (task_id, attempt)
);`;
}

/** The statements of {@link reservationDdl} one by one (Citus takes one DDL statement per query). */
export function reservationDdlStatements(schema: string): string[] {
  return reservationDdl(schema)
    .split(';\n')
    .map((s) => s.trim().replace(/;$/, ''))
    .filter(Boolean);
}

/** Inserts reservations already linked to their tasks (the sharded demo: each in its task's group schema). */
export async function insertLinkedReservations(client: pg.ClientBase, schema: string, links: readonly { reservationId: number; taskId: string; dueAt: Date }[]): Promise<void> {
  if (links.length === 0) return;
  await client.query(`insert into ${schema}.reservation (id, task_id, due_at) select * from unnest($1::int[], $2::bigint[], $3::timestamptz[])`, [
    links.map((l) => l.reservationId),
    links.map((l) => l.taskId),
    links.map((l) => l.dueAt),
  ]);
}

/** Inserts reservations 1..count, all pending. */
export async function insertReservations(client: pg.ClientBase, schema: string, count: number): Promise<void> {
  await client.query(`insert into ${schema}.reservation (id) select g from generate_series(1, $1::int) g`, [count]);
}

/** Records which task expires which reservation, and the task's first due time. */
export async function linkTasks(client: pg.ClientBase, schema: string, links: readonly { reservationId: number; taskId: string; dueAt: Date }[]): Promise<void> {
  await client.query(
    `update ${schema}.reservation r set task_id = l.task_id, due_at = l.due_at
       from unnest($1::int[], $2::bigint[], $3::timestamptz[]) as l(id, task_id, due_at)
      where r.id = l.id`,
    [links.map((l) => l.reservationId), links.map((l) => l.taskId), links.map((l) => l.dueAt)],
  );
}

/** The attempt starts: logged in its own autocommit statement. */
export async function logAttempt(pool: pg.Pool, schema: string, taskId: string, attempt: number, worker: string): Promise<void> {
  await pool.query(`insert into ${schema}.attempt_log (task_id, attempt, worker) values ($1, $2, $3) on conflict do nothing`, [taskId, attempt, worker]);
}

/**
 * The effect: runs inside the completing transaction (docs/contract.md#promise-4), so it commits with
 * DONE or not at all — the expiry, and the task's `app_effect` row (its primary key refuses a second).
 */
export async function expireReservation(tx: PgTx, schema: string, reservationId: number, effect: { taskId: string; attempt: number; worker: string }): Promise<void> {
  await tx.query(`update ${schema}.reservation set status = 'expired', expired_count = expired_count + 1, expired_at = now() where id = $1`, [reservationId]);
  await tx.query(`insert into ${schema}.app_effect (task_id, attempt, worker) values ($1::bigint, $2::int, $3::text)`, [effect.taskId, effect.attempt, effect.worker]);
}
