/**
 * The SQL of per-key rate limits (docs/contract.md#per-key-rate-limits; `KeyRateLimitStore` of
 * `@postpone/core`) and their migration, once, for both drivers; conventions as in `./sql.ts` (`$1` is
 * `now` or null, JSON as text, times as epoch ms, aliases without underscores). The claim itself is
 * `taskClaimKeyRated` of `./key-limit-sql.ts` (the keyed claim of per-key concurrency with the pieces
 * below), so a kind walked per key gets both limits in one statement.
 */
import { TaskState } from '@postpone/core';
import { CLOCK, levelsCte, literal, ms, NOW, quoteIdent } from './sql.js';

/**
 * The migration number of per-key rate limits. Kept in this one constant so it can be renumbered
 * when branches merge (20–22 are other work of the same release).
 */
export const KEY_RATE_MIGRATION_VERSION = 23;

/**
 * Rows of `key_rate_log` whose newest claim is older than `now − window − KEY_RATE_PRUNE_MARGIN` are
 * deleted by the claim's prune (`keyRateLogPrune`): they hold no claim any window ending at or after
 * `now − margin` counts. The margin covers a claim whose transaction began (its `now()`, its claim
 * time) before the pruner's but reaches its claim statement after the prune commits: it still sees
 * every row it counts unless it spent more than the margin between its BEGIN and its claim statement.
 */
export const KEY_RATE_PRUNE_MARGIN = "interval '1 minute'";

/**
 * Migration 23 — per-key rate limits: the table `key_rate_limit`, one row per kind with a per-key
 * rate limit (`max_starts` claims per `window_ms` per limit key); and `key_rate_log`, the sliding log
 * per (kind, limit_key): `starts`, the claim times of the key's `max_starts` most recent claims (core
 * `rate-limit.ts` says why that many are enough), and `last_start`, the newest, indexed per kind so
 * the prune finds idle keys' rows without reading the others. Written only by claims holding the
 * kind's per-key advisory lock (`keyLimitLock`). New tables only, so no `minReader`: older code never
 * reads them (and so applies no per-key rate limit). Re-runnable (`if not exists`).
 */
export function keyRateMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  return `create table if not exists ${q}.key_rate_limit (
  kind text primary key,
  max_starts integer not null check (max_starts between 1 and 10000),
  window_ms integer not null check (window_ms between 1 and 86400000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create table if not exists ${q}.key_rate_log (
  kind text not null,
  limit_key text not null,
  starts timestamptz[] not null,
  last_start timestamptz not null,
  primary key (kind, limit_key)
);
create index if not exists key_rate_log_last_idx on ${q}.key_rate_log (kind, last_start);`;
}

/** The window of declaration `alias` as an interval. */
const win = (alias: string) => `${alias}.window_ms * interval '1 millisecond'`;
/** Claims of log row `l` later than `now − window` of declaration `r`. */
const USED = `(select count(*) from unnest(l.starts) t where t > ${NOW} - ${win('r')})`;

/**
 * The CTE `limited` of the rated keyed claim: per kind of `$10` with a `key_limit` row or a
 * `key_rate_limit` row, `max_claimed` (or null) and `max_starts`, `window_ms` (or null).
 */
export function keyRateLimitedCte(schema: string): string {
  const q = quoteIdent(schema);
  return `limited as materialized (
  select x.kind, l.max_claimed, g.max_starts, g.window_ms
    from jsonb_array_elements_text($10::text::jsonb) as x(kind)
    left join ${q}.key_limit l on l.kind = x.kind
    left join ${q}.key_rate_limit g on g.kind = x.kind
   where l.kind is not null or g.kind is not null
)`;
}

/** The join giving `u.n`, key `k.key`'s claims logged later than `now − window` (0 without a log or a rate limit). */
export function keyRateUsedJoin(schema: string): string {
  return `    left join lateral (select count(*)::int as n from ${quoteIdent(schema)}.key_rate_log g cross join unnest(g.starts) t
                        where g.kind = k.kind and g.limit_key = k.key and t > ${NOW} - ${win('m')}) u on true`;
}

