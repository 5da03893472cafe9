/**
 * The SQL of the store operations (list, retry, prune, stats) and their schema migration, once, for
 * both drivers; conventions as in `./sql.ts` (`$1` is `now` or null, JSON as text, ids as text, times
 * as epoch ms, aliases without underscores).
 *
 * Index use at 1 M rows (checked by `test/admin-plans.test.ts` with 1 M finished rows and
 * `test/live-list-plans.test.ts` with 1 M live ones): the list reads each state in id order — SCHEDULED
 * from the primary key (or `task_scheduled_kind_idx (kind, id)` for a kind), CLAIMED from
 * `task_claimed_idx`, finished states from the `(id)` / `(kind, id)` indexes of `task_history` — so
 * a page costs about `limit` index entries per group whatever the history; stats count the live rows
 * (bounded by the backlog) and the DEAD partitions, never DONE/CANCELLED; prune walks
 * `task_history_finished_idx` from the oldest finished row.
 */
import { RETRYABLE_STATES, TASK_STATES, TaskState, UNCLAIMED_DUE_COUNT_CAP, UNCLAIMED_MAX_LEVELS, UNCLAIMED_MAX_PAIRS } from '@postpone/core';
import { TASK_COLUMN_NAMES } from './history-sql.js';
import { literal, millis, ms, NOW, notice, quoteIdent, taskColumns } from './sql.js';

/** The SQL of `unclaimedKinds` (see {@link adminStatements}); `task` is the quoted live table. */
function unclaimedKindsSql(task: string): string {
  const S = literal(TaskState.SCHEDULED);
  const C = literal(TaskState.CLAIMED);
  const pairStep = (after: string) => `select s.queue, s.kind from ${task} s
     where s.state = ${S} and (s.queue, s.kind) > ${after}
     order by s.queue, s.kind limit 1`;
  const level = (extra: string) => `select max(s.priority) from ${task} s where s.state = ${S} and s.queue = l.queue and s.kind = l.kind${extra}`;
  return `with recursive pairs(queue, kind, n) as (
  select p.queue, p.kind, 1 from (${pairStep(`(coalesce($3::text, ''), '')`)}) p
  union all
  select p.queue, p.kind, r.n + 1 from pairs r cross join lateral (${pairStep('(r.queue, r.kind)')}) p
   where r.n < ${UNCLAIMED_MAX_PAIRS} and ($3::text is null or r.queue = $3::text)
), levels(queue, kind, priority, depth) as (
  select l.queue, l.kind, (${level('')}), 1
    from pairs l where $3::text is null or l.queue = $3::text
  union all
  select l.queue, l.kind, (${level(' and s.priority < l.priority')}), l.depth + 1
    from levels l where l.priority is not null and l.depth < ${UNCLAIMED_MAX_LEVELS}
), oldest as (
  select l.queue, l.kind,
         min((select s.due_at from ${task} s
               where s.state = ${S} and s.queue = l.queue and s.kind = l.kind and s.priority = l.priority
               order by s.due_at, s.id limit 1)) as due_at
    from levels l where l.priority is not null
   group by l.queue, l.kind
), stuck as (
  select o.queue, o.kind, o.due_at from oldest o
   where o.due_at <= ${NOW} - ${millis('$2')}
     and not exists (select 1 from ${task} c where c.state = ${C} and c.queue = o.queue and c.kind = o.kind)
   order by o.due_at, o.queue, o.kind
   limit $4::int
)
select ${ms(NOW)} as nowms, k.queue, k.kind, ${ms('k.due_at')} as oldestdueatms,
       least(${UNCLAIMED_DUE_COUNT_CAP}, (select sum((select count(*) from (select 1 from ${task} s
               where s.state = ${S} and s.queue = l.queue and s.kind = l.kind and s.priority = l.priority and s.due_at <= ${NOW}
               limit ${UNCLAIMED_DUE_COUNT_CAP}) x))
          from levels l where l.queue = k.queue and l.kind = k.kind and l.priority is not null))::int as due
  from (select 1) one left join stuck k on true
 order by k.due_at, k.queue, k.kind`;
}

const TERMINAL: readonly string[] = [TaskState.DONE, TaskState.CANCELLED, TaskState.DEAD];

