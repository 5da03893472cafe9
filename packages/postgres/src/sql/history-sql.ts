/**
 * Live and history apart (migration 11, docs/contract.md#live-and-history, #retention): the table
 * `task_history` that finished tasks move to, its partitions, and retention by dropping whole
 * partitions. Conventions as in `./sql.ts` (`$1` is `now` or null).
 *
 * Layout: `task_history` is LIST-partitioned by `state` (one sub-table per terminal state:
 * `task_history_done`, `_dead`, `_cancelled`), each of them RANGE-partitioned by `finished_at` in
 * UTC days (`task_history_done_20300101` holds `[2030-01-01, 2030-01-02)`), with a DEFAULT
 * partition per state so an insert never fails, and a `_legacy` partition per state for the history
 * the migration moved (`[minvalue, the migration's day)`). State first, so that each state's
 * retention (DONE one day, DEAD a week…) drops its own days: with days first, a day's partition
 * would hold every state and could go only when the longest retention passed. The live table
 * `task` is NOT partitioned: a row moving between partitions of the table that claim, reclaim and
 * cancel lock would make them fail with serialization errors instead of skipping (PostgreSQL 17
 * §5.12.2.2: an UPDATE that moves a row to another partition).
 */
import { TaskState } from '@postpone/core';
import { literal, quoteIdent } from './quote.js';

/** `$1` (the store's clock, or null) else the transaction's `now()`, as `NOW` of `@postpone/postgres`. */
const NOW = 'coalesce($1::timestamptz, now())';

/**
 * Every column of `task` by name; `task_history` has these and `finished_at` (migration 11). Moves
 * name them rather than `*`, so the two tables may order their columns differently.
 */
export const TASK_COLUMN_NAMES: readonly string[] = Object.freeze([
  'id', 'kind', 'key', 'queue', 'priority', 'payload', 'state', 'due_at', 'attempt', 'failures', 'max_attempts', 'lease_owner',
  'lease_until', 'cancel_requested', 'result', 'last_error', 'created_at', 'updated_at', 'trace_context', 'retry', 'retry_of', 'retried_as',
  // Migration 18 (`./progress-wait-sql.ts`): the last progress report, carried to history.
  'progress',
]);

/**
 * The columns of `task` as migrations 11 and 12 knew them: their moves name these, so a released
 * migration's SQL stays what it was when later migrations add columns (migration 18 adds `progress`).
 */
export const MIGRATION_11_COLUMN_NAMES: readonly string[] = Object.freeze(TASK_COLUMN_NAMES.filter((c) => c !== 'progress'));

/**
 * Every column of `task` as `t.id, t.kind, …` (`t` the alias): what a DELETE feeding
 * {@link historyInsert} returns. Named rather than `t.*`: a statement of this code then reads the
 * same columns whatever a newer migration adds to or drops from the table beside them (README
 * "Failure modes", version skew).
 */
export function taskRowColumns(t: string): string {
  return TASK_COLUMN_NAMES.map((c) => `${t}.${c}`).join(', ');
}

/**
 * The second half of a move to history (migration 11, docs/contract.md#live-and-history): an INSERT
 * into `history` of the rows CTE `from` deleted from `task` (returning {@link taskRowColumns}), each column as it was
 * unless `set` gives an expression over `g` (the deleted row); the lease is cleared, `updated_at`
 * and `finished_at` are the statement's now. `extra` sets columns only `task_history` has (e.g.
 * `finished_by`, migration 13); left out, they are null. `join` follows `from … g` (the finish
 * hand-off's `cross join finish_handoff`, `./finish-handoff.ts`). In the same statement as the DELETE, so the row is in
 * exactly one table at every commit (PostgreSQL 17 §7.8.4: data-modifying statements in WITH).
 */
export function historyInsert(
  history: string,
  from: string,
  set: Readonly<Record<string, string>>,
  returning: string,
  extra: Readonly<Record<string, string>> = {},
  join = '',
): string {
  const all: Record<string, string> = { lease_owner: 'null', lease_until: 'null', updated_at: NOW, ...set };
  const extraNames = Object.keys(extra);
  return `insert into ${history} (${[...TASK_COLUMN_NAMES, ...extraNames].join(', ')}, finished_at)
  select ${[...TASK_COLUMN_NAMES.map((c) => all[c] ?? `g.${c}`), ...extraNames.map((c) => extra[c])].join(', ')}, ${NOW}
    from ${from} g${join}
  returning ${returning}`;
}


