/**
 * Batches with a callback (issue #29, docs/contract.md#batches): migration 21 and its statements.
 * Conventions as in `./sql.ts` (`$1` is `now` or null where time matters; JSON travels as text).
 */
import { TaskState } from '@postpone/core';
import { literal, quoteIdent } from './quote.js';
import { NOTICE_QUEUE_LIMIT } from './sql.js';
import { STORE_NOW_SETTING } from './batch-clock-sql.js';

/** The migration number of batches; kept in this one constant so it can be renumbered. */
export const BATCH_MIGRATION_VERSION = 21;

/**
 * Migration 21 — batches with a callback:
 * - `task.batch_id bigint`: the batch a live task belongs to, null for every task outside one.
 *   Nullable without a default: no table rewrite (PostgreSQL 17 ALTER TABLE, Notes); in no index.
 *   Not carried to `task_history` (the batch row keeps the counts).
 * - the table `task_batch`: one row per batch — `total` members, `remaining` not yet terminal,
 *   `done`/`dead`/`cancelled` counts, `sealed_at`, the callback to schedule (`callback` JSON, the
 *   creating store's `notify_channel`) and, once scheduled, `callback_task_id`.
 * - the function `task_batch_settle(id)`: under the batch row's lock (`for update`), when the batch
 *   is sealed, `remaining = 0` and no callback exists yet, inserts the callback task (SCHEDULED, due
 *   at `now() + delayMs`, payload = the callback's payload with `batch: {id, total, done, dead,
 *   cancelled}`), records its id, and sends a `scheduled` notice to workers. `callback_task_id is
 *   null` is read under that lock, held to commit: two transactions never both insert one.
 * - the trigger `task_batch_members_finished` AFTER DELETE on `task`, FOR EACH ROW WHEN
 *   (old.batch_id is not null), with the transition table of the statement's deleted rows (§39.1,
 *   CREATE TRIGGER "REFERENCING"). The WHEN condition is evaluated as each row is deleted and decides
 *   whether an event is queued at all (CREATE TRIGGER, Notes): a task outside a batch queues nothing
 *   and calls no function — its schedule, claim and completion cost what they did before 21. Every
 *   way a task becomes terminal is a DELETE from `task` whose statement also inserts its
 *   `task_history` row (or none: DONE not kept), and AFTER triggers run when the whole statement is
 *   done, so the history row is visible (§39.4). The first firing in a statement handles every deleted
 *   member of it (later firings of the same statement find the transaction-local mark
 *   `postpone.batch_members_done` = schema and smallest member id, and return): it counts them per
 *   batch and terminal state (the history row's state, DONE when there is none) and updates each batch
 *   row in batch id order — so two statements finishing members of the same batches never wait on
 *   each other in a cycle — then settles it. The counter row is updated under its row lock in the
 *   transaction of the members' terminal transition: the transaction that brings `remaining` to 0 on a
 *   sealed batch inserts the callback, and a concurrent one waits for that lock and then sees the
 *   newest row (READ COMMITTED, PostgreSQL 17 §13.2.1).
 * Additive (a nullable column, a new table, a trigger): code older than 21 never sets `batch_id`,
 * so its tasks never fire the trigger. Re-runnable.
 */
export function batchMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const batch = `${q}.task_batch`;
  const S = literal(TaskState.SCHEDULED);
  return `alter table ${task} add column if not exists batch_id bigint;
create table if not exists ${batch} (
  id bigint generated always as identity primary key,
  callback jsonb not null,
  notify_channel text,
  total integer not null default 0,
  remaining integer not null default 0,
  done integer not null default 0,
  dead integer not null default 0,
  cancelled integer not null default 0,
  created_at timestamptz not null default now(),
  sealed_at timestamptz,
  callback_task_id bigint,
  called_back_at timestamptz,
  constraint task_batch_counts_check check (remaining >= 0 and remaining = total - done - dead - cancelled)
);
create or replace function ${q}.task_batch_settle(b_id bigint) returns bigint
language plpgsql as $fn$
declare
  b record;
  cb jsonb;
  tid bigint;
  tdue timestamptz;
begin
  select * into b from ${batch} where id = b_id for update;
  if not found or b.sealed_at is null or b.remaining > 0 or b.callback_task_id is not null then
    return null;
  end if;
  cb := b.callback;
  insert into ${task} (kind, key, payload, state, due_at, attempt, max_attempts, cancel_requested, created_at, updated_at, queue, priority)
  values (cb->>'kind', null,
          coalesce(cb->'payload', '{}'::jsonb) || jsonb_build_object('batch', jsonb_build_object('id', b.id::text, 'total', b.total, 'done', b.done, 'dead', b.dead, 'cancelled', b.cancelled)),
          ${S}, now() + (cb->>'delayMs')::float8 * interval '1 millisecond', 0, (cb->>'maxAttempts')::int, false, now(), now(),
          cb->>'queue', (cb->>'priority')::smallint)
  returning id, due_at into tid, tdue;
  update ${batch} set callback_task_id = tid, called_back_at = now() where id = b_id;
  if b.notify_channel is not null and pg_notification_queue_usage() < ${NOTICE_QUEUE_LIMIT} then
    perform pg_notify(b.notify_channel, json_build_object('op', 'scheduled', 'id', tid::text, 'dueAtMs', floor(extract(epoch from tdue) * 1000)::float8)::text);
  end if;
  return tid;
end
$fn$;
create or replace function ${q}.task_batch_members_finished() returns trigger
language plpgsql as $fn$
declare
  r record;
  mark text;
begin
  -- Fired for each deleted member; the first firing of the statement handles them all.
  select ${literal(schema)} || ':' || min(g.id)::text into mark from gone g where g.batch_id is not null;
  if mark is null or current_setting('postpone.batch_members_done', true) is not distinct from mark then
    return null;
  end if;
  perform set_config('postpone.batch_members_done', mark, true);
  for r in
    select m.batch_id,
           count(*)::int as n,
           (count(*) filter (where m.state = ${literal(TaskState.DONE)}))::int as done,
           (count(*) filter (where m.state = ${literal(TaskState.DEAD)}))::int as dead,
           (count(*) filter (where m.state = ${literal(TaskState.CANCELLED)}))::int as cancelled
      from (select g.batch_id,
                   coalesce((select h.state from ${q}.task_history h where h.id = g.id order by h.finished_at desc limit 1), ${literal(TaskState.DONE)}) as state
              from gone g
             where g.batch_id is not null) m
     group by m.batch_id
     order by m.batch_id
  loop
    update ${batch}
       set remaining = remaining - r.n, done = done + r.done, dead = dead + r.dead, cancelled = cancelled + r.cancelled
     where id = r.batch_id;
    perform ${q}.task_batch_settle(r.batch_id);
  end loop;
  return null;
end
$fn$;
drop trigger if exists task_batch_members_finished on ${task};
create trigger task_batch_members_finished after delete on ${task} referencing old table as gone for each row when (old.batch_id is not null) execute function ${q}.task_batch_members_finished();`;
}

