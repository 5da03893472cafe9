/**
 * Dependencies (issue #29, docs/contract.md#dependencies): migration 20 and its statements.
 * Conventions as in `./sql.ts` (`$n` parameters, JSON travels as text).
 */
import { HELD_DUE_AT_MS, TaskState } from '@postpone/core';
import { FINISH_HANDOFF_JOIN, finishFlags, finishHandoffCte } from './finish-handoff.js';
import { historyInsert, taskRowColumns } from './history-sql.js';
import { defaultNotifyChannel } from './notice.js';
import { literal, quoteIdent } from './quote.js';

/** The migration number of dependencies; kept in this one constant so it can be renumbered. */
export const DEPENDENCY_MIGRATION_VERSION = 20;

/** {@link HELD_DUE_AT_MS} as a `timestamptz` literal: the due time of a task still waiting. */
export const HELD_DUE_AT_SQL = `'${new Date(HELD_DUE_AT_MS).toISOString()}'::timestamptz`;

const S = literal(TaskState.SCHEDULED);
const CANCELLED = literal(TaskState.CANCELLED);
const DEAD = literal(TaskState.DEAD);

/**
 * A move to history run inside the trigger function, where there is no `$1`: the time is the row's
 * `updated_at`, which the trigger set to the dependency's finish (on the store's clock, from history).
 */
function triggerHistoryInsert(history: string, from: string, set: Readonly<Record<string, string>>): string {
  return historyInsert(history, from, set, 'id')
    .replaceAll('coalesce($1::timestamptz, now())', 'g.updated_at')
    .replace(/\n\s*returning id$/, '');
}

/**
 * Migration 20 — dependencies:
 * - `task.waiting_for integer` and `task.held_due_at timestamptz`, nullable without default (no
 *   rewrite; in no index): for a task scheduled with `after`, the count of its dependencies not yet
 *   terminal and its own due time. While `waiting_for > 0` its `due_at` is {@link HELD_DUE_AT_SQL}
 *   (9999-12-31), so the claim, its index `task_claim_idx` and the stats are unchanged: the task
 *   is never due and never late, and nothing polls for it.
 * - `task_dependency (dependency, dependent, on_failure)`, primary key `(dependency, dependent)`:
 *   one row per edge whose dependency was live when the dependent was scheduled.
 * - the statement-level trigger `task_dependency_release` AFTER DELETE on `task` (every way a task
 *   becomes terminal is a DELETE from `task`, migrations 11–12) with the transition table `gone`:
 *   it deletes the edges of the finished tasks, reads each one's terminal state from
 *   `task_history` (none: DONE not kept), locks the waiting dependents in id order and decrements
 *   `waiting_for` under that row lock (READ COMMITTED re-evaluates the SET on the newest row
 *   version, PostgreSQL 17 §13.2.1, so concurrent finishes of two dependencies count exactly); the
 *   one that brings it to 0 sets `due_at = greatest(own due time, the finishes)` and sends a
 *   `scheduled` notice on the default workers' channel. A dependency that ended DEAD or CANCELLED on
 *   a `'cancel'` edge cancels the dependent at once (moved to history CANCELLED, `last_error`
 *   naming the dependency), and that DELETE fires the trigger again: the cancellation cascades.
 *   All in the transaction of the finish that caused it.
 *   A held task deleted itself (cancelled while waiting) gets its own due time (`held_due_at`) in
 *   its history row. Without held rows or edges for the deleted ids it costs a scan of the
 *   transition table and one probe of the edge table's primary key per deleted row, and returns.
 * Additive: code older than 20 keeps working (it never writes `after`).
 */