/** The per-key rate room term of the keyed claim's `least(…)`: null (skipped by `least`) without a rate limit. */
export function keyRateRoom(_schema: string): string {
  return 'm.max_starts - u.n';
}

/**
 * The CTEs `keystarts` and `keylogged` of the rated keyed claim: after `claimed`, per (kind, limit
 * key) of a kind with a per-key rate limit, append `now` once per claimed task to the key's log,
 * trimmed to its `max_starts` most recent (an upsert on the primary key; only claimers holding the
 * kind's advisory lock write it, so the upsert never races another).
 */
export function keyRateLogCtes(schema: string): string {
  const q = quoteIdent(schema);
  return `keystarts as (
  select s.kind, s.limit_key, count(*)::int as n
    from claimed c
    join ${q}.task s on s.id = c.id::bigint
    join limited m on m.kind = s.kind
   where s.limit_key is not null and m.max_starts is not null
   group by s.kind, s.limit_key
), keylogged as (
  insert into ${q}.key_rate_log as g (kind, limit_key, starts, last_start)
  select c.kind, c.limit_key, array_fill(${NOW}, array[c.n]), ${NOW} from keystarts c
  on conflict (kind, limit_key) do update
     set starts = array(select t from unnest(g.starts || excluded.starts) t order by t desc
                        limit (select r.max_starts from ${q}.key_rate_limit r where r.kind = g.kind)),
         last_start = greatest(g.last_start, excluded.last_start)
  returning 1
)`;
}

/** Row of `keyRateLimitSet` / `keyRateLimitList`. */
export interface KeyRateLimitRow {
  kind: string;
  limit: number;
  windowms: number;
  heldkeys: number;
}