/** The migration number of the store operations (after 3 and 4, taken by other work). */
export const ADMIN_MIGRATION_VERSION = 4;

/** A JSON array parameter (text) as `text[]`, evaluated once per statement (an InitPlan). */
function textArray(param: string): string {
  return `array(select jsonb_array_elements_text(${param}::text::jsonb))`;
}

const FINISHED = `(${[TaskState.DONE, TaskState.CANCELLED, TaskState.DEAD].map(literal).join(', ')})`;

/**
 * Migration 4 — store operations:
 * - `retry_of` / `retried_as`: the links between a retried task and its retry. Plain columns, no
 *   foreign key: prune may delete either side, and a foreign key would make every delete look the
 *   other side up.
 * - `task_state_id_idx (state, id)`: the list's keyset order within each state;
 *   `task_state_kind_id_idx (state, kind, id)`: the same within a kind, and index-only counts of
 *   CLAIMED / DEAD by kind; `task_error_idx (state, id) where last_error is not null`: failed tasks
 *   only, for the `hasError` filter.
 * - `task_finished_idx (updated_at) where state in (DONE, CANCELLED, DEAD)`: prune finds the oldest
 *   history first; a terminal row's `updated_at` is its finish time (terminal rows never change, and
 *   recording `retried_as` leaves `updated_at` alone).
 * The indexes are built in the migration transaction (CREATE INDEX blocks writes to `task` while
 * it runs; on a large existing table, create them CONCURRENTLY by hand first — the names match).
 */
export function adminMigrationSql(schema: string): string {
  const task = `${quoteIdent(schema)}.task`;
  return `alter table ${task} add column if not exists retry_of bigint, add column if not exists retried_as bigint;
create index if not exists task_state_id_idx on ${task} (state, id);
create index if not exists task_state_kind_id_idx on ${task} (state, kind, id);
create index if not exists task_error_idx on ${task} (state, id) where last_error is not null;
create index if not exists task_finished_idx on ${task} (updated_at) where state in ${FINISHED};`;
}

