/**
 * Every SQL statement of the PostgreSQL store, once, as text with `$1..$n` placeholders. Both
 * drivers (`pg`, `postgres`) bind the same text (River's "SQL exists once").
 *
 * Conventions, so both drivers behave the same:
 * - Parameters are primitives (text, number, boolean, null) with an explicit cast in the SQL. JSON
 *   travels as text and is cast `$n::text::jsonb`: the `::text` pins the parameter type, so
 *   postgres.js does not JSON-encode the text a second time.
 * - Time enters at the SQL boundary: `$1` of every time-dependent statement is `now` as ISO text,
 *   or null for the database clock. Due times and lease checks use `coalesce($1, now())` — `now()` is
 *   STABLE, so the planner can use it as an index condition (PostgreSQL 17 §38.7), and in autocommit
 *   it is the statement's start (§9.9.5). Lease deadlines use `coalesce($1, clock_timestamp())`, the
 *   actual time of the write (§9.9.5), so a slow statement does not shorten the lease.
 * - Results come back in driver-neutral shapes: ids as text, times as epoch milliseconds (`float8`,
 *   floored), JSON as text, and column aliases without underscores (so a postgres.js `transform`
 *   such as `postgres.camel` leaves them alone).
 */
import { LEASE_EXPIRED_ERROR, TASK_STATES, TaskState } from '@postpone/core';
import type { TaskNoticeOp } from './notice.js';
import { FINISH_HANDOFF_JOIN, FINISH_HANDOFF_JOIN_RAW, finishFlags, finishFlagsRaw, finishHandoffCte, finishHandoffCteRaw, handoffOnly } from './finish-handoff.js';
import { historyInsert, taskRowColumns } from './history-sql.js';
import { literal, quoteIdent } from './quote.js';
import { keyLockKey, keyLocksSql } from './key-lock-sql.js';
import { reclaimLockKey } from './reclaim-lock-sql.js';

export { literal, quoteIdent };

/** Epoch milliseconds of a `timestamptz` expression, floored, as `float8` (a JS number in both drivers). */
export function ms(expr: string): string {
  return `floor(extract(epoch from ${expr}) * 1000)::float8`;
}

/** `$n` milliseconds as an interval; `float8` keeps delays above 2³¹−1 ms exact (integers below 2⁵³). */
export function millis(param: string): string {
  return `(${param}::float8 * interval '1 millisecond')`;
}

/** `$1` (the store's clock, or null) else the transaction's `now()`. */
export const NOW = 'coalesce($1::timestamptz, now())';
export const CLOCK = 'coalesce($1::timestamptz, clock_timestamp())';

const S = literal(TaskState.SCHEDULED);
const C = literal(TaskState.CLAIMED);
const DONE = literal(TaskState.DONE);
const CANCELLED = literal(TaskState.CANCELLED);
const DEAD = literal(TaskState.DEAD);
/** In `taskInsertMany`'s `do update`: this input replaces the SCHEDULED row holding its key. */
const REPLACE = `$4::text = 'replace' and t.state = ${S}`;

/** The `state` CHECK list, generated from core `TASK_STATES`. */
export const STATE_CHECK_LIST = TASK_STATES.map(literal).join(', ');

/** Columns of a full task row, aliased to driver-neutral names (see {@link TaskRow}). */
export function taskColumns(t: string): string {
  return [
    `${t}.id::text as id`,
    `${t}.kind as kind`,
    `${t}.key as key`,
    `${t}.queue as queue`,
    `${t}.priority::int as priority`,
    `${t}.payload::text as payload`,
    `${t}.state as state`,
    `${ms(`${t}.due_at`)} as dueatms`,
    `${t}.attempt as attempt`,
    `${t}.failures as failures`,
    `${t}.max_attempts as maxattempts`,
    `${t}.lease_owner as leaseowner`,
    `${ms(`${t}.lease_until`)} as leaseuntilms`,
    `${t}.cancel_requested as cancelrequested`,
    `${t}.result::text as result`,
    `${t}.last_error as lasterror`,
    `${ms(`${t}.created_at`)} as createdatms`,
    `${ms(`${t}.updated_at`)} as updatedatms`,
    `${t}.trace_context::text as tracecontext`,
    `${t}.retry::text as retry`,
    `${t}.progress::text as progress`,
  ].join(', ');
}

/**
 * Share of the cluster's NOTIFY queue in use (0–1) at or above which the store's statements leave
 * their notices out (README "Failure modes", evidence `notify_queue_full`).
 */
export const NOTICE_QUEUE_LIMIT = 0.5;

/**
 * A `pg_notify` call announcing row `t` on `channel` (see `./notice.ts`):
 * `{"op":"scheduled"|"cancelled","id":"42","dueAtMs":…}`. Compared `is null` so it fits in a select list.
 *
 * Left out (null) while the NOTIFY queue is at least {@link NOTICE_QUEUE_LIMIT} full: PostgreSQL has
 * one queue per cluster, a listening session that stops reading pins its tail, and once it is full
 * every transaction that notifies fails at commit with 54000 (PostgreSQL 17 NOTIFY, "too many
 * notifications in the NOTIFY queue"). Notices are hints — workers also poll — so a write never
 * fails for want of one. The usage is read once per statement (an uncorrelated scalar subquery is an
 * InitPlan) and only where a notice would be sent; `pg_notification_queue_usage()` takes a shared
 * lock on the queue's head and tail, no I/O.
 */
export function notice(op: TaskNoticeOp, channel: string, t: string): string {
  const call = `pg_notify(${channel}, json_build_object('op', '${op}', 'id', ${t}.id::text, 'dueAtMs', ${ms(`${t}.due_at`)})::text) is null`;
  return `case when (select pg_notification_queue_usage()) < ${NOTICE_QUEUE_LIMIT} then ${call} end`;
}

/**
 * `with recursive` CTEs `kinds(kind)` and `levels(kind, priority)`: the (kind, priority) groups of
 * SCHEDULED tasks in queue `queue` that a claim or peek walks (migration 10, `task_claim_idx` on
 * `(queue, kind, priority, due_at, id)`). `kinds` is the JSON array `kindsJson`, or when it is null
 * every kind of the queue; both that list and the priorities of each kind come from a loose index
 * scan — each step a `limit 1` or `max` that the planner answers with a single index descent
 * (PostgreSQL 17 §7.8.2 recursive queries; §9.21 on `max` using an index) — so the walk costs one descent per level and
 * never reads a row of history, another queue or another kind.
 */