export function keyRateStatements(schema: string) {
  const q = quoteIdent(schema);
  const decl = `${q}.key_rate_limit`;
  const log = `${q}.key_rate_log`;
  const task = `${q}.task`;
  const S = literal(TaskState.SCHEDULED);
  const heldKeys = `(select count(*) from ${log} l where l.kind = r.kind and ${USED} >= r.max_starts)::int as heldkeys`;
  const columns = `r.kind, r.max_starts as "limit", r.window_ms as windowms, ${heldKeys}`;

  return Object.freeze({
    /** `$1` now, `$2` kind, `$3` limit, `$4` window ms → the row (`KeyRateLimitRow`). An upsert: the logs are kept. */
    keyRateLimitSet: `insert into ${decl} as r (kind, max_starts, window_ms) values ($2::text, $3::int, $4::int)
on conflict (kind) do update set max_starts = excluded.max_starts, window_ms = excluded.window_ms, updated_at = excluded.updated_at
returning ${columns}`,

    /**
     * `$1` kind → one row when deleted; the kind's logs go with it. Run after `keyLimitLock` of the
     * kind (in one transaction), so no claim is between reading the declaration and writing a log.
     */
    keyRateLimitDelete: `with gone as (delete from ${decl} where kind = $1::text returning kind),
logs as (delete from ${log} l where l.kind = $1::text and exists (select 1 from gone))
select 1 as deleted from gone`,

    /** `$1` now → every declaration (`KeyRateLimitRow`), by kind. */
    keyRateLimitList: `select ${columns} from ${decl} r order by r.kind`,

    /** → the kinds with a per-key rate limit (the store's cache of what a claim must apply). */
    keyRateLimitKinds: `select r.kind from ${decl} r`,

    /**
     * `$1` now, `$2` kinds as a JSON array → nothing. Deletes at most 1 000 log rows of those kinds
     * whose newest claim is older than `now − window − 1 minute` (`KEY_RATE_PRUNE_MARGIN`; the index
     * `key_rate_log_last_idx`): a key idle for longer than its window holds no row. Run by a rated
     * claim after `keyLimitLock` of the kinds (the only writers of the logs), at most every
     * `KEY_RATE_PRUNE_EVERY_MS` per process.
     */
    keyRateLogPrune: `delete from ${log} l
 where (l.kind, l.limit_key) in (
   select x.kind, x.limit_key
     from ${decl} r
     join ${log} x on x.kind = r.kind and x.last_start < ${NOW} - ${win('r')} - ${KEY_RATE_PRUNE_MARGIN}
    where r.kind in (select jsonb_array_elements_text($2::text::jsonb))
    limit 1000)`,

    /**
     * `$1` now, `$2` the kinds a claim named, all with a per-key rate limit, as a JSON array, `$3` the
     * queue → one row `held, reopeninms`. Read in a short rated claim's transaction after its claim
     * (so it sees the claim's own log). Walks the levels of those kinds as the claim does (paused ones
     * left out, `levelsCte`) and per level its keys with SCHEDULED tasks (the loose index scan of
     * `task_limit_key_idx`). `held`: some key with a due task has a full log (at least `max_starts`
     * claims later than `now − window`), and no key without a full log has a due task, nor is a task
     * without a key due — one index probe per key (a scalar `limit 1` subquery, so the planner keeps
     * it a probe instead of hashing every due row), and for tasks without a key one range of
     * `task_claim_idx` per level with `limit_key is null` as a filter (as the claim). A due task of a key held only by per-key
     * concurrency, or locked by another command, makes it false. `reopeninms`: until the earliest of a
     * full key's window reopening (its `max_starts`-th most recent claim + window) and the next
     * not-yet-due task of those kinds becoming due, from the actual time.
     */
    keyRateHeld: `${levelsCte(task, '$3', '$2', `${q}.pause`)}, keys(kind, priority, key) as (
  select l.kind, l.priority,
         (select s.limit_key from ${task} s
           where s.state = ${S} and s.queue = $3::text and s.kind = l.kind and s.priority = l.priority and s.limit_key is not null
           order by s.limit_key limit 1)
    from levels l
   where l.priority is not null
  union all
  select k.kind, k.priority,
         (select s.limit_key from ${task} s
           where s.state = ${S} and s.queue = $3::text and s.kind = k.kind and s.priority = k.priority and s.limit_key > k.key
           order by s.limit_key limit 1)
    from keys k
   where k.key is not null
), r as materialized (
  select g.kind, g.max_starts, g.window_ms from ${decl} g where g.kind in (select jsonb_array_elements_text($2::text::jsonb))
), full_keys as materialized (
  select l.kind, l.limit_key,
         (select t from unnest(l.starts) t order by t desc offset r.max_starts - 1 limit 1) + ${win('r')} as reopens
    from ${log} l join r on r.kind = l.kind
   where ${USED} >= r.max_starts
), due_keys as materialized (
  select k.kind, k.key, exists (select 1 from full_keys f where f.kind = k.kind and f.limit_key = k.key) as isfull
    from keys k
   where k.key is not null
     and (select s.id from ${task} s
           where s.state = ${S} and s.queue = $3::text and s.kind = k.kind and s.priority = k.priority and s.limit_key = k.key and s.due_at <= ${NOW}
           order by s.due_at limit 1) is not null
)
select exists (select 1 from due_keys d where d.isfull)
       and not exists (select 1 from due_keys d where not d.isfull)
       and not exists (select 1 from levels l
                        where l.priority is not null
                          and (select s.id from ${task} s
                                where s.state = ${S} and s.queue = $3::text and s.kind = l.kind and s.priority = l.priority
                                  and s.due_at <= ${NOW} and s.limit_key is null
                                order by s.due_at limit 1) is not null) as held,
       greatest(0, ${ms(`least((select min(f.reopens) from full_keys f),
                               (select min((select s.due_at from ${task} s
                                             where s.state = ${S} and s.queue = $3::text and s.kind = l.kind and s.priority = l.priority and s.due_at > ${NOW}
                                             order by s.due_at limit 1))
                                  from levels l where l.priority is not null))`)} - ${ms(CLOCK)})::float8 as reopeninms`,
  });
}

export type KeyRateStatements = ReturnType<typeof keyRateStatements>;
