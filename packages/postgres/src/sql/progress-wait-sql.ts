/**
 * Progress, awaiting a result and reschedule by id (issue #29; docs/contract.md#progress,
 * #awaiting-a-result, #reschedule): migration 18 and its statements. Conventions as in `./sql.ts`
 * (`$1` is `now` or null where time matters; JSON travels as text).
 */
import { TaskState } from '@postpone/core';
import { literal, quoteIdent } from './quote.js';
import { MAX_IDENTIFIER_LENGTH } from './notice.js';

/** The migration number of progress and finish notices; kept in this one constant so it can be renumbered. */
export const PROGRESS_MIGRATION_VERSION = 18;

/** Share of the NOTIFY queue in use at or above which finish notices are left out, as `NOTICE_QUEUE_LIMIT` of `./sql.ts`. */
export const FINISH_NOTICE_QUEUE_LIMIT = 0.5;

/**
 * Most task ids in one finish notice: 20-digit ids quoted and comma-separated stay below the
 * 8 000-byte payload limit (PostgreSQL 17 NOTIFY) at 300 (about 6 900 bytes).
 */
export const MAX_IDS_PER_FINISH_NOTICE = 300;

/**
 * The channel of a schema's finish notices: `postpone_done_<schema>`, cut to 63 bytes (an
 * identifier, PostgreSQL 17 §4.1.1). Apart from the workers' channel, so workers never receive them.
 */
export function finishChannel(schema: string): string {
  return `postpone_done_${schema}`.slice(0, MAX_IDENTIFIER_LENGTH);
}

/** Parses a finish notice `{"op":"finished","ids":["1","2"]}`; null for anything else. */
export function parseFinishNotice(payload: string): string[] | null {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return null;
  }
  const ids = (value as { op?: unknown; ids?: unknown } | null)?.ids;
  if ((value as { op?: unknown } | null)?.op !== 'finished' || !Array.isArray(ids) || !ids.every((id) => typeof id === 'string' && /^[1-9][0-9]*$/.test(id))) return null;
  return ids as string[];
}

/**
 * Migration 18 — progress and finish notices:
 * - `progress jsonb` on `task` and on `task_history` (added to the partitioned parent, so to every
 *   partition; PostgreSQL 17 ALTER TABLE): the handler's last progress report, carried to history
 *   with the other columns when the task finishes. Nullable without a default: no table rewrite
 *   (ALTER TABLE, Notes); in no index, so a progress write changes no indexed column and can be a
 *   heap-only tuple (HOT) update like a lease renewal (§66.7; migration 7 left room on each page).
 * - the statement-level trigger `task_finished_notice` AFTER DELETE on `task`: every way a task
 *   leaves the live table — complete (kept or not), fail or reclaim to DEAD, cancel, any bulk
 *   operation — is a DELETE from `task` (migrations 11–12), so this one trigger announces every
 *   finish, whatever the statement. It sends one NOTIFY per {@link MAX_IDS_PER_FINISH_NOTICE} ids on
 *   {@link finishChannel}, from the transition table of the deleted rows (§39.1, CREATE TRIGGER
 *   "REFERENCING"), delivered at commit (a rolled-back finish is never announced), and nothing while
 *   the NOTIFY queue is at least {@link FINISH_NOTICE_QUEUE_LIMIT} full (`notify_queue_full`).
 * - the table `task_waiter (waiter, until)`: one row per store with `waitFor` callers, kept fresh
 *   while they wait ({@link progressWaitStatements} `waiterPresent`). The trigger sends nothing unless
 *   a row's `until` is ahead of `now()`: a completion nobody waits for pays one look at this tiny
 *   table, not a NOTIFY (whose commit takes PostgreSQL's NOTIFY lock, serialising notifying commits,
 *   PostgreSQL 17 NOTIFY). A crashed waiter's row stops counting at its `until`.
 * Additive (code older than 17 keeps working, and its finishes are announced too). Re-runnable.
 */
export function progressMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  return `alter table ${q}.task add column if not exists progress jsonb;
alter table ${q}.task_history add column if not exists progress jsonb;
create table if not exists ${q}.task_waiter (
  waiter text primary key,
  until timestamptz not null
);
create or replace function ${q}.notify_task_finished() returns trigger
language plpgsql as $fn$
declare
  payload text;
begin
  if not exists (select 1 from ${q}.task_waiter w where w.until > now()) then
    return null;
  end if;
  if pg_notification_queue_usage() >= ${FINISH_NOTICE_QUEUE_LIMIT} then
    return null;
  end if;
  for payload in
    select '{"op":"finished","ids":["' || string_agg(g.id::text, '","') || '"]}'
      from (select gone.id, (row_number() over () - 1) / ${MAX_IDS_PER_FINISH_NOTICE} as chunk from gone) g
     group by g.chunk
  loop
    perform pg_notify(${literal(finishChannel(schema))}, payload);
  end loop;
  return null;
end
$fn$;
drop trigger if exists task_finished_notice on ${q}.task;
create trigger task_finished_notice after delete on ${q}.task referencing old table as gone for each statement execute function ${q}.notify_task_finished();`;
}

