/**
 * The SQL of rate limits (docs/contract.md#rate-limits; `RateLimitStore` of `@postpone/core`) and
 * their migration, once, for both drivers; conventions as in `./sql.ts` (`$1` is `now` or null, JSON
 * as text, times as epoch ms, aliases without underscores).
 */
import { TaskState } from '@postpone/core';
import { CLOCK, cappedPick, claimUpdate, levelsCte, literal, ms, NOW, quoteIdent } from './sql.js';

/**
 * The migration number of rate limits. Kept in this one constant so it can be renumbered when
 * branches merge (13–15 and 17 are other work of the same release).
 */
export const RATE_LIMIT_MIGRATION_VERSION = 17;

/**
 * Migration 17 — `rate_limit`: one row per declared limit, `(scope, name)` its primary key (`scope`
 * `'kind'` or `'queue'`), `max_starts` claims per `window_ms`, and `starts`, the sliding log: the
 * claim times of the `max_starts` most recent claims of the scope (core `rate-limit.ts` says why that
 * many are enough). A small table, one row per limit, written by every claim that takes a task of a
 * limited scope (its row is the lock limited claimers of the scope queue on). A new table only, so no
 * `minReader`: older code never reads it (and so applies no limit). Re-runnable (`if not exists`).
 */
export function rateLimitMigrationSql(schema: string): string {
  return `create table if not exists ${quoteIdent(schema)}.rate_limit (
  scope text not null check (scope in ('kind', 'queue')),
  name text not null,
  max_starts integer not null check (max_starts between 1 and 10000),
  window_ms integer not null check (window_ms between 1 and 86400000),
  starts timestamptz[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (scope, name)
);`;
}

/** The window of row `r` as an interval. */
const WINDOW = 'r.window_ms * interval \'1 millisecond\'';
/** Claims of row `r` logged later than `now − window` (the window's claims, later ones too). */
const USED = `(select count(*) from unnest(r.starts) t where t > ${NOW} - ${WINDOW})::int`;
/** When row `r` has room again: now when used < max, else its `max_starts`-th most recent claim + window. */
const REOPENS = `case when ${USED} < r.max_starts then ${NOW}
  else (select t from unnest(r.starts) t order by t desc offset r.max_starts - 1 limit 1) + ${WINDOW} end`;

/** Row of `rateLimitList` / `rateLimitSet`. */
export interface RateLimitRow {
  scope: string;
  name: string;
  maxstarts: number;
  windowms: number;
  used: number;
  reopensatms: number;
}

/**
 * The CTE `room(kind, room)` of a claim with caps and rate limits (`taskClaimLimited`, and
 * `taskClaimKeyed` of `./key-limit-sql.ts`): per kind of `$7` (caps `{ [kind]: cap }`) its cap less its
 * CLAIMED tasks in every queue, per kind of `$8` (rate rooms `{ [kind]: room }`) that room; the least of both.
 */
export function claimRoomCte(task: string): string {
  const C = literal(TaskState.CLAIMED);
  return `room as materialized (
  select k.kind, min(k.room)::int as room
    from (select c.key as kind,
                 greatest(0, c.value::int - (select count(*) from ${task} s where s.state = ${C} and s.kind = c.key))::int as room
            from jsonb_each_text($7::text::jsonb) c
          union all
          select c.key, c.value::int from jsonb_each_text($8::text::jsonb) c) k
   group by k.kind
)`;
}

/**
 * The CTEs `counted` and `logged` of a limited claim (`taskClaimLimited`, `taskClaimKeyed`): after the
 * CTE `claimed`, append `now` once per claimed task to the log of each limited kind of `$8` and of the
 * queue `$9` (when not null), trimmed to its `max_starts` most recent.
 */
export function rateLogCtes(rate: string): string {
  return `counted as (
  select 'kind'::text as scope, k.kind as name, count(*)::int as n from claimed k where $8::text::jsonb ? k.kind group by k.kind
  union all
  select 'queue'::text, $9::text, count(*)::int from claimed having $9::text is not null and count(*) > 0
), logged as (
  update ${rate} r
     set starts = array(select t from unnest(r.starts || array_fill(${NOW}, array[c.n])) t order by t desc limit r.max_starts)
    from counted c
   where r.scope = c.scope and r.name = c.name
  returning 1
)`;
}