export function levelsCte(task: string, queue: string, kindsJson: string, pause: string | null): string {
  const live = `s.state = ${S} and s.queue = ${queue}::text`;
  // `order by s.queue, s.kind` rather than `min(kind)`: only task_claim_idx yields that order, so the
  // step is one descent of it, never a walk of another index filtering on queue.
  return `with recursive every_kind(kind) as (
  select (select s.kind from ${task} s where ${live} order by s.queue, s.kind limit 1) where ${kindsJson}::text is null
  union all
  select (select s.kind from ${task} s where ${live} and s.kind > e.kind order by s.queue, s.kind limit 1) from every_kind e where e.kind is not null
), kinds(kind) as (
  select k.kind from jsonb_array_elements_text(${kindsJson}::text::jsonb) k(kind)
  union all
  select e.kind from every_kind e where e.kind is not null
), levels(kind, priority) as (
  select k.kind, (select max(s.priority) from ${task} s where ${live} and s.kind = k.kind) from kinds k${pause === null ? '' : `\n${pausedLevels(pause, queue)}`}
  union all
  select l.kind, (select max(s.priority) from ${task} s where ${live} and s.kind = l.kind and s.priority < l.priority)
    from levels l where l.priority is not null
)`;
}

/**
 * The predicate that keeps paused work out of a claim or peek (migration 15,
 * docs/contract.md#pause-and-resume), on the base of `levels`: no level of kind `k.kind` is walked
 * when its queue or that kind has a row in `pause`. The queue's probe is uncorrelated, so it runs once
 * (an InitPlan) and a paused queue is a One-Time Filter that walks nothing; the kind's is one probe of
 * the primary key `(scope, name)` per kind. The table holds one row per pause (a handful), so with
 * nothing paused the two probes read an empty index (docs/contract.md#pause-and-resume, the plans).
 */
function pausedLevels(pause: string, queue: string): string {
  return ` where not exists (select 1 from ${pause} p where p.scope = 'queue' and p.name = ${queue}::text)
   and not exists (select 1 from ${pause} p where p.scope = 'kind' and p.name = k.kind)`;
}

/**
 * Whether nothing of a peek's selection can be claimed: the queue paused, or kinds given and every one
 * paused (core `PeekResult.paused`). False without the pause table (a schema before migration 15).
 */
function selectionPaused(pause: string | null, queue: string, kindsJson: string): string {
  if (pause === null) return 'false';
  return `(exists (select 1 from ${pause} p where p.scope = 'queue' and p.name = ${queue}::text)
       or (${kindsJson}::text is not null and not exists (
             select 1 from jsonb_array_elements_text(${kindsJson}::text::jsonb) k(kind)
              where not exists (select 1 from ${pause} p where p.scope = 'kind' and p.name = k.kind))))`;
}

/**
 * One (kind, priority) level's due rows, in claim order, locked SKIP LOCKED, at most `limit` of them:
 * the range of `task_claim_idx` that both claims walk per level (`taskClaim`, `taskClaimCapped`).
 * `pad` indents the continuation lines to where the caller places it.
 */
export function levelDueRows(task: string, limit: string, pad: string): string {
  return [
    'select s.id, s.priority, s.due_at',
    `  from ${task} s`,
    ` where s.state = ${S} and s.queue = $5::text and s.kind = l.kind and s.priority = l.priority`,
    `   and s.due_at <= ${NOW}`,
    ' order by s.due_at, s.id',
    ' for update skip locked',
    ` limit ${limit}`,
  ].join(`\n${pad}`);
}

/**
 * The fence of a batch statement over many attempts (`taskCompleteManyFenced`, `taskExtendMany` in
 * `./renew-sql.ts`): row `t` is one of the `locked` ids, matched to its `input` item `i`, and still
 * holds that item's attempt, CLAIMED, with no cancel requested — re-checked on the newest row
 * version (PostgreSQL 17 §13.2.1). `pad` indents the continuation lines.
 */
export function batchFence(t: string, pad: string): string {
  return [
    `${t}.id = any(array(select l.id from locked l))`,
    `and i.id = ${t}.id`,
    `and ${t}.attempt = i.attempt`,
    `and ${t}.state = ${C}`,
    `and not ${t}.cancel_requested`,
  ].join(`\n${pad}`);
}

/**
 * The `picked` CTE of a claim with rooms per kind (`taskClaimCapped`, `taskClaimLimited` of
 * `./rate-limit-sql.ts`): walks the levels as `taskClaim`, each level of a kind with a row in the CTE
 * `room(kind, room)` locking at most `least($4, room)` rows; of the levels' rows a kind with a room
 * keeps its first `room` in claim order (`row_number()` per kind), before the merge keeps the first `$4`.
 */
export function cappedPick(task: string): string {
  return `picked as materialized (
  select x.id
    from (select c.id, c.priority, c.due_at, r.room,
                 row_number() over (partition by l.kind order by c.priority desc, c.due_at, c.id) as n
            from levels l
            left join room r on r.kind = l.kind
           cross join lateral (
                 ${levelDueRows(task, 'least($4::int, coalesce(r.room, $4::int))', '                 ')}) c
           where l.priority is not null) x
   where x.room is null or x.n <= x.room
   order by x.priority desc, x.due_at, x.id
   limit $4::int
)`;
}

/** The UPDATE of a claim: the `picked` ids, re-checked SCHEDULED, to CLAIMED (see `taskClaim`). */
export function claimUpdate(task: string): string {
  return `update ${task} t
   set state = ${C},
       attempt = t.attempt + 1,
       lease_owner = $2::text,
       lease_until = ${CLOCK} + ${millis('$3')},
       updated_at = ${NOW}
 where t.id = any(array(select p.id from picked p))
   and t.state = ${S}
returning t.id::text as id, t.kind as kind, t.payload::text as payload, t.attempt as attempt,
          t.failures as failures, t.max_attempts as maxattempts, ${ms('t.due_at')} as dueatms, ${ms('t.lease_until')} as leaseuntilms,
          ${ms(NOW)} as claimedatms, t.trace_context::text as tracecontext, t.retry::text as retry, t.priority::int as priority`;
}