/** The migration number of the live/history split. */
export const HISTORY_MIGRATION_VERSION = 11;

/** Days of partitions `ensure_history_partitions` creates ahead of now (today included: today + 7 more). */
export const HISTORY_DAYS_AHEAD = 7;

/** The terminal states, each with its sub-table of `task_history`. */
export const HISTORY_STATES = Object.freeze([TaskState.DONE, TaskState.DEAD, TaskState.CANCELLED] as const);

/** The sub-table of `task_history` holding `state`, unquoted (`task_history_done`). */
export function historyStateTable(state: string): string {
  return `task_history_${state.toLowerCase()}`;
}

/**
 * Migration 11 — live and history apart. In this order, every step re-runnable:
 * 1. `effect` loses its foreign key to `task` (a DONE task's row leaves `task`); "one effect per
 *    task" stays the primary key `task_id`, enforced by the database as before.
 * 2. `task_history (like task, finished_at timestamptz not null)` partitioned as described above,
 *    with partitioned indexes on `(id)` (getTask, cancel's and complete's outcome reads, retry),
 *    `(kind, id)` (list by kind, DEAD counts of stats), `(finished_at)` (prune by cut-off) and
 *    `(id) where last_error is not null` (the list's `hasError` filter).
 * 3. The function `ensure_history_partitions(now, days)`: the day partitions of every state from
 *    `now`'s UTC day through `days` more (missing ones only, under an advisory lock). A day whose rows
 *    already sit in the DEFAULT partition (or that overlaps `_legacy`) is skipped: those rows stay
 *    where they are and retention deletes them by row.
 * 4. The `_legacy` partitions, then today's days, then the move: every DONE, CANCELLED and DEAD row
 *    of `task` is deleted and inserted into `task_history` in ONE statement, `finished_at` its
 *    `updated_at` (a terminal row's `updated_at` is its finish time, see migration 4). It holds the
 *    lock of a DELETE on those rows for as long as it copies them.
 * 5. `task_finished_idx` is dropped: `task` no longer holds a finished row.
 * The id sequence stays `task`'s identity: history keeps the ids it had, new tasks draw from it.
 */
export function historyMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const history = `${q}.task_history`;
  const states = HISTORY_STATES.map((state) => {
    const sub = `${q}.${quoteIdent(historyStateTable(state))}`;
    return `create table if not exists ${sub} partition of ${history} for values in (${literal(state)}) partition by range (finished_at);
create table if not exists ${q}.${quoteIdent(`${historyStateTable(state)}_default`)} partition of ${sub} default;`;
  }).join('\n');
  const cols = MIGRATION_11_COLUMN_NAMES.join(', ');
  return `alter table ${q}.effect drop constraint if exists effect_task_id_fkey;
create table if not exists ${history} (like ${task} including defaults, finished_at timestamptz not null) partition by list (state);
${states}
create index if not exists task_history_id_idx on ${history} (id);
create index if not exists task_history_kind_id_idx on ${history} (kind, id);
create index if not exists task_history_finished_idx on ${history} (finished_at);
create index if not exists task_history_error_idx on ${history} (id) where last_error is not null;
create or replace function ${q}.ensure_history_partitions(p_now timestamptz, p_days integer) returns integer
language plpgsql as $fn$
declare
  st text;
  d date;
  leaf text;
  made integer := 0;
begin
  perform pg_advisory_xact_lock(hashtextextended('postpone:history-partitions:' || ${literal(schema)}, 0));
  foreach st in array array[${HISTORY_STATES.map((s) => literal(s.toLowerCase())).join(', ')}] loop
    for i in 0 .. p_days loop
      d := (p_now at time zone 'UTC')::date + i;
      leaf := 'task_history_' || st || '_' || to_char(d, 'YYYYMMDD');
      if to_regclass(format('%I.%I', ${literal(schema)}, leaf)) is null then
        begin
          execute format('create table %I.%I partition of %I.%I for values from (%L) to (%L)', ${literal(schema)}, leaf, ${literal(schema)},
                         'task_history_' || st, d::timestamp at time zone 'UTC', (d + 1)::timestamp at time zone 'UTC');
          made := made + 1;
        exception when check_violation or invalid_object_definition then
          null; -- rows of that day are in the default partition, or the day overlaps _legacy: skip it
        end;
      end if;
    end loop;
  end loop;
  return made;
end
$fn$;
do $do$
declare
  st text;
begin
  foreach st in array array[${HISTORY_STATES.map((s) => literal(s.toLowerCase())).join(', ')}] loop
    if to_regclass(format('%I.%I', ${literal(schema)}, 'task_history_' || st || '_legacy')) is null then
      execute format('create table %I.%I partition of %I.%I for values from (minvalue) to (%L)', ${literal(schema)}, 'task_history_' || st || '_legacy',
                     ${literal(schema)}, 'task_history_' || st, date_trunc('day', now() at time zone 'UTC') at time zone 'UTC');
    end if;
  end loop;
end
$do$;
select ${q}.ensure_history_partitions(now(), ${HISTORY_DAYS_AHEAD});
with gone as (
  delete from ${task} t where t.state in (${HISTORY_STATES.map(literal).join(', ')}) returning t.*
)
insert into ${history} (${cols}, finished_at) select ${MIGRATION_11_COLUMN_NAMES.map((c) => `g.${c}`).join(', ')}, g.updated_at from gone g;
drop index if exists ${q}.task_finished_idx;`;
}