/** The Citus rewrites of migration 21 (`./citus.ts`): no trigger there; the store refuses batches (`BATCHES_UNSUPPORTED`). */
export function batchCitusRewrites(schema: string): { version: number; original: string; replacement: readonly string[]; why: string }[] {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  return [
    {
      version: BATCH_MIGRATION_VERSION,
      original: `drop trigger if exists task_batch_members_finished on ${task}`,
      replacement: [],
      why: 'no trigger on Citus (see the next rewrite), hence none to drop',
    },
    {
      version: BATCH_MIGRATION_VERSION,
      original: `create trigger task_batch_members_finished after delete on ${task} referencing old table as gone for each row when (old.batch_id is not null) execute function ${q}.task_batch_members_finished()`,
      replacement: [],
      why: 'Citus refuses triggers on distributed tables (XX000); the store refuses batches there (BatchError BATCHES_UNSUPPORTED)',
    },
  ];
}

/** The statements of batches for one schema. */
export function batchStatements(schema: string, ms: (expr: string) => string) {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const batch = `${q}.task_batch`;
  const cols = `b.id::text as id, b.callback::text as callback, b.total, b.remaining, b.done, b.dead, b.cancelled,
       ${ms('b.created_at')} as createdms, ${ms('b.sealed_at')} as sealedms, b.callback_task_id::text as callbacktaskid, ${ms('b.called_back_at')} as calledbackms`;
  return Object.freeze({
    /** `$1` callback JSON text, `$2` the store's notify channel, `$3` now (the store's clock, or null) → the new batch row (OPEN). */
    batchCreate: `insert into ${batch} as b (callback, notify_channel, created_at) values ($1::text::jsonb, $2::text, coalesce($3::timestamptz, now()))
returning ${cols}`,
    /**
     * `$1` batch id → zero or one `{ sealed }` row, the batch row locked (`for update`) until the
     * transaction ends: members join, and a seal waits, under it.
     */
    batchLock: `select b.sealed_at is not null as sealed from ${batch} b where b.id = $1::bigint for update`,
    /**
     * `$1` batch id, `$2` task ids as a JSON array of decimal text (tasks this transaction created) →
     * `{ n }`: those tasks get `batch_id` and the batch's `total` and `remaining` grow by their number.
     * Run after `batchLock` in the same transaction.
     */
    batchJoin: `with joined as (
  update ${task} t set batch_id = $1::bigint
   where t.id = any(array(select x::bigint from jsonb_array_elements_text($2::text::jsonb) x))
     and t.batch_id is null
  returning 1
), counted as (
  update ${batch} b set total = b.total + (select count(*) from joined), remaining = b.remaining + (select count(*) from joined)
   where b.id = $1::bigint
  returning 1
)
select (select count(*) from joined)::int as n, (select count(*) from counted)::int as batches`,
    /**
     * `$1` batch id, `$2` now (the store's clock, or null) → zero or one `{ id }` row: sealed
     * (`sealed_at` kept when it was). Then {@link batchSettle} in the same transaction.
     */
    batchSeal: `update ${batch} set sealed_at = coalesce(sealed_at, $2::timestamptz, now()) where id = $1::bigint returning id::text as id`,
    /**
     * `$1` batch id, `$2` now (the store's clock as ISO text, or null) → `{ taskid }`: the callback
     * task this call scheduled, or null (not due, or scheduled before). `$2` reaches the settle through
     * the transaction-local setting of migration 22 (`./batch-clock-sql.ts`); a schema before 22 ignores it.
     */
    batchSettle: `select ${q}.task_batch_settle(b.id)::text as taskid
  from (select $1::bigint as id, set_config(${literal(STORE_NOW_SETTING)}, coalesce($2::text, ''), true) as now_set) b`,
    /** `$1` batch id → zero or one batch row. */
    batchGet: `select ${cols} from ${batch} b where b.id = $1::bigint`,
  });
}

export type BatchStatements = ReturnType<typeof batchStatements>;