/** Row shape of `taskColumns` (a full task row). */
export interface TaskRow {
  id: string;
  kind: string;
  /** The dedup key, or null (migration 6). */
  key: string | null;
  /** Queue and priority (migration 10). */
  queue: string;
  priority: number;
  payload: string;
  state: string;
  dueatms: number;
  attempt: number;
  failures: number;
  maxattempts: number;
  leaseowner: string | null;
  leaseuntilms: number | null;
  cancelrequested: boolean;
  result: string | null;
  lasterror: string | null;
  createdatms: number;
  updatedatms: number;
  /** `{"traceparent":…,"tracestate":…}` as text, or null (migration 5). */
  tracecontext: string | null;
  /** The task's own retry policy (core `RetryPolicy`) as JSON text, or null (migration 8). */
  retry: string | null;
  /** The last progress report as JSON text, or null when none (migration 18). */
  progress: string | null;
}

/**
 * The statements of one schema. Each entry documents its parameters; `$1` is always `now` (ISO
 * text or null) when the statement depends on time.
 *
 * @param schema the schema name, unquoted (it is quoted here)
 */
export function statements(schema: string, options: { readonly pause?: boolean } = {}) {
  const q = quoteIdent(schema);
  // Migration 15's table; a store on an older schema builds its statements without it (`pause: false`).
  const pause = options.pause === false ? null : `${q}.pause`;
  const task = `${q}.task`;
  const migration = `${q}.migration`;
  const history = `${q}.task_history`;
  /**
   * The CTEs of every fenced way out of CLAIMED by its holder (fail, release, snooze), ending in
   * `left_claim(id, state, due_at)`: `fenced` locks the row while (id `$2`, attempt `$3`, CLAIMED)
   * holds (FOR UPDATE re-checks the newest row version, PostgreSQL 17 §13.2.1) and computes its
   * `next` state; SCHEDULED stays in `task` (`live` set first, then the lease cleared), a terminal
   * state moves to `task_history` (`finished` overrides, see {@link historyInsert}) in the same statement.
   */
  const leaveClaim = (next: string, live: string, finished: Readonly<Record<string, string>>): string => `fenced as materialized (
  select s.id, ${next} as next
    from ${task} s
   where s.id = $2::bigint and s.attempt = $3::int and s.state = ${C}
     for update
), stay as (
  update ${task} t
     set ${live},
         state = ${S},
         lease_owner = null,
         lease_until = null,
         updated_at = ${NOW}
    from fenced f
   where t.id = f.id and f.next = ${S} and t.attempt = $3::int and t.state = ${C}
  returning t.id, t.state, t.due_at
), gone as (
  delete from ${task} t using fenced f
   where t.id = f.id and f.next <> ${S} and t.attempt = $3::int and t.state = ${C}
  returning ${taskRowColumns('t')}, f.next as next_state${finishFlags('t')}
)${finishHandoffCte(schema, 'gone')}, moved as (
  ${historyInsert(history, 'gone', { state: 'g.next_state', ...finished }, 'id, state, due_at', {}, FINISH_HANDOFF_JOIN)}
), left_claim as (
  select * from stay union all select * from moved
)`;

  /** `taskInsertMany`'s text; with `limitKey`, also the column `limit_key` (`taskInsertManyKeyed`). */
  const insertMany = (limitKey: boolean): string => {
    const k = (text: string): string => (limitKey ? text : '');
    return `with input as (
  select x.kind, x.key, x.payload, x.delay_ms, x.run_at, x.max_attempts, x.trace_context, x.retry, x.queue, x.priority,${k(' x.limit_key,')} x.ord,
         nextval(pg_get_serial_sequence(${literal(task)}, 'id')::regclass) as new_id
    from rows from (jsonb_to_recordset($2::text::jsonb)
           as (kind text, key text, payload jsonb, "delayMs" float8, "runAt" timestamptz, "maxAttempts" integer, "traceContext" jsonb, retry jsonb,
               queue text, priority smallint${k(', "limitKey" text')}))
         with ordinality as x(kind, key, payload, delay_ms, run_at, max_attempts, trace_context, retry, queue, priority,${k(' limit_key,')} ord)
   order by x.ord
), keylocks as materialized (
  select pg_advisory_xact_lock(l.k) as locked
    from (select distinct ${keyLockKey(schema, 'i.kind', 'i.key')} as k from input i where i.key is not null) l
   order by l.k
), holders as materialized (
  select s.id
    from ${task} s
   where (select count(*) from keylocks) >= 0
     and (s.kind, s.key) in (select i.kind, i.key from input i where i.key is not null)
     and s.key is not null
     and s.state in (${S}, ${C})
   order by s.id
   for update
), upserted as (
  insert into ${task} as t (id, kind, key, payload, state, due_at, attempt, max_attempts, cancel_requested, created_at, updated_at, trace_context, retry, queue, priority${k(', limit_key')})
  overriding system value
  select new_id, kind, key, coalesce(payload, 'null'::jsonb), ${S}, coalesce(run_at, ${NOW} + ${millis('delay_ms')}), 0, max_attempts, false, ${NOW}, ${NOW},
         nullif(trace_context, 'null'::jsonb), nullif(retry, 'null'::jsonb), queue, priority${k(', limit_key')}
    from input
   where (select count(*) from holders) >= 0
   order by kind, key, ord
  on conflict (kind, key) where state in (${S}, ${C}) and key is not null do update
     set payload = case when ${REPLACE} then excluded.payload else t.payload end,
         due_at = case when ${REPLACE} then excluded.due_at else t.due_at end,
         updated_at = case when ${REPLACE} then excluded.updated_at else t.updated_at end
  returning t.id, t.kind, t.key, t.state, t.due_at
), matched as (
  select i.ord, u.id, u.due_at, u.id = i.new_id as created, u.id <> i.new_id and $4::text = 'replace' and u.state = ${S} as replaced
    from input i
    join upserted u on (u.kind, coalesce('k:' || u.key, 'i:' || u.id::text)) = (i.kind, coalesce('k:' || i.key, 'i:' || i.new_id::text))
)
select m.id::text as id, ${ms('m.due_at')} as dueatms, m.created, m.replaced,
       case when (m.created or m.replaced) and $3::text is not null then ${notice('scheduled', '$3::text', 'm')} end as notified
  from matched m
 order by m.ord`;
  };
  return Object.freeze({
    // ---- clock -----------------------------------------------------------------------------------
    /** `$1` now → `{ nowms }`: the store's clock. */
    clockNow: `select ${ms(NOW)} as nowms`,

    // ---- migrations ------------------------------------------------------------------------------
    /**
     * `$1` schema name. Serialises migrations of one schema across processes: a transaction-level
     * advisory lock, released at commit or rollback (PostgreSQL 17 §9.28.10).
     */
    migrationLock: `select pg_advisory_xact_lock(hashtextextended('postpone:migrate:' || $1::text, 0))`,
    /** No parameters. Silences NOTICEs ("already exists, skipping") for the rest of the transaction (PostgreSQL 17 §19.8.2). */
    migrationQuiet: `set local client_min_messages to warning`,
    /** No parameters. */
    schemaCreate: `create schema if not exists ${q}`,
    /** No parameters. */
    migrationTableCreate: `create table if not exists ${migration} (
  version integer primary key,
  name text not null,
  applied_at timestamptz not null default now(),
  min_reader integer
)`,
    /**
     * No parameters. `min_reader` (the oldest code a migration allows, `Migration.minReader`) on a
     * table created before it; nullable, so older code that inserts without it still can. The ALTER
     * (an ACCESS EXCLUSIVE lock on `migration` until commit) runs only when the column is missing.
     */
    migrationTableUpgrade: `do $upgrade$ begin
  if not exists (select 1 from pg_attribute where attrelid = ${literal(migration)}::regclass and attname = 'min_reader' and not attisdropped) then
    alter table ${migration} add column min_reader integer;
  end if;
end $upgrade$`,
    /** No parameters → `{ version }` rows. */
    migrationVersions: `select version from ${migration} order by version`,
    /** `$1` version, `$2` name. */
    migrationInsert: `insert into ${migration} (version, name) values ($1::int, $2::text)`,
    /** `$1` version, `$2` its `minReader`: recorded for a migration that declares one. */
    migrationMinReader: `update ${migration} set min_reader = $2::int where version = $1::int`,
    /**
     * No parameters → one `{ version, minreader }` row: the newest migration applied and the highest
     * `min_reader` any applied migration declares (null when none does, or the table predates the
     * column: read through `to_jsonb` of the row, so the statement fits either shape). Sent without
     * parameters, hence never as a prepared statement. 42P01 / 3F000 when the schema was never migrated.
     */
    schemaVersion: `select max(m.version)::int as version, max((to_jsonb(m) ->> 'min_reader')::int) as minreader from ${migration} m`,

    // ---- task: schedule ------------------------------------------------------------------------------
    /**
     * `$1` now, `$2` tasks as JSON text (`[{kind, key, payload, delayMs, runAt, maxAttempts, traceContext, retry, queue, priority}]`,
     * `runAt` ISO text or null, `key`, `traceContext` and `retry` null for none; no two with one kind and key),
     * `$3` notify channel (null: no NOTIFY, the caller announces after commit), `$4` `'keep'` or `'replace'` → `{ id, dueatms, created, replaced }` rows,
     * one per input, in input order (new ids are drawn in input order).
     *
     * One statement for the whole batch: all rows or none. A keyed input whose (kind, key) a live task
     * holds meets `task_key_idx` (docs/contract.md#dedup-keys): the index decides the race between
     * schedulers — a concurrent insert of the same key waits for the other transaction, then conflicts
     * or inserts (PostgreSQL 17 INSERT, "ON CONFLICT Clause"). `do update` locks the holding row and
     * returns it even when this statement's snapshot cannot see it (a `do nothing` would return
     * nothing, and a read after it might miss a row committed meanwhile). The update rewrites payload
     * and due time only for `'replace'` of a SCHEDULED row; otherwise it writes the same values.
     * `created` compares the returned id with the one drawn for the input (`overriding system
     * value`): a conflict returns the holder's id and wastes the drawn one, as a rolled-back insert
     * does. New and replaced rows send a NOTIFY, delivered only at commit (PostgreSQL 17 NOTIFY).
     *
     * Lock order (README "Failure modes", `test/lock-order.test.ts`): every multi-row statement
     * that waits for row locks takes them in id order (`completeMany`, `extendMany`), so two of them
     * never wait on each other in a cycle. Here the `holders` pick first locks, in id order, the live
     * rows holding this batch's keys (`for update`: at least the lock `do update` takes, so no upgrade
     * follows); it inserts in (kind, key) order. Before the pick, `keylocks` takes the advisory
     * lock of each key (`./key-lock-sql.ts`), so no other scheduler commits a new holder of these
     * keys while this one runs. A holder committed after this statement's snapshot would still be
     * locked by `do update` in key order: so a batch with two keys or more first runs
     * `taskKeyLocks` as a statement of its own in the same transaction (the store does), and this
     * statement's snapshot, taken after those locks, sees every holder (0 deadlocks, evidence
     * `batch_deadlock`). For one key the in-statement lock is enough: the insert then waits for or
     * locks one row at most. `(select count(*) from keylocks) >= 0` and `(select count(*) from
     * holders) >= 0` make the pick and the insert read the CTE before them: a plain SELECT in WITH
     * runs only when something reads it (PostgreSQL 17 §7.8.4).
     */
    taskInsertMany: insertMany(false),
    /**
     * `taskInsertMany` with a `limitKey` per input (text or null, docs/contract.md#per-key-concurrency)
     * written to `limit_key` of the rows it creates, in the same statement: a keyed schedule is as
     * atomic as any other. Used only for a batch with a limit key, so an unkeyed schedule sends
     * `taskInsertMany`'s text unchanged (which runs on a schema before migration 19 too). A holder
     * matched by `on conflict` keeps its own limit key.
     */
    taskInsertManyKeyed: insertMany(true),
    /** See `keyLocksSql` in `./key-lock-sql.ts`: `$1` the batch's JSON text → the key locks, taken in order before `taskInsertMany` in its transaction. */
    taskKeyLocks: keyLocksSql(schema),
    /**
     * No parameters. Before a schedule or cancel through a caller's `tx` that the driver cannot vouch for
     * (an `SqlExecutor`, a `pg` client not known to be in a transaction): fails with 25P01 outside a
     * transaction block (PostgreSQL 17 LOCK: "can only be used in transaction blocks"), so an
     * autocommitting connection is refused before anything is written. ACCESS SHARE conflicts only
     * with ACCESS EXCLUSIVE, and the insert or update that follows takes the stronger ROW EXCLUSIVE
     * on the same table anyway; no savepoint, no subtransaction, nothing to release.
     */
    txCheck: `lock table only ${task} in access share mode`,
    /** No parameters. Around a `'fail'` schedule in the caller's transaction, so a conflict undoes only the schedule (PostgreSQL 17 SAVEPOINT). */
    scheduleSavepoint: 'savepoint postpone_schedule',
    /** No parameters. */
    scheduleRollbackToSavepoint: 'rollback to savepoint postpone_schedule',
    /** No parameters. */
    scheduleReleaseSavepoint: 'release savepoint postpone_schedule',

    // ---- task: claim -------------------------------------------------------------------------------
    /**
     * `$1` now, `$2` owner, `$3` lease ms, `$4` limit, `$5` queue, `$6` kinds as a JSON array text (or
     * null for every kind of the queue) → claimed rows `{ id, kind, payload, attempt,
     * failures, maxattempts, dueatms, leaseuntilms, claimedatms, tracecontext, retry, priority }` (`tracecontext`
     * and `retry` null unless the task was scheduled with one). `attempt` grows at every claim
     * (the fencing token); `failures` is left alone (core `transition('claim')`).
     *
     * The seed's atomic claim. The picking SELECT takes due rows with FOR UPDATE SKIP LOCKED, so
     * concurrent claimers skip each other's rows instead of waiting (PostgreSQL 17 SELECT, "The
     * Locking Clause"); its `order by due_at` is best effort (same page: with a locking clause rows may
     * come back out of order); ties go by id, so a single claimer takes tasks in (due_at, id) order
     * like the in-memory store. The outer `t.state = 'SCHEDULED'` is the second guard: under READ
     * COMMITTED an UPDATE re-evaluates its WHERE on the newest row version (§13.2.1), so a row another
     * transaction moved away is not claimed twice. `due_at <= coalesce($1, now())` uses the partial
     * index `task_due_idx` as an Index Cond (`now()` is STABLE, §38.7; the index, §11.8).
     *
     * Unlike the seed's `where t.id in (select … limit n)`, the pick is a MATERIALIZED CTE, evaluated
     * exactly once (§7.8.3): as an IN-subquery the planner may choose a nested-loop semi join that
     * re-runs the locking subquery per outer row, and each re-run skips the rows this statement already
     * updated and locks further ones, so more than `limit` rows get updated (observed on PostgreSQL 17
     * with reclaim: limit 2, three rows). The UPDATE finds the picked rows through
     * `t.id = any(array(select …))`, an InitPlan run once whose array the primary key resolves: joining
     * the CTE instead let the planner pick a Hash Join that scanned every waiting task through
     * `task_due_idx` once the table held a million rows (seen in apps/bench).
     *
     * Queues, kinds and priorities (migration 10, docs/contract.md#queues, #priorities): the order is
     * `priority desc, due_at, id`, which no single range of `task_claim_idx` yields when priorities
     * differ (a plain scan in that order would read every not-yet-due row of a higher priority before
     * a due one of a lower). So the pick walks the index per (kind, priority) level of
     * `levelsCte`: for each, a nested-loop lateral range scan `queue = $5 and kind = … and
     * priority = … and due_at <= now` in `(due_at, id)` order that stops after `$4` rows — every
     * condition an Index Cond, so no row is read and then thrown away — with FOR UPDATE SKIP LOCKED
     * in the level, so concurrent claimers still take disjoint rows; the levels' rows are then
     * merged by `priority desc, due_at, id` and the first `$4` kept. Rows a level locked beyond
     * those (at most `$4` per level) are only locked, never written, and free again at the
     * statement's commit. Cost: one descent per level plus at most `$4` rows per level. Locking in
     * each level rather than after the merge is deliberate: a merge of unlocked candidates, locked
     * last, would hand two concurrent claimers the same first rows, and the second would come back
     * short while due rows wait further along the index (its SKIP LOCKED could skip only within the
     * candidates).
     *
     * Paused queues and kinds (migration 15, docs/contract.md#pause-and-resume): `pausedLevels` keeps
     * the levels of a paused kind, or every level of a paused queue, out of the walk, so their tasks
     * are not read, locked or claimed. The statement's snapshot decides: a pause committed before the
     * claim started holds. Built without it (`statements(schema, { pause: false })`) for a schema
     * before migration 14.
     */
    taskClaim: `${levelsCte(task, '$5', '$6', pause)}, picked as materialized (
  select c.id
    from levels l
   cross join lateral (
         ${levelDueRows(task, '$4::int', '         ')}) c
   where l.priority is not null
   order by c.priority desc, c.due_at, c.id
   limit $4::int
)
${claimUpdate(task)}`,

    /**
     * `$1` schema name, `$2` the capped kinds this claim may take, as a JSON array text SORTED by the
     * caller → one row per kind. Per-kind concurrency caps (docs/contract.md#kind-concurrency): the
     * first statement of a capped claim's transaction takes a transaction-level advisory lock per
     * capped kind (PostgreSQL 17 §9.28.10), in the array's order — every capped claimer sorts the same
     * way, so two claimers never wait on each other in a cycle. A second capped claimer of a kind
     * waits here until the first commits; under READ COMMITTED its next statement takes a new
     * snapshot (§13.2.1), which sees the first one's claims, so the count of {@link taskClaimCapped}
     * cannot race. Nothing else raises the CLAIMED count of a kind, so nothing else takes this lock.
     */
    kindCapLock: `select pg_advisory_xact_lock(hashtextextended('postpone:kind-cap:' || $1::text || ':' || k.kind, 0))
  from jsonb_array_elements_text($2::text::jsonb) with ordinality as k(kind, ord)
 order by k.ord`,

    /**
     * `$1`..`$6` as {@link taskClaim}, `$7` the caps `{ [kind]: cap }` as JSON object text → the rows
     * of {@link taskClaim}. Run after {@link kindCapLock} on the same transaction. A capped kind's
     * room is its cap less its CLAIMED tasks in every queue (read through the partial index
     * `task_claimed_idx`, at most the fleet's concurrency rows), never below 0; each level of a
     * capped kind locks at most `least(limit, room)` rows, and of the levels' rows a capped kind keeps
     * its first `room` in claim order (`row_number()` per kind), before the merge keeps the first
     * `limit`. Uncapped kinds are walked exactly as in {@link taskClaim}.
     */
    taskClaimCapped: `${levelsCte(task, '$5', '$6', pause)}, room as materialized (
  select c.key as kind,
         greatest(0, c.value::int - (select count(*) from ${task} s where s.state = ${C} and s.kind = c.key))::int as room
    from jsonb_each_text($7::text::jsonb) c
), ${cappedPick(task)}
${claimUpdate(task)}`,

    /**
     * `$1` now, `$2` id, `$3` attempt, `$4` lease ms → one `{ id }` row when renewed.
     * Guard = core `transition('extend')`: CLAIMED, same attempt, not cancel-requested, lease not yet
     * expired (`lease_until > now`). Only `lease_until` changes — no indexed column, not even
     * `updated_at` — so the renewal can be a HOT update (migration 7, PostgreSQL 17 §66.7).
     */
    taskExtend: `update ${task}
   set lease_until = ${CLOCK} + ${millis('$4')}
 where id = $2::bigint
   and attempt = $3::int
   and state = ${C}
   and not cancel_requested
   and lease_until > ${NOW}
returning id::text as id`,

    // ---- task: complete (one transaction) ---------------------------------------------------------
    /**
     * `$1` now, `$2` id, `$3` attempt, `$4` result JSON text, `$5` worker (the complete's `owner`) →
     * one `{ id }` row when it moved the task to DONE. The fence: same attempt, CLAIMED, not
     * cancel-requested (docs/contract.md#promise-3). `last_error` is cleared (core
     * `transition('complete')`): a DONE task has no error. The history row keeps `$5` in
     * `finished_by` (migration 13); no effect row: the completion is this one statement.
     */
    taskCompleteFenced: `with gone as (
  delete from ${task} t
   where t.id = $2::bigint
     and t.attempt = $3::int
     and t.state = ${C}
     and not t.cancel_requested
  returning ${taskRowColumns('t')}${finishFlags('t')}
)${finishHandoffCte(schema, 'gone')}
${historyInsert(history, 'gone', { state: DONE, result: '$4::text::jsonb', last_error: 'null' }, 'id::text as id', { finished_by: '$5::text' }, FINISH_HANDOFF_JOIN)}`,

    /**
     * `$1` now, `$2` items as JSON text (`[{id, attempt, owner, result}]`, ids as decimal text, no id
     * twice) → `{ ord }` rows: the 1-based input positions whose task this statement moved to DONE.
     *
     * The fenced complete of {@link taskCompleteFenced} for a whole batch, each history row keeping
     * its item's `owner` in `finished_by`, in ONE statement (all commit together). Rows are found by `id = any(array(...))`,
     * which pins primary-key lookups whatever the table size (a join with the recordset may become a
     * Hash Join over a scan of `task`). The `locked` pick takes the row locks in id
     * order (with ORDER BY, FOR UPDATE locks rows as the sort returns them, PostgreSQL 17 SELECT "The
     * Locking Clause"), so two concurrent batches never wait on each other in a cycle; under READ
     * COMMITTED a row changed meanwhile is re-checked on its newest version (§13.2.1) and skipped when
     * the fence no longer holds. The data-modifying CTEs see the same snapshot and the history
     * INSERT reads only the rows the DELETE returned (§7.8.4): the rows move to `task_history` in the same
     * statement (migration 11, `historyInsert`). Items it missed are resolved one by one, as
     * complete does after a miss.
     */
    taskCompleteManyFenced: `with input as (
  select x.id, x.attempt, x.owner, coalesce(x.result, 'null'::jsonb) as result, x.ord
    from rows from (jsonb_to_recordset($2::text::jsonb) as (id bigint, attempt integer, owner text, result jsonb))
         with ordinality as x(id, attempt, owner, result, ord)
), locked as materialized (
  select s.id
    from ${task} s
   where s.id = any(array(select i.id from input i))
     and s.state = ${C}
     and not s.cancel_requested
   order by s.id
   for update
), done as (
  delete from ${task} t
   using input i
   where ${batchFence('t', '     ')}
  returning ${taskRowColumns('t')}, i.result as new_result, i.owner as owner, i.ord as ord${finishFlags('t')}
)${finishHandoffCte(schema, 'done')}, moved as (
  ${historyInsert(history, 'done', { state: DONE, result: 'g.new_result', last_error: 'null' }, 'id', { finished_by: 'g.owner' }, FINISH_HANDOFF_JOIN)}
)
select d.ord::int as ord from done d`,

    // ---- task: complete, DONE not kept (docs/contract.md#done-not-kept) ---------------------------
    /**
     * `$1` id, `$2` attempt → one `{ id }` row when it finished the task: the fenced complete of
     * {@link taskCompleteFenced} for `keep: false` — the DELETE of the live row alone, no history row. The fence is the same (same attempt, CLAIMED, not cancel-requested, re-checked
     * on the newest row version under READ COMMITTED, PostgreSQL 17 §13.2.1): only the current
     * attempt's holder deletes the row, once, so at most one complete per task commits. Not
     * time-dependent: no `$1` now.
     */
    taskCompleteDrop: `${handoffOnly('with gone as (\n')}delete from ${task} t
 where t.id = $1::bigint
   and t.attempt = $2::int
   and t.state = ${C}
   and not t.cancel_requested
returning t.id::text as id${handoffOnly(`${finishFlagsRaw('t')}\n)${finishHandoffCteRaw(schema, 'gone')}\nselect g.id from gone g${FINISH_HANDOFF_JOIN_RAW}`)}`,

    /**
     * `$1` items as JSON text (`[{id, attempt, keep}]`, ids as decimal text, no id twice) → `{ ord }`
     * rows: the 1-based input positions with `keep` false whose task this statement finished (deleted).
     *
     * {@link taskCompleteDrop} for a batch, in ONE statement. The `locked` pick takes the row locks of
     * EVERY item, kept or not, in id order (as {@link taskCompleteManyFenced} does), and deletes only
     * the `keep: false` ones: a batch mixing both runs this first and then `taskCompleteManyFenced` for
     * the kept items in the same transaction, which finds their rows already locked by it — so the
     * batch still takes all its row locks in one id order and never waits in a cycle with another
     * batch (README "Failure modes", `test/lock-order.test.ts`).
     */
    taskCompleteManyDrop: `with input as (
  select x.id, x.attempt, x.keep, x.ord
    from rows from (jsonb_to_recordset($1::text::jsonb) as (id bigint, attempt integer, keep boolean))
         with ordinality as x(id, attempt, keep, ord)
), locked as materialized (
  select s.id
    from ${task} s
   where s.id = any(array(select i.id from input i))
     and s.state = ${C}
     and not s.cancel_requested
   order by s.id
   for update
)${handoffOnly(', gone as (')}
delete from ${task} t
 using input i
 where ${batchFence('t', '   ')}
   and not i.keep
returning i.ord::int as ord${handoffOnly(`${finishFlagsRaw('t')}\n)${finishHandoffCteRaw(schema, 'gone')}\nselect g.ord from gone g${FINISH_HANDOFF_JOIN_RAW}`)}`,

    /**
     * `$1` now, `$2` id, `$3` attempt → one `{ id }` row when the fenced complete missed because cancel
     * was requested: CLAIMED → CANCELLED (`CANCELLED_BEFORE_COMMIT`).
     */
    taskCancelRequestedToCancelled: `with gone as (
  delete from ${task} t
   where t.id = $2::bigint
     and t.attempt = $3::int
     and t.state = ${C}
     and t.cancel_requested
  returning ${taskRowColumns('t')}${finishFlags('t')}
)${finishHandoffCte(schema, 'gone')}
${historyInsert(history, 'gone', { state: CANCELLED }, 'id::text as id', {}, FINISH_HANDOFF_JOIN)}`,

    /** `$1` id → `{ state, attempt, cancelrequested }`: what complete and cancel report when their UPDATE hit nothing. */
    taskGetForOutcome: `select state, attempt, cancel_requested as cancelrequested from ${task} where id = $1::bigint
union all
select state, attempt, cancel_requested from ${history} where id = $1::bigint
limit 1`,

    // ---- task: fail, cancel, reclaim -----------------------------------------------------------------
    /**
     * `$1` now, `$2` id, `$3` attempt, `$4` error text, `$5` backoff ms, `$6` notify channel, `$7`
     * retryable (boolean), `$8` the failure limit (integer, or null for the row's `max_attempts`; when given it becomes the row's `max_attempts`, so the row shows the limit that applied) →
     * `{ state, dueatms }` when the fence (id, attempt, CLAIMED) held. As core `transition('fail')`:
     * one more failure; cancel requested → CANCELLED; not retryable, or that failure brings `failures`
     * to the limit → DEAD; else SCHEDULED due at now + backoff (a NOTIFY tells timing wheels).
     * `SET` expressions see the old row (PostgreSQL 17 UPDATE), hence `failures + 1`.
     */
    taskFail: `with ${leaveClaim(
      `case when s.cancel_requested then ${CANCELLED}
              when not $7::boolean or s.failures + 1 >= coalesce($8::int, s.max_attempts) then ${DEAD}
              else ${S} end`,
      `due_at = ${NOW} + ${millis('$5')},
         failures = t.failures + 1,
         max_attempts = coalesce($8::int, t.max_attempts),
         last_error = $4::text`,
      { failures: 'g.failures + 1', max_attempts: 'coalesce($8::int, g.max_attempts)', last_error: '$4::text' },
    )}
select f.state as state, ${ms('f.due_at')} as dueatms,
       case when f.state = ${S} then ${notice('scheduled', '$6::text', 'f')} end as notified
  from left_claim f`,

    /**
     * `$1` now, `$2` id, `$3` attempt, `$4` notify channel → `{ state }` when the fence (id, attempt,
     * CLAIMED) held. Core `transition('release')`: cancel requested → CANCELLED, else SCHEDULED due
     * now (with a NOTIFY). A hand-back is neither a failure nor an error: `failures` and
     * `last_error` stay as they are, so releases never make a task DEAD.
     */
    taskRelease: `with ${leaveClaim(
      `case when s.cancel_requested then ${CANCELLED} else ${S} end`,
      `due_at = ${NOW}`,
      {},
    )}
select r.state as state,
       case when r.state = ${S} then ${notice('scheduled', '$4::text', 'r')} end as notified
  from left_claim r`,

    /**
     * `$1` now, `$2` id, `$3` attempt, `$4` due time (ISO text, or null for now + `$5`), `$5` delay ms,
     * `$6` notify channel → `{ state, dueatms }` when the fence (id, attempt, CLAIMED) held. Core
     * `transition('snooze')` (docs/contract.md#retry-policy): cancel requested → CANCELLED, else
     * SCHEDULED due at `$4` (or now + `$5`) with a NOTIFY; `failures` and `last_error` stay as they
     * are, so a snooze never makes a task DEAD.
     */
    taskSnooze: `with ${leaveClaim(`case when s.cancel_requested then ${CANCELLED} else ${S} end`, `due_at = coalesce($4::timestamptz, ${NOW} + ${millis('$5')})`, {})}
select s.state as state, ${ms('s.due_at')} as dueatms,
       case when s.state = ${S} then ${notice('scheduled', '$6::text', 's')} end as notified
  from left_claim s`,

    /**
     * `$1` now, `$2` id, `$3` notify channel → `{ state }` (the new state) when the task was live:
     * SCHEDULED → CANCELLED, moved to `task_history` in the same statement (with a NOTIFY), CLAIMED →
     * CLAIMED with `cancel_requested` (with a NOTIFY
     * `cancelRequested`, so the worker holding it aborts the handler at once).
     */
    taskCancel: `with target as materialized (
  select s.id, s.state from ${task} s where s.id = $2::bigint and s.state in (${S}, ${C}) for update
), requested as (
  update ${task} t
     set cancel_requested = true,
         updated_at = ${NOW}
    from target g
   where t.id = g.id and g.state = ${C} and t.state = ${C}
  returning t.id, t.state, t.due_at
), gone as (
  delete from ${task} t using target g
   where t.id = g.id and g.state = ${S} and t.state = ${S}
  returning ${taskRowColumns('t')}${finishFlags('t')}
)${finishHandoffCte(schema, 'gone')}, moved as (
  ${historyInsert(history, 'gone', { state: CANCELLED }, 'id, state, due_at', {}, FINISH_HANDOFF_JOIN)}
), cancelled as (
  select * from requested union all select * from moved
)
select c.state as state,
       case when c.state = ${CANCELLED} then ${notice('cancelled', '$3::text', 'c')} else ${notice('cancelRequested', '$3::text', 'c')} end as notified
  from cancelled c`,

    /**
     * `$1` now, `$2` limit, `$3` notify channel → `{ id, attempt, state }` per reclaimed task.
     *
     * One statement, never read-then-write (an UPDATE of the tasks that stay live, a DELETE + INSERT
     * into `task_history` of those that end DEAD or CANCELLED): a MATERIALIZED pick (see taskClaim) locks expired
     * leases with FOR UPDATE SKIP LOCKED (concurrent reclaimers take disjoint rows), the outer WHERE re-checks
     * CLAIMED and the expiry on the newest row version (§13.2.1), so an extend that committed first
     * wins. The CLAIMED rows come from the partial index `task_claimed_idx` (§11.8; migration 7), at most
     * `concurrency × workers` of them, and `lease_until < now` filters them. Outcome as core
     * `transition('reclaim')`: an expired lease (a crash or a stall) is one more failure; cancel
     * requested → CANCELLED, that failure brings `failures` to `max_attempts` → DEAD, else SCHEDULED
     * with `due_at` unchanged.
     *
     * One reclaimer per schema (docs/contract.md#connection-budget): `gate` tries the schema's reclaim
     * lock (`./reclaim-lock-sql.ts`). `pg_try_advisory_xact_lock` never waits, and the lock lasts
     * until the transaction ends (§9.28.10, §13.3.5): in autocommit the statement's implicit one
     * (§3.4). The pick reads `gate` through an uncorrelated sub-select: an InitPlan, which the planner
     * turns into a `One-Time Filter` over the scan, evaluated before the scan returns — and FOR UPDATE
     * locks — any row (the plan `listen-share.test.ts` of `@postpone/postgres` reads: the scan is
     * `never executed` while the lock is held). A caller that finds it held scans nothing, returns no row.
     */
    taskReclaimExpired: `with gate as materialized (
  select pg_try_advisory_xact_lock(${reclaimLockKey(literal(schema))}) as got
), picked as materialized (
  select s.id, not s.cancel_requested and s.failures + 1 < s.max_attempts as stays
    from ${task} s
   where (select g.got from gate g)
     and s.state = ${C}
     and s.lease_until < ${NOW}
   order by s.lease_until, s.id
   for update skip locked
   limit $2::int
), stay as (
  update ${task} t
     set state = ${S},
         failures = t.failures + 1,
         lease_owner = null,
         lease_until = null,
         last_error = ${literal(LEASE_EXPIRED_ERROR)},
         updated_at = ${NOW}
   where t.id = any(array(select p.id from picked p where p.stays))
     and t.state = ${C}
     and t.lease_until < ${NOW}
  returning t.id, t.attempt, t.state, t.due_at
), gone as (
  delete from ${task} t
   where t.id = any(array(select p.id from picked p where not p.stays))
     and t.state = ${C}
     and t.lease_until < ${NOW}
  returning ${taskRowColumns('t')}${finishFlags('t')}
)${finishHandoffCte(schema, 'gone')}, moved as (
  ${historyInsert(
    history,
    'gone',
    {
      state: `case when g.cancel_requested then ${CANCELLED} else ${DEAD} end`,
      failures: 'g.failures + 1',
      last_error: literal(LEASE_EXPIRED_ERROR),
    },
    'id, attempt, state, due_at',
    {},
    FINISH_HANDOFF_JOIN,
  )}
), reclaimed as (
  select * from stay union all select * from moved
)
select r.id::text as id, r.attempt as attempt, r.state as state,
       case when r.state = ${S} then ${notice('scheduled', '$3::text', 'r')} end as notified
  from reclaimed r
 order by r.id`,

    // ---- task: reads ---------------------------------------------------------------------------------
    /**
     * `$1` now, `$2` within ms, `$3` limit, `$4` queue, `$5` kinds as JSON array text or null → rows
     * `{ nowms, id, dueatms, paused }`; one row with null id when nothing is due. Paused queues and
     * kinds are left out as in the claim; `paused` says the whole selection is paused (core `PeekResult.paused`). SCHEDULED tasks of the queue
     * (and kinds) due by now + within, by due time then id: per (kind, priority) level of
     * `task_claim_idx` a range of at most `$3` rows, as in {@link taskClaim}, merged.
     */
    taskPeekDue: `${levelsCte(task, '$4', '$5', pause)}, due as (
  select c.id, c.due_at
    from levels l
   cross join lateral (
         select s.id, s.due_at
           from ${task} s
          where s.state = ${S} and s.queue = $4::text and s.kind = l.kind and s.priority = l.priority
            and s.due_at <= ${NOW} + ${millis('$2')}
          order by s.due_at, s.id
          limit $3::int) c
   where l.priority is not null
   order by c.due_at, c.id
   limit $3::int
)
select ${ms('n.now')} as nowms, d.id::text as id, ${ms('d.due_at')} as dueatms, n.paused as paused
  from (select ${NOW} as now, ${selectionPaused(pause, '$4', '$5')} as paused) n
  left join due d on true
 order by d.due_at, d.id`,

    /** `$1` id → a full task row (see `TaskRow` in this file). */
    taskGet: `select ${taskColumns('t')} from ${task} t where t.id = $1::bigint
union all
select ${taskColumns('t')} from ${history} t where t.id = $1::bigint
limit 1`,

    /** No parameters → `{ state, n }` rows: live states from `task`, terminal ones from `task_history` (migration 11). */
    taskCountByState: `select state, count(*)::int as n from ${task} group by state
union all
select state, count(*)::int as n from ${history} group by state`,

    /**
     * `$1` task id → one `{ taskid, attempt, worker, finishedatms }` row when the task is DONE in
     * history (`Store.getCompletion`, migration 13): the attempt that completed it and `finished_by`
     * (null for a DONE written before migration 13). `state = 'DONE'` reads only the DONE partitions
     * (partition pruning, PostgreSQL 17 §5.12.4), each by `task_history_id_idx`.
     */
    completionGet: `select h.id::text as taskid, h.attempt as attempt, h.finished_by as worker, ${ms('h.finished_at')} as finishedatms
  from ${history} h where h.id = $1::bigint and h.state = ${DONE}`,
  });
}

export type Statements = ReturnType<typeof statements>;