/** The statements of progress, waitFor and reschedule for one schema. */
export function progressWaitStatements(schema: string, taskColumns: (t: string) => string, ms: (expr: string) => string, millis: (param: string) => string) {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const history = `${q}.task_history`;
  const NOW = 'coalesce($1::timestamptz, now())';
  const S = literal(TaskState.SCHEDULED);
  const C = literal(TaskState.CLAIMED);
  return Object.freeze({
    /**
     * `$1` id, `$2` attempt, `$3` progress JSON text → one `{ id }` row when written. Fenced as
     * extend: the row is CLAIMED with this attempt (only the current holder writes; re-checked on the
     * newest row version, PostgreSQL 17 §13.2.1). Only `progress` changes — no indexed column, not
     * even `updated_at` — so it can be a HOT update (§66.7). Not time-dependent: no `now`.
     */
    taskProgress: `update ${task}
   set progress = $3::text::jsonb
 where id = $1::bigint
   and attempt = $2::int
   and state = ${C}
returning id::text as id`,

    /**
     * `$1` now, `$2` id, `$3` due time (ISO text, or null for now + `$4`), `$4` delay ms, `$5` whether
     * a payload is given, `$6` the payload JSON text, `$7` notify channel (null: no notice) →
     * one `{ dueatms, notified }` row when the task was SCHEDULED: due time (and payload) replaced,
     * `updated_at` now, and a `scheduled` notice so hybrid workers place the new due time
     * (`./notice.ts`). A task still waiting for dependencies (migration 20, `waiting_for > 0`) stays
     * held: the new time becomes its own due time (`held_due_at`), `dueatms` is that time, no notice. The fence `state = 'SCHEDULED'` is re-checked on the newest row version, so a
     * task claimed meanwhile is left alone (§13.2.1).
     */
    taskReschedule: `with hit as (
  update ${task} t
     set due_at = case when t.waiting_for > 0 then t.due_at else coalesce($3::timestamptz, ${NOW} + ${millis('$4')}) end,
         held_due_at = case when t.waiting_for > 0 then coalesce($3::timestamptz, ${NOW} + ${millis('$4')}) else t.held_due_at end,
         payload = case when $5::boolean then $6::text::jsonb else t.payload end,
         updated_at = ${NOW}
   where t.id = $2::bigint
     and t.state = ${S}
  returning t.id, coalesce(case when t.waiting_for > 0 then t.held_due_at end, t.due_at) as due_at, coalesce(t.waiting_for > 0, false) as held
)
select ${ms('h.due_at')} as dueatms,
       case when $7::text is not null and not h.held and (select pg_notification_queue_usage()) < ${FINISH_NOTICE_QUEUE_LIMIT}
            then pg_notify($7::text, json_build_object('op', 'scheduled', 'id', h.id::text, 'dueAtMs', ${ms('h.due_at')})::text) is null end as notified
  from hit h`,

    /**
     * `$1` waiter id, `$2` ms → nothing: this store has `waitFor` callers until `now() + $2` (database
     * clock), so the finish trigger notifies (migration 18, `task_waiter`). Refreshed every fallback
     * interval while callers wait; rows of crashed waiters past their `until` by an hour are removed.
     */
    waiterPresent: `with gone as (
  delete from ${q}.task_waiter where until < now() - interval '1 hour' and waiter <> $1::text
)
insert into ${q}.task_waiter (waiter, until) values ($1::text, now() + ${millis('$2')})
on conflict (waiter) do update set until = excluded.until`,

    /** `$1` waiter id: this store has no caller left, the finish trigger may stop notifying for it. */
    waiterAbsent: `delete from ${q}.task_waiter where waiter = $1::text`,

    /** `$1` id → `{ state }` from the live table or history: what reschedule reports when its UPDATE hit nothing. */
    taskStateOf: `select state from ${task} where id = $1::bigint
union all
select state from ${history} where id = $1::bigint
limit 1`,

    /**
     * `$1` ids as a JSON array of decimal text → full task rows (`taskColumns` of `./sql.ts`) of those
     * that exist, live or finished: the batched re-read of `waitFor` (one statement for every pending
     * caller). Primary-key and `task_history_id_idx` lookups by `id = any(array(...))`.
     */
    taskGetMany: `with ids as materialized (
  select distinct x::bigint as id from jsonb_array_elements_text($1::text::jsonb) x
)
select ${taskColumns('t')} from ${task} t where t.id = any(array(select id from ids))
union all
select ${taskColumns('t')} from ${history} t where t.id = any(array(select id from ids))`,
  });
}

export type ProgressWaitStatements = ReturnType<typeof progressWaitStatements>;
