/**
 * The SQL of recurring schedules (docs/contract.md#recurring-schedules; `CronStore` of
 * `@postpone/core`) and their migration, once, for both drivers; conventions as in `./sql.ts`
 * (`$1` is `now` or null, JSON as text, ids as text, times as epoch ms, aliases without underscores).
 */
import { TaskState } from '@postpone/core';
import { literal, ms, NOW, notice, quoteIdent } from './sql.js';

/** The migration number of recurring schedules (7 and 8 are taken by other work). */
export const CRON_MIGRATION_VERSION = 9;

/**
 * Migration 9 — `cron_schedule`: one row per declared schedule, `name` its primary key, `cron` and
 * `time_zone` as declared, and `watermark`, the latest occurrence already turned into a task (or
 * the time the schedule was added or changed, when later). The watermark is the high-water mark of
 * River's and Oban's periodic jobs: `cronScheduleOccurrence` moves it and inserts the task in one
 * statement, so one occurrence is one task however many processes run the scheduler. A small table
 * (one row per schedule), written once per occurrence. Re-runnable (`if not exists`).
 */
export function cronMigrationSql(schema: string): string {
  return `create table if not exists ${quoteIdent(schema)}.cron_schedule (
  name text primary key,
  cron text not null,
  time_zone text not null,
  watermark timestamptz not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);`;
}

/** Row of `cronScheduleList`. */
export interface CronScheduleRow {
  name: string;
  cron: string;
  timezone: string;
  watermarkms: number;
  createdatms: number;
  updatedatms: number;
}

export function cronStatements(schema: string) {
  const q = quoteIdent(schema);
  const cron = `${q}.cron_schedule`;
  const task = `${q}.task`;
  const columns = `s.name, s.cron, s.time_zone as timezone, ${ms('s.watermark')} as watermarkms, ${ms('s.created_at')} as createdatms, ${ms('s.updated_at')} as updatedatms`;

  return Object.freeze({
    /**
     * `$1` now, `$2` schedules as JSON text (`[{name, cron, timeZone}]`, distinct names, sorted by name),
     * `$3` remove undeclared (boolean) → `{ change, name }` rows, `change` one of `added`, `changed`, `removed`.
     *
     * One statement, so one transaction. The upsert inserts missing names with watermark = now and
     * updates rows whose expression or zone differs, moving the watermark to `greatest(watermark,
     * now)` — it never moves back, so an occurrence already scheduled ahead is not scheduled again;
     * rows that match are not touched (`do update … where`, INSERT "ON CONFLICT Clause"). Rows are
     * locked in name order (the input's), so two reconcilers cannot deadlock on them. `existed` is
     * read from the statement's snapshot: a concurrent reconcile of a new name with a different
     * expression may report `added` where it changed the other's row.
     */
    cronReconcile: `with input as (
  select x.name, x.cron, x."timeZone" as time_zone
    from jsonb_to_recordset($2::text::jsonb) as x(name text, cron text, "timeZone" text)
), removed as (
  delete from ${cron} s where $3::boolean and not exists (select 1 from input i where i.name = s.name)
  returning s.name
), existed as (
  select s.name from ${cron} s join input i using (name)
), upserted as (
  insert into ${cron} as s (name, cron, time_zone, watermark, created_at, updated_at)
  select name, cron, time_zone, ${NOW}, ${NOW}, ${NOW} from input order by name
  on conflict (name) do update
     set cron = excluded.cron, time_zone = excluded.time_zone,
         watermark = greatest(s.watermark, excluded.watermark), updated_at = excluded.updated_at
   where (s.cron, s.time_zone) is distinct from (excluded.cron, excluded.time_zone)
  returning s.name
)
select 'removed' as change, name from removed
union all
select case when exists (select 1 from existed e where e.name = u.name) then 'changed' else 'added' end, u.name from upserted u`,

    /**
     * `$1` now, `$2` name, `$3` cron, `$4` time zone, `$5` occurrence (ISO), `$6` kind, `$7` payload
     * (JSON text), `$8` max attempts, `$9` trace context (JSON text or null), `$10` notify channel, `$11` the task's own retry policy (JSON text or null; migration 8),
     * `$12` queue, `$13` priority (migration 10)
     * → one row `{ id, dueatms }` when this call scheduled the occurrence, none otherwise.
     *
     * The once-per-occurrence insert: the UPDATE moves the watermark to `$5` only while it is before
     * `$5` and the stored expression is the caller's; the INSERT reads the UPDATE's output, so it
     * inserts a task only when the watermark moved, in the same statement (§7.8.4: data-modifying
     * statements in WITH). Two processes racing for one occurrence: the second UPDATE waits for the
     * first's row lock, then re-evaluates its WHERE on the new row version (READ COMMITTED,
     * PostgreSQL 17 §13.2.1), finds `watermark < $5` false, updates nothing and inserts nothing.
     */
    cronScheduleOccurrence: `with advanced as (
  update ${cron} s set watermark = $5::timestamptz, updated_at = ${NOW}
   where s.name = $2::text and s.cron = $3::text and s.time_zone = $4::text and s.watermark < $5::timestamptz
  returning s.watermark
), inserted as (
  insert into ${task} (kind, payload, state, due_at, attempt, max_attempts, cancel_requested, created_at, updated_at, trace_context, retry, queue, priority)
  select $6::text, $7::text::jsonb, ${literal(TaskState.SCHEDULED)}, a.watermark, 0, $8::int, false, ${NOW}, ${NOW}, $9::text::jsonb, $11::text::jsonb, $12::text, $13::smallint
    from advanced a
  returning id, due_at
)
select i.id::text as id, ${ms('i.due_at')} as dueatms, ${notice('scheduled', '$10::text', 'i')} as notified from inserted i`,

    /** `$1` name → the row (see {@link CronScheduleRow}) or none: tells apart why an occurrence was not scheduled. */
    cronScheduleGet: `select ${columns} from ${cron} s where s.name = $1::text`,

    /** No parameters → every row, by name. */
    cronScheduleList: `select ${columns} from ${cron} s order by s.name`,
  });
}

export type CronStatements = ReturnType<typeof cronStatements>;