export function adminStatements(schema: string) {
  const task = `${quoteIdent(schema)}.task`;
  const effect = `${quoteIdent(schema)}.effect`;
  /** Finished tasks (migration 11, `./history-sql.ts`): terminal states are read here, live ones in `task`. */
  const history = `${quoteIdent(schema)}.task_history`;
  const tableOf = (state: string) => (TERMINAL.includes(state) ? history : task);
  const columns = TASK_COLUMN_NAMES.map((c) => `t.${c}`).join(', ');

  /**
   * `$1` states (JSON array text or null = all), `$2` kinds (JSON or null), `$3` due from (ISO or
   * null), `$4` due before, `$5` has error (boolean or null), `$6` limit, `$7` cursor id (or null),
   * `$8` queue (or null = all) → task rows plus `retryof`, `retriedas`, at most `$6`.
   *
   * A top-N per group: one branch per state (a literal, so the planner knows how rare it is), gated
   * by a one-time filter on `$1`; in the `byKind` form a LATERAL subquery per kind. Each branch
   * reads `task_state_id_idx (state, id)` (or `task_state_kind_id_idx (state, kind, id)`) in id order
   * from the cursor and stops after `$6` matching rows; the outer sort merges at most
   * states × kinds × `$6` rows. The cursor is an Index Cond (`id <= coalesce($7 - 1, max)`), so page n
   * costs what page 1 costs, also under a generic plan. `$5 = true` may use `task_error_idx`. `$8`
   * (queue) is a filter on the rows read, like the due range: no index leads with the queue in id order.
   *
   * In the `byKind` form the kind is matched as a range of one value (`kind >= k.kind and kind <= k.kind`)
   * and the order is `(kind, id)`, not `kind = k.kind` and `id`: with an equality the planner drops
   * `kind` from the order (it is constant), estimates a kind at 1 / (number of kinds) of the rows (it
   * cannot know which kind the LATERAL brings), and may walk the primary key in id order filtering the
   * kind — 24 528 pages for the first page of a kind of 100 rows among 1 M live rows
   * (`test/live-list-plans.test.ts`). Ordered by `(kind, id)`, only an index on `(kind, id)` yields
   * the order (`task_scheduled_kind_idx` live, `task_history_kind_id_idx` finished), so each kind
   * costs about `$6` entries whatever its size; CLAIMED rows (at most the fleet's concurrency) are
   * sorted.
   */
  function list(order: 'newest' | 'oldest', byKind: boolean): string {
    // `<=` the bigint maximum, not `<`: the first newest page must include a task whose id is
    // 9223372036854775807 (the sequence's last value). `$7 - 1` cannot overflow: a cursor id is >= 1.
    const after = order === 'newest' ? `t.id <= coalesce($7::bigint - 1, 9223372036854775807)` : `t.id > coalesce($7::bigint, 0)`;
    const dir = order === 'newest' ? 'desc' : 'asc';
    const top = (state: string) => `select ${columns} from ${tableOf(state)} t
     where t.state = ${literal(state)}${byKind ? ' and t.kind >= k.kind and t.kind <= k.kind' : ' and $2::text is null'}
       and ($3::timestamptz is null or t.due_at >= $3::timestamptz)
       and ($4::timestamptz is null or t.due_at < $4::timestamptz)
       and ($5::boolean is null or (t.last_error is not null) = $5::boolean)
       and ($8::text is null or t.queue = $8::text)
       and ${after}
     order by ${byKind ? `t.kind ${dir}, ` : ''}t.id ${dir}
     limit $6::int`;
    const gate = (state: string) => `($1::text is null or ${literal(state)} = any(${textArray('$1')}))`;
    const branch = (state: string) =>
      byKind
        ? `select x.* from unnest(${textArray('$2')}) k(kind) cross join lateral (${top(state)}) x where ${gate(state)}`
        : `(${top(state).replace(`where t.state = ${literal(state)}`, `where t.state = ${literal(state)} and ${gate(state)}`)})`;
    return `select ${taskColumns('l')}, l.retry_of::text as retryof, l.retried_as::text as retriedas
  from (${TASK_STATES.map(branch).join('\n  union all\n  ')}) l
 order by l.id ${dir}
 limit $6::int`;
  }

  return Object.freeze({
    listNewest: list('newest', false),
    listOldest: list('oldest', false),
    listNewestByKind: list('newest', true),
    listOldestByKind: list('oldest', true),

    /** `$1` id → task row plus `retryof`, `retriedas`. */
    taskGetRecord: `select ${taskColumns('t')}, t.retry_of::text as retryof, t.retried_as::text as retriedas from ${task} t where t.id = $1::bigint
union all
select ${taskColumns('t')}, t.retry_of::text as retryof, t.retried_as::text as retriedas from ${history} t where t.id = $1::bigint
limit 1`,

    /**
     * `$1` now, `$2` id, `$3` delay ms, `$4` run at (ISO or null), `$5` max attempts (or null: the
     * original's), `$6` notify channel → one row `{ state, retriedas, newid, dueatms }`, or none when
     * there is no such task.
     *
     * The original row is locked (FOR UPDATE), so concurrent retries of one task queue up; under READ
     * COMMITTED the second one reads the row as the first committed it (PostgreSQL 17 §13.2.1), finds
     * `retried_as` set and inserts nothing. The new task and the link commit together; the original's
     * state and `updated_at` never change.
     */
    taskRetry: `with orig_live as (
  select o.id, o.kind, o.queue, o.priority, o.payload, o.max_attempts, o.retry, o.state, o.retried_as from ${task} o where o.id = $2::bigint for update
), orig_finished as (
  select o.id, o.kind, o.queue, o.priority, o.payload, o.max_attempts, o.retry, o.state, o.retried_as from ${history} o where o.id = $2::bigint for update
), orig as (
  select * from orig_live union all select * from orig_finished
), ins as (
  insert into ${task} as n (kind, queue, priority, payload, state, due_at, attempt, max_attempts, retry, cancel_requested, created_at, updated_at, retry_of)
  select o.kind, o.queue, o.priority, o.payload, ${literal(TaskState.SCHEDULED)}, coalesce($4::timestamptz, ${NOW} + ${millis('$3')}), 0,
         coalesce($5::int, o.max_attempts),
         case when o.retry is null or $5::int is null then o.retry else o.retry || jsonb_build_object('maxAttempts', $5::int) end,
         false, ${NOW}, ${NOW}, o.id
    from orig o
   where o.state in (${RETRYABLE_STATES.map(literal).join(', ')}) and o.retried_as is null
  returning n.id, n.due_at
), link as (
  update ${history} t set retried_as = i.id from ins i where t.id = $2::bigint returning t.id
)
select o.state, o.retried_as::text as retriedas, i.id::text as newid, ${ms('i.due_at')} as dueatms,
       case when i.id is null then null else ${notice('scheduled', '$6::text', 'i')} end as notified,
       (select count(*) from link)::int as linked
  from orig o left join ins i on true`,

    /**
     * `$1` cut-off (ISO), `$2` batch size → `{ deleted, effectsdeleted }`. One batch: the oldest
     * finished rows before the cut-off (`task_finished_idx`), locked SKIP LOCKED so a concurrent
     * retry or prune is never waited for, deleted with their rows of the legacy `effect` table (written
     * by code before migration 13; none since) in one statement.
     */
    pruneBatch: `with doomed as (
  select t.id from ${history} t
   where t.finished_at < $1::timestamptz
   order by t.finished_at
   limit $2::int
   for update skip locked
), effects as (
  delete from ${effect} e using doomed d where e.task_id = d.id returning 1
), tasks as (
  delete from ${history} t where t.id = any(array(select d.id from doomed d)) and t.finished_at < $1::timestamptz returning 1
)
select (select count(*) from tasks)::int as deleted, (select count(*) from effects)::int as effectsdeleted`,

    /**
     * `$1` now → rows `{ nowms, oldestdueatms, state, kind, n, due }` (state null when nothing is
     * live). Each branch fixes one live state (or DEAD), so it reads that state's index only; the
     * oldest due task is read from `task_claim_idx` (migration 10), whose rows the SCHEDULED branch
     * counts anyway: both are bounded by the live backlog, never by history.
     */
    stats: `with counts as (
  select ${literal(TaskState.SCHEDULED)}::text as state, t.kind, count(*)::int as n, (count(*) filter (where t.due_at <= ${NOW}))::int as due
    from ${task} t where t.state = ${literal(TaskState.SCHEDULED)} group by t.kind
  union all
  select ${literal(TaskState.CLAIMED)}, t.kind, count(*)::int, 0 from ${task} t where t.state = ${literal(TaskState.CLAIMED)} group by t.kind
  union all
  select ${literal(TaskState.DEAD)}, t.kind, count(*)::int, 0 from ${history} t where t.state = ${literal(TaskState.DEAD)} group by t.kind
)
select ${ms(NOW)} as nowms,
       (select ${ms('o.due_at')} from ${task} o
         where o.state = ${literal(TaskState.SCHEDULED)} and o.due_at <= ${NOW}
         order by o.due_at, o.id limit 1) as oldestdueatms,
       c.state, c.kind, c.n, c.due
  from (select 1) one left join counts c on true`,

    /**
     * `$1` now, `$2` due for ms, `$3` queue (or null: every queue), `$4` limit → one row per
     * unclaimed (queue, kind) `{ nowms, queue, kind, oldestdueatms, due }`, longest waiting first, or
     * one row `{ nowms }` with the rest null when there is none (core `unclaimed.ts`,
     * docs/contract.md#unclaimed-kinds).
     *
     * Bounded on a large live table without an index of its own: a loose index scan of
     * `task_claim_idx (queue, kind, priority, due_at, id) where SCHEDULED` (as the claim's
     * `levelsCte` in `sql.ts`; PostgreSQL 17 §7.8.2) — `pairs` steps from one (queue, kind) to
     * the next with one descent each (a row comparison, an Index Cond), at most
     * `UNCLAIMED_MAX_PAIRS` (1 000) pairs; `levels` finds each pair's priorities highest first with one
     * `max` descent each, at most `UNCLAIMED_MAX_LEVELS` (10); `oldest` reads the first entry of each
     * level. A CLAIMED task of the pair is looked up only for pairs already overdue (the planner reads
     * the partial `task_claimed_idx`: the CLAIMED rows, which the fleet's concurrency bounds), and
     * due tasks are counted only for the pairs returned: a range scan per level that stops after
     * `UNCLAIMED_DUE_COUNT_CAP` (1 000) entries. Checked by `test/unclaimed-plan.test.ts`.
     */
    unclaimedKinds: unclaimedKindsSql(task),
  });
}

export type AdminStatements = ReturnType<typeof adminStatements>;
