/**
 * Batches and dependency releases on the store's clock (docs/contract.md#batches): the migration
 * that makes a batch's callback, and a release after a DONE-not-kept finish, take their times from
 * the store's clock, as every other statement does (`$1` now or null, `./sql.ts`), instead of the
 * server's `now()` alone. Found by the differential test (packages/postgres/test/differential.test.ts,
 * BATCH_EXAMPLE and NOT_KEPT_CLOCK_EXAMPLE): under a store `clock` a batch's times and the callback
 * task's due time, `created_at` and `updated_at` were the server's while every member's were the
 * clock's; and the callback task's own retry policy differed between the stores (below).
 */
import { TaskState } from '@postpone/core';
import { literal, quoteIdent } from './quote.js';
import { dependencyMigrationSql } from './dependency-sql.js';
import { NOTICE_QUEUE_LIMIT } from './sql.js';

/** The migration number; kept in this one constant so it can be renumbered at merge. */
export const BATCH_CLOCK_MIGRATION_VERSION = 22;

/**
 * The transaction-local setting through which the store hands its clock to the functions of
 * migration 22 (`task_batch_settle(id)`, and the triggers for a DONE-not-kept finish, whose DELETE
 * carries no time): an ISO 8601 time, or '' (unset) for the server's `now()`. Set only when the store
 * has a `clock`: in production no statement is added.
 */
export const STORE_NOW_SETTING = 'postpone.store_now';

/** `$1` the store's clock as ISO text (or null) → one row: sets {@link STORE_NOW_SETTING} until the transaction ends. */
export const storeNowSet = `select set_config(${literal(STORE_NOW_SETTING)}, coalesce($1::text, ''), true) as now_set`;

/** The store's clock as the functions of migration 22 read it: the setting, else `now()`. */
export const STORE_NOW = `coalesce(nullif(current_setting(${literal(STORE_NOW_SETTING)}, true), '')::timestamptz, now())`;

/**
 * Migration 22 — batches and releases on the store's clock:
 * - `task_batch_settle_at(id, at)`: `task_batch_settle` of migration 21 with the time `at` for the
 *   callback task's due time (`at + delayMs`), `created_at`, `updated_at` and the batch's
 *   `called_back_at` — the same lock (`for update` on the batch row), checks and notice — and the
 *   callback's own retry policy (`callback.retry`, `{ maxAttempts }` when the callback named it) in
 *   the task's `retry` column, as `schedule` writes it (21 wrote none: the worker's policy for the
 *   kind then overrode the callback's `maxAttempts`; the memory store wrote one even when not named).
 * - `task_batch_settle(id)` (migration 21's signature, which code of 21 calls) now calls it with the
 *   transaction-local {@link STORE_NOW_SETTING} when a statement set it, else `now()`: `sealBatch`
 *   sets it to the store's clock in its transaction (code of 21 never sets it: `now()`, as before).
 * - `task_batch_members_finished()` (the function of migration 21's trigger, which keeps its
 *   definition) settles each batch at the newest `finished_at` of the statement's members in
 *   `task_history` — the finishing statement's own time, on the store's clock — or, when none has a
 *   history row (DONE not kept: that DELETE carries no time), at {@link STORE_NOW_SETTING} else `now()`.
 * - `release_task_dependents()` (migration 20's trigger function) takes a dependency's finish from
 *   history as before, and for one DONE not kept from {@link STORE_NOW_SETTING} else `now()` (it
 *   was `now()` alone: under a store clock a released dependent's due time was the server's).
 * A store with a `clock` sets {@link STORE_NOW_SETTING} before a DONE-not-kept DELETE, in its
 * transaction; without one nothing is set and every time is `now()` as before.
 * Additive (functions replaced or added, same signatures): code of 20–21 works unchanged. Re-runnable.
 */
export function batchClockMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const batch = `${q}.task_batch`;
  const S = literal(TaskState.SCHEDULED);
  // Migration 20's release function, with the store's clock for a dependency finished without a history row.
  const dependencySql = dependencyMigrationSql(schema);
  const releaseStart = dependencySql.indexOf(`create or replace function ${q}.release_task_dependents()`);
  const releaseEnd = dependencySql.indexOf('$fn$;', releaseStart) + '$fn$;'.length;
  const release = dependencySql.slice(releaseStart, releaseEnd);
  const releaseOnClock = release.replace('coalesce(h.finished_at, now())', `coalesce(h.finished_at, ${STORE_NOW})`);
  if (releaseStart < 0 || releaseOnClock === release) throw new Error('migration 22: release_task_dependents of migration 20 not found');
  return `${releaseOnClock}
create or replace function ${q}.task_batch_settle_at(b_id bigint, at timestamptz) returns bigint
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
  insert into ${task} (kind, key, payload, state, due_at, attempt, max_attempts, cancel_requested, created_at, updated_at, queue, priority, retry)
  values (cb->>'kind', null,
          coalesce(cb->'payload', '{}'::jsonb) || jsonb_build_object('batch', jsonb_build_object('id', b.id::text, 'total', b.total, 'done', b.done, 'dead', b.dead, 'cancelled', b.cancelled)),
          ${S}, at + (cb->>'delayMs')::float8 * interval '1 millisecond', 0, (cb->>'maxAttempts')::int, false, at, at,
          cb->>'queue', (cb->>'priority')::smallint, nullif(cb->'retry', 'null'::jsonb))
  returning id, due_at into tid, tdue;
  update ${batch} set callback_task_id = tid, called_back_at = at where id = b_id;
  if b.notify_channel is not null and pg_notification_queue_usage() < ${NOTICE_QUEUE_LIMIT} then
    perform pg_notify(b.notify_channel, json_build_object('op', 'scheduled', 'id', tid::text, 'dueAtMs', floor(extract(epoch from tdue) * 1000)::float8)::text);
  end if;
  return tid;
end
$fn$;
create or replace function ${q}.task_batch_settle(b_id bigint) returns bigint
language sql as $fn$
  select ${q}.task_batch_settle_at(b_id, ${STORE_NOW})
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
           (count(*) filter (where m.state = ${literal(TaskState.CANCELLED)}))::int as cancelled,
           coalesce(max(m.finished_at), ${STORE_NOW}) as at
      from (select g.batch_id, h.finished_at,
                   coalesce(h.state, ${literal(TaskState.DONE)}) as state
              from gone g
              left join lateral (select x.state, x.finished_at from ${q}.task_history x where x.id = g.id order by x.finished_at desc limit 1) h on true
             where g.batch_id is not null) m
     group by m.batch_id
     order by m.batch_id
  loop
    update ${batch}
       set remaining = remaining - r.n, done = done + r.done, dead = dead + r.dead, cancelled = cancelled + r.cancelled
     where id = r.batch_id;
    perform ${q}.task_batch_settle_at(r.batch_id, r.at);
  end loop;
  return null;
end
$fn$;`;
}