export function dependencyMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const history = `${q}.task_history`;
  const channel = literal(defaultNotifyChannel(schema));
  return `alter table ${task} add column if not exists waiting_for integer;
alter table ${task} add column if not exists held_due_at timestamptz;
create table if not exists ${q}.task_dependency (
  dependency bigint not null,
  dependent bigint not null,
  on_failure text not null check (on_failure in ('run', 'cancel')),
  primary key (dependency, dependent)
);
create or replace function ${q}.release_task_dependents() returns trigger
language plpgsql as $fn$
declare
  doomed bigint[];
begin
  -- A held task made terminal (a cancel) keeps its own due time in history, not the held one.
  if exists (select 1 from gone g where g.waiting_for > 0) then
    update ${history} h set due_at = g.held_due_at
      from gone g
     where g.waiting_for > 0 and g.held_due_at is not null and h.id = g.id and h.due_at = ${HELD_DUE_AT_SQL};
  end if;
  perform 1 from gone g where exists (select 1 from ${q}.task_dependency d where d.dependency = g.id);
  if not found then
    return null;
  end if;
  with edges as (
    delete from ${q}.task_dependency d using gone g where d.dependency = g.id
    returning d.dependent, d.dependency, d.on_failure
  ), ended as (
    select e.dependent, e.dependency, e.on_failure, coalesce(h.state, 'DONE') as state, coalesce(h.finished_at, now()) as finished_at
      from edges e left join ${history} h on h.id = e.dependency
  ), per as (
    select e.dependent, count(*)::int as n, max(e.finished_at) as last_finish,
           min('dependency ' || e.dependency::text || ' ended ' || e.state) filter (where e.on_failure = 'cancel' and e.state in (${DEAD}, ${CANCELLED})) as culprit
      from ended e
     group by e.dependent
  ), locked as materialized (
    select t.id from ${task} t
     where t.id in (select p.dependent from per p) and t.state = ${S} and t.waiting_for > 0
     order by t.id
       for no key update
  ), counted as (
    update ${task} t
       set waiting_for = t.waiting_for - p.n,
           held_due_at = case when p.culprit is null then greatest(t.held_due_at, p.last_finish) else t.held_due_at end,
           due_at = case when p.culprit is null and t.waiting_for - p.n <= 0 then greatest(t.held_due_at, p.last_finish) else t.due_at end,
           last_error = coalesce(p.culprit, t.last_error),
           updated_at = case when p.culprit is not null or t.waiting_for - p.n <= 0 then greatest(t.updated_at, p.last_finish) else t.updated_at end
      from per p
     where t.id = p.dependent and t.id in (select l.id from locked l) and t.state = ${S} and t.waiting_for > 0
    returning t.id, t.due_at, t.waiting_for, p.culprit
  ), told as (
    select pg_notify(${channel}, json_build_object('op', 'scheduled', 'id', c.id::text, 'dueAtMs', floor(extract(epoch from c.due_at) * 1000)::float8)::text)
      from counted c
     where c.culprit is null and c.waiting_for <= 0 and pg_notification_queue_usage() < 0.5
  )
  select coalesce(array_agg(c.id order by c.id) filter (where c.culprit is not null), '{}') into doomed
    from counted c
   where (select count(*) from told) >= 0;
  if cardinality(doomed) > 0 then
    with cancelled as (
      delete from ${task} t where t.id = any(doomed) and t.state = ${S}
      returning ${taskRowColumns('t')}, t.held_due_at
    )
    ${triggerHistoryInsert(history, 'cancelled', { state: CANCELLED, due_at: 'coalesce(g.held_due_at, g.due_at)' })};
  end if;
  return null;
end
$fn$;
drop trigger if exists task_dependency_release on ${task};
create trigger task_dependency_release after delete on ${task} referencing old table as gone for each statement execute function ${q}.release_task_dependents();`;
}