/** Row shape of {@link historyStatements}' `historyPartitions`. */
export interface HistoryPartitionRow {
  /** The leaf partition, unquoted. */
  name: string;
  /** DONE, DEAD or CANCELLED. */
  state: string;
  /** Its upper bound (exclusive) in epoch ms, or null for a DEFAULT partition. */
  upperms: number | null;
}

/** The history and retention statements of one schema. */
export function historyStatements(schema: string) {
  const q = quoteIdent(schema);
  const effect = `${q}.effect`;
  const subs = HISTORY_STATES.map((s) => `${literal(`${schema}.${historyStateTable(s)}`)}`);
  return Object.freeze({
    /** `$1` now, `$2` days ahead → `{ created }`: see migration 11's `ensure_history_partitions`. */
    ensurePartitions: `select ${q}.ensure_history_partitions(${NOW}, $2::int) as created`,

    /**
     * No parameters → {@link HistoryPartitionRow} rows: every leaf partition of `task_history` with
     * its state and upper bound, read from the catalog (`pg_inherits`, `pg_get_expr` of
     * `relpartbound`; PostgreSQL 17 §51.26, §9.27).
     */
    historyPartitions: `select c.relname::text as name, upper(substr(p.relname, ${'task_history_'.length + 1}))::text as state,
       floor(extract(epoch from (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz) * 1000)::float8 as upperms
  from pg_inherits i
  join pg_class c on c.oid = i.inhrelid
  join pg_class p on p.oid = i.inhparent
 where i.inhparent = any(array[${subs.map((s) => `to_regclass(${s})`).join(', ')}])
 order by c.relname`,

    /** No parameters. Gives up on a lock after 2 s (PostgreSQL 17 §19.11.1): a drop never queues behind a long transaction with every complete behind it. */
    retentionLockTimeout: `set local lock_timeout = '2s'`,

    /**
     * No parameters. The lock on a state's table that a DROP of its partition takes (ACCESS
     * EXCLUSIVE) queues every insert into that state behind it while it waits: it may wait only for
     * the instant in-flight finishing statements take, 200 ms, and is left for the next prune
     * otherwise. Below `deadlock_timeout` (1 s), so a reader that waits for the partition we hold
     * while holding the state's table is never made a deadlock victim: this statement gives up first.
     */
    parentLockTimeout: `set local lock_timeout = '200ms'`,

    /** No parameters: the advisory lock `ensure_history_partitions` takes, so makers of partitions go one at a time. */
    partitionsLock: `select pg_advisory_xact_lock(hashtextextended(${literal(`postpone:history-partitions:${schema}`)}, 0))`,

    /**
     * `$1` names (a JSON array of text) → `{ name, relkind, parent, lowerms, upperms }` for each name taken by a
     * relation of the schema: its kind, the table it is a partition of (null when none) and its
     * bounds in epoch ms (null for MINVALUE, a DEFAULT or no partition).
     */
    partitionCatalog: `select c.relname::text as name, c.relkind::text as relkind, p.relname::text as parent,
       floor(extract(epoch from (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz) * 1000)::float8 as lowerms,
       floor(extract(epoch from (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz) * 1000)::float8 as upperms
  from pg_class c
  left join pg_inherits i on i.inhrelid = c.oid
  left join pg_class p on p.oid = i.inhparent
 where c.relnamespace = to_regnamespace(${literal(schema)}) and c.relname in (select jsonb_array_elements_text($1::text::jsonb))`,

    /**
     * `state` → `{ day }` (UTC, `YYYY-MM-DD`): the days whose rows sit in the state's DEFAULT
     * partition, i.e. days that had no partition when their tasks finished. Reads the DEFAULT
     * partition, which holds only such rows (and retention deletes them by row).
     */
    defaultDays: (state: string) => `select to_char((finished_at at time zone 'UTC')::date, 'YYYY-MM-DD') as day
  from ${q}.${quoteIdent(`${historyStateTable(state)}_default`)} group by 1 order by 1`,

    /**
     * `state`, `leaf` unquoted, bounds (ISO) → the statements that make one day partition without
     * blocking the finishing statements: the table is created on its own, then ATTACHed, which
     * takes SHARE UPDATE EXCLUSIVE on the state's table (PostgreSQL 17 ALTER TABLE: ATTACH
     * PARTITION), not the ACCESS EXCLUSIVE of `create table … partition of`, so inserts go on; it
     * scans the new (empty) table and the DEFAULT partition.
     */
    createDay: (state: string, leaf: string, fromIso: string, toIso: string) => [
      `create table ${q}.${quoteIdent(leaf)} (like ${q}.task_history including defaults)`,
      `alter table ${q}.${quoteIdent(historyStateTable(state))} attach partition ${q}.${quoteIdent(leaf)} for values from (${literal(fromIso)}) to (${literal(toIso)})`,
    ],

    /** `leaf` unquoted → ACCESS EXCLUSIVE on that partition only (its state's table is not locked yet). */
    lockPartition: (leaf: string) => `lock table only ${q}.${quoteIdent(leaf)} in access exclusive mode`,

    /**
     * `leaf` unquoted → `{ rows, effects }`: deletes the legacy effect rows of the tasks in that
     * partition (only DONE tasks completed by code before migration 13 have one; `effect` is not partitioned)
     * and counts the partition's rows, just before {@link dropPartition} in the same transaction.
     */
    dropPartitionEffects: (leaf: string) => `with e as (
  delete from ${effect} e using ${q}.${quoteIdent(leaf)} h where e.task_id = h.id returning 1
)
select (select count(*) from ${q}.${quoteIdent(leaf)})::int as rows, (select count(*) from e)::int as effects`,

    /** `leaf` unquoted → `drop table` of the partition (ACCESS EXCLUSIVE on it and its parent, for the instant of the drop). */
    dropPartition: (leaf: string) => `drop table ${q}.${quoteIdent(leaf)}`,

    /**
     * `leaf` unquoted (a DEFAULT partition), `$1` cut-off (ISO) → `{ deleted, effectsdeleted }`: rows
     * of that partition finished before the cut-off, deleted by row with their legacy effect rows (before migration 13).
     */
    pruneDefault: (leaf: string) => `with doomed as (
  delete from ${q}.${quoteIdent(leaf)} h where h.finished_at < $1::timestamptz returning h.id
), effects as (
  delete from ${effect} e using doomed d where e.task_id = d.id returning 1
)
select (select count(*) from doomed)::int as deleted, (select count(*) from effects)::int as effectsdeleted`,
  });
}

export type HistoryStatements = ReturnType<typeof historyStatements>;