export function rateLimitStatements(schema: string) {
  const q = quoteIdent(schema);
  const rate = `${q}.rate_limit`;
  const task = `${q}.task`;
  const rooms = `select r.scope, r.name,
       greatest(0, r.max_starts - ${USED})::int as room,
       greatest(0, ${ms(REOPENS)} - ${ms(CLOCK)})::float8 as reopeninms
  from ${rate} r
 where (r.scope, r.name) in (select x ->> 0, x ->> 1 from jsonb_array_elements($2::text::jsonb) x)
 order by r.scope, r.name`;
  const columns = `r.scope, r.name, r.max_starts as maxstarts, r.window_ms as windowms, ${USED} as used, ${ms(REOPENS)} as reopensatms`;

  return Object.freeze({
    /** `$1` now, `$2` scope, `$3` name, `$4` limit, `$5` window ms → the row (`RateLimitRow`). An upsert: the log is kept. */
    rateLimitSet: `insert into ${rate} as r (scope, name, max_starts, window_ms) values ($2::text, $3::text, $4::int, $5::int)
on conflict (scope, name) do update set max_starts = excluded.max_starts, window_ms = excluded.window_ms, updated_at = now()
returning ${columns}`,

    /** `$1` scope, `$2` name → one row when deleted. */
    rateLimitDelete: `delete from ${rate} where scope = $1::text and name = $2::text returning 1 as deleted`,

    /** `$1` now → every limit (`RateLimitRow`), by scope then name. */
    rateLimitList: `select ${columns} from ${rate} r order by r.scope, r.name`,

    /** → `{ scope, name }` of every limit: what a claim must apply (cached by the store, see `PostgresStore.claim`). */
    rateLimitKeys: `select r.scope, r.name from ${rate} r`,

    /**
     * → `source, scope, name` of every limit declaration a claim must apply, in one statement: the
     * rate limits (`rate`, their scope and name), the kinds with per-key concurrency (`key`) and those
     * with a per-key rate limit (`keyrate`; scope `kind`, name the kind). Cached by the store
     * (`LimitDeclarations`); 42P01 on a schema older than one of the tables.
     */
    limitDeclarations: `select 'rate' as source, r.scope, r.name from ${rate} r
union all select 'key', 'kind', k.kind from ${q}.key_limit k
union all select 'keyrate', 'kind', d.kind from ${q}.key_rate_limit d`,

    /**
     * `$1` now, `$2` the limits a claim may take tasks of, as a JSON array of `[scope, name]` →
     * per limit found: `scope, name, room, reopeninms`. The first statement of a limited claim's
     * transaction (after `kindCapLock` when it has caps): it locks the rows FOR UPDATE in
     * (scope, name) order — every limited claimer locks in that order, so none waits in a cycle — and
     * a second claimer of a limit waits here until the first commits; PostgreSQL then re-reads the
     * newest row version and computes the room from it (PostgreSQL 17 §13.2.1, SELECT FOR UPDATE in
     * READ COMMITTED), so two claimers never share a window's room. `reopeninms` is from the actual
     * time (`clock_timestamp()`), so a worker sleeps from when it got the answer.
     */
    rateLimitLock: `${rooms}
   for update of r`,

    /**
     * {@link rateLimitLock} without the lock: the rooms after a limited claim that came back short,
     * read in its transaction (so it sees the claim's own log), to tell whether everything the claim
     * may take is now held back.
     */
    rateLimitRooms: rooms,

    /**
     * `$1`..`$6` as `taskClaim` (`$4` already cut to the queue limit's room), `$7` per-kind caps
     * `{ [kind]: cap }` as JSON text (`'{}'` for none), `$8` per-kind rate-limit rooms `{ [kind]: room }`
     * from {@link rateLimitLock}, `$9` the queue when its limit is to be logged, else null → the rows of
     * `taskClaim`. Walks the levels as `taskClaimCapped`, a kind's room the least of its cap room and
     * its rate room; then, in the same statement, appends `now` once per claimed task to the log of
     * each limited kind and of the queue, trimmed to its `max_starts` most recent (a data-modifying
     * CTE runs whether or not the outer query reads it, PostgreSQL 17 §7.8.4). Only the rows
     * {@link rateLimitLock} locked are written (the kinds of `$8`, the queue of `$9`): a limit created
     * since this process read the list is left alone (it applies once the process knows it), so this
     * statement never waits for a row lock in another order than the sorted one.
     */
    taskClaimLimited: `${levelsCte(task, '$5', '$6', `${q}.pause`)}, ${claimRoomCte(task)}, ${cappedPick(task)}, claimed as (
${claimUpdate(task)}
), ${rateLogCtes(rate)}
select * from claimed`,
  });
}

export type RateLimitStatements = ReturnType<typeof rateLimitStatements>;