/** The statements `schedule` / `scheduleMany` run for inputs with `after`, in the schedule's transaction. */
export function dependencyStatements(schema: string, ms: (expr: string) => string) {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const history = `${q}.task_history`;
  const ids = `array(select x::bigint from jsonb_array_elements_text($1::text::jsonb) x)`;
  return Object.freeze({
    /**
     * `$1` dependency ids as a JSON array of decimal text → `{ id }` of those live in `task`, each
     * locked FOR KEY SHARE in id order until the schedule commits. A finish of one of them (a DELETE)
     * waits for that commit, so its trigger sees the edge written here; a dependency missing here
     * finished before (its DELETE committed, or waited for and committed: a locking read skips a row
     * deleted meanwhile, PostgreSQL 17 §13.2.1). KEY SHARE does not conflict with claim, renew or
     * progress updates (FOR NO KEY UPDATE, §13.3.2); a claim's SKIP LOCKED pick skips the row meanwhile.
     */
    dependencyLock: `select t.id::text as id from ${task} t where t.id = any(${ids}) order by t.id for key share`,

    /**
     * `$1` ids as a JSON array of decimal text → `{ id, state, finishedatms }` of those in history. Run
     * after {@link dependencyLock} as a statement of its own: its snapshot, newer than the lock's
     * waits, sees the history row of a dependency whose finish committed meanwhile.
     */
    dependencyFinished: `select h.id::text as id, h.state, ${ms('h.finished_at')} as finishedatms from ${history} h where h.id = any(${ids})`,

    /**
     * `$1` edges `[{ dependent, dependency, onFailure }]` (only live dependencies), `$2` dependents
     * `[{ id, waiting, lastFinish }]` (ISO text or null) → `{ id }` per dependent held. Inserts the
     * edges; a dependent with `waiting > 0` keeps its own due time in `held_due_at` and gets
     * {@link HELD_DUE_AT_SQL}; one with 0 gets `greatest(own due time, lastFinish)`.
     */
    dependencyHold: `with edges as (
  insert into ${q}.task_dependency (dependency, dependent, on_failure)
  select e.dependency::bigint, e.dependent::bigint, e."onFailure"
    from jsonb_to_recordset($1::text::jsonb) as e(dependent text, dependency text, "onFailure" text)
  on conflict do nothing
  returning 1
), held as (
  select h.id::bigint as id, h.waiting, h."lastFinish" as last_finish
    from jsonb_to_recordset($2::text::jsonb) as h(id text, waiting integer, "lastFinish" timestamptz)
)
update ${task} t
   set waiting_for = case when h.waiting > 0 then h.waiting end,
       held_due_at = case when h.waiting > 0 then t.due_at end,
       due_at = case when h.waiting > 0 then ${HELD_DUE_AT_SQL} else greatest(t.due_at, coalesce(h.last_finish, t.due_at)) end
  from held h
 where t.id = h.id and t.state = ${S} and (select count(*) from edges) >= 0
returning t.id::text as id`,

    /**
     * `$1` `[{ id, reason }]` → `{ id }` per dependent cancelled at schedule time (a dependency had
     * already ended DEAD or CANCELLED on a `'cancel'` edge): moved to history CANCELLED with
     * `last_error` the reason; the DELETE fires `task_dependency_release`, so dependents of it in the
     * same batch follow. `$2` now (the store's clock, or null).
     */
    dependencyCancel: `with doomed as (
  select d.id::bigint as id, d.reason from jsonb_to_recordset($1::text::jsonb) as d(id text, reason text)
), cancelled as (
  delete from ${task} t using doomed d where t.id = d.id and t.state = ${S}
  returning ${taskRowColumns('t')}, t.held_due_at, d.reason${finishFlags('t')}
)${finishHandoffCte(schema, 'cancelled')}
${historyInsert(history, 'cancelled', { state: CANCELLED, due_at: 'coalesce(g.held_due_at, g.due_at)', last_error: 'g.reason' }, 'id::text as id', {}, FINISH_HANDOFF_JOIN).replaceAll('$1::timestamptz', '$2::timestamptz')}`,

    /** `$1` id → `{ waitingfor, heldduems }` of a task still waiting (for `getTask`). */
    dependencyWaiting: `select t.waiting_for as waitingfor, ${ms('t.held_due_at')} as heldduems from ${task} t where t.id = $1::bigint and t.waiting_for > 0`,
  });
}

export type DependencyStatements = ReturnType<typeof dependencyStatements>;
