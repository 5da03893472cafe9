/**
 * The SQL of per-key concurrency and fair share (docs/contract.md#per-key-concurrency; `KeyLimitStore`
 * of `@postpone/core`) and its migration, once, for both drivers; conventions as in `./sql.ts` (`$1` is
 * `now` or null, JSON as text, aliases without underscores).
 */
import { TaskState } from '@postpone/core';
import { keyRateLimitedCte, keyRateLogCtes, keyRateRoom, keyRateUsedJoin } from './key-rate-sql.js';
import { claimRoomCte, rateLogCtes } from './rate-limit-sql.js';
import { claimUpdate, levelDueRows, levelsCte, literal, NOW, quoteIdent } from './sql.js';

/**
 * The migration number of per-key concurrency. Kept in this one constant so it can be renumbered
 * when branches merge (18 and 20–21 are other work of the same release).
 */
export const KEY_LIMIT_MIGRATION_VERSION = 19;

/**
 * Migration 19 — per-key concurrency and fair share: a nullable `limit_key text` on `task` (catalog
 * only: a nullable column without a default rewrites nothing, PostgreSQL 17 ALTER TABLE); the partial
 * index `task_limit_key_idx (queue, kind, priority, limit_key, due_at, id) where state = 'SCHEDULED'
 * and limit_key is not null`, which only tasks scheduled with a key enter (tasks without one write no
 * entry), and which the keyed claim walks per key; and the table `key_limit`, one row per kind with
 * a per-key limit (`max_claimed` CLAIMED tasks per (kind, limit_key)). Not carried into
 * `task_history` (a finished task's key limits nothing). Additive, so no `minReader`: older code
 * never reads the column or the table (and so applies no per-key limit). Re-runnable (`if not exists`).
 */
export function keyLimitMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  return `alter table ${q}.task add column if not exists limit_key text;
create index if not exists task_limit_key_idx on ${q}.task (queue, kind, priority, limit_key, due_at, id) where state = 'SCHEDULED' and limit_key is not null;
create table if not exists ${q}.key_limit (
  kind text primary key,
  max_claimed integer not null check (max_claimed between 1 and 1000000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);`;
}

export function keyLimitStatements(schema: string) {
  const q = quoteIdent(schema);
  const keyLimit = `${q}.key_limit`;

  return Object.freeze({
    /**
     * `$1` kind, `$2` limit → the row `{ kind, limit }`. An upsert; `updated_at` is the proposed row's
     * (its default `now()`): Citus refuses a function in the DO UPDATE SET of a distributed table (0A000).
     */
    keyLimitSet: `insert into ${keyLimit} as r (kind, max_claimed) values ($1::text, $2::int)
on conflict (kind) do update set max_claimed = excluded.max_claimed, updated_at = excluded.updated_at
returning r.kind, r.max_claimed as "limit"`,

    /** `$1` kind → one row when deleted. */
    keyLimitDelete: `delete from ${keyLimit} where kind = $1::text returning 1 as deleted`,

    /** → every declaration `{ kind, limit }` by kind (also the cache of which kinds are key-limited). */
    keyLimitList: `select r.kind, r.max_claimed as "limit" from ${keyLimit} r order by r.kind`,

    /**
     * `$1` schema name, `$2` the key-limited kinds this claim may take, as a JSON array text SORTED by
     * the caller → one row per kind. As `kindCapLock` (PostgreSQL 17 §9.28.10), in its own key space
     * (`postpone:key-cap:`): a second keyed claimer of a kind waits here until the first commits, and
     * its next statement's snapshot (READ COMMITTED, §13.2.1) holds the first one's claims, so the
     * per-key counts of {@link taskClaimKeyed} cannot race. Taken after the kind-cap locks and before
     * the rate-limit rows, in every claimer, so none waits in a cycle.
     */
    keyLimitLock: `select pg_advisory_xact_lock(hashtextextended('postpone:key-cap:' || $1::text || ':' || k.kind, 0))
  from jsonb_array_elements_text($2::text::jsonb) with ordinality as k(kind, ord)
 order by k.ord`,

    /**
     * `$1`..`$9` as `taskClaimLimited` of `./rate-limit-sql.ts` (`$7` caps, `'{}'` for none; `$8` rate
     * rooms, `'{}'` for none; `$9` the rate-limited queue or null), `$10` the key-limited kinds this
     * claim may take as a JSON array → the rows of `taskClaim`. Run after `kindCapLock` (when capped)
     * and {@link keyLimitLock}, in one transaction.
     *
     * A kind of `$10` with a `key_limit` row (read here, so a changed limit applies at once) is walked
     * per limit key instead of per level: `keys` lists, per (kind, priority) level, its keys with
     * SCHEDULED tasks (a loose index scan of `task_limit_key_idx`, one descent per key); per key,
     * `held` its CLAIMED tasks in every queue (the partial `task_claimed_idx`, at most the fleet's
     * concurrency rows, read once), so its room is `max_claimed − held`; and per key its first
     * `least($4, room, kind room)` due tasks in `(due_at, id)` order, locked SKIP LOCKED (one range of
     * the index per key). Tasks of the kind without a key are one more group with no per-key room,
     * found on `task_claim_idx` with `limit_key is null` as a filter. Every other kind is walked as
     * in `taskClaim`. Each row gets its rank in its group (the key's, or the level's): the merge
     * orders by `priority desc, rank, due_at, id` — round-robin among the keys with due work, so a
     * key's backlog is taken one per key per round — and keeps the first `$4`, after each key keeps
     * its first `room` across its levels in that order (a key's room is the claim's, not each level's)
     * and a kind with a cap or rate room keeps its first `room` of what is left. Then the claim, and
     * the rate-limit log as `taskClaimLimited`.
     */
    taskClaimKeyed: keyedClaimSql(schema, false),

    /**
     * `$1`..`$10` as `taskClaimKeyed` of `./key-limit-sql.ts` (`$10` the kinds with a per-key
     * concurrency limit or a per-key rate limit this claim may take) → the rows of `taskClaim`. Run
     * after `keyLimitLock` of those kinds, in one transaction: the advisory lock per kind serialises
     * every claimer that may take the kind, so the logs this statement reads (its snapshot is taken
     * after the lock, READ COMMITTED, PostgreSQL 17 §13.2.1) hold every committed claim of the kind's
     * keys, and the logs it writes are written by no one else until it commits — no read-then-write
     * race on a key's window. A key's room is the least of the claim's limit, its kind's cap and rate
     * rooms, its per-key concurrency room and `max_starts` less its logged claims later than
     * `now − window`; the claim then appends `now` per claimed task to its key's log.
     */
    taskClaimKeyRated: keyedClaimSql(schema, true),
  });
}

/**
 * The text of `taskClaimKeyed` (`rated` false) and of `taskClaimKeyRated` of `./key-rate-sql.ts`
 * (`rated` true: per-key rate limits, docs/contract.md#per-key-rate-limits). With `rated` false the
 * text is exactly the keyed claim of migration 19. With `rated` true, `$10` lists the kinds with a
 * per-key concurrency limit OR a per-key rate limit; `limited` carries both declarations (either may
 * be null: `least` skips nulls, PostgreSQL 17 §9.18.4), a key's room is also cut to `max_starts`
 * less its claims logged in `key_rate_log` later than `now − window`, and the claim appends `now`
 * once per claimed task to its key's log (`keyRateLogCtes`).
 */
export function keyedClaimSql(schema: string, rated: boolean): string {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const keyLimit = `${q}.key_limit`;
  const rate = `${q}.rate_limit`;
  const S = literal(TaskState.SCHEDULED);
  const C = literal(TaskState.CLAIMED);
  const level = `s.state = ${S} and s.queue = $5::text and s.kind = k.kind and s.priority = k.priority`;
  const limitedCte = rated
    ? keyRateLimitedCte(schema)
    : `limited as materialized (
  select r.kind, r.max_claimed from ${keyLimit} r where r.kind in (select jsonb_array_elements_text($10::text::jsonb))
)`;
  const keyRoom = rated ? `, ${keyRateRoom(schema)}` : '';
  const keyUsed = rated ? `\n${keyRateUsedJoin(schema)}` : '';
  const keyLog = rated ? `, ${keyRateLogCtes(schema)}` : '';
  return `${levelsCte(task, '$5', '$6', `${q}.pause`)}, ${claimRoomCte(task)}, ${limitedCte}, held as materialized (
  select s.kind, s.limit_key, count(*)::int as n
    from ${task} s
   where s.state = ${C} and s.limit_key is not null and s.kind in (select kind from limited)
   group by s.kind, s.limit_key
), keys(kind, priority, key) as (
  select l.kind, l.priority,
         (select s.limit_key from ${task} s
           where s.state = ${S} and s.queue = $5::text and s.kind = l.kind and s.priority = l.priority and s.limit_key is not null
           order by s.limit_key limit 1)
    from levels l
   where l.priority is not null and l.kind in (select kind from limited)
  union all
  select k.kind, k.priority,
         (select s.limit_key from ${task} s
           where ${level} and s.limit_key > k.key
           order by s.limit_key limit 1)
    from keys k
   where k.key is not null
), candidates as materialized (
  select k.kind, d.id, k.priority, d.due_at, row_number() over (partition by k.kind, k.priority, k.key order by d.due_at, d.id) as rank,
         k.key, kr.keyroom
    from keys k
    join limited m on m.kind = k.kind
    left join held h on h.kind = k.kind and h.limit_key = k.key
    left join room r on r.kind = k.kind${keyUsed}
   cross join lateral (select greatest(0, least(m.max_claimed - coalesce(h.n, 0)${keyRoom})) as keyroom) kr
   cross join lateral (
         select s.id, s.due_at
           from ${task} s
          where ${level} and s.limit_key = k.key
            and s.due_at <= ${NOW}
          order by s.due_at, s.id
          for update skip locked
          limit greatest(0, least($4::int, coalesce(r.room, $4::int), kr.keyroom))) d
   where k.key is not null
  union all
  select l.kind, c.id, l.priority, c.due_at, row_number() over (partition by l.kind, l.priority order by c.due_at, c.id), null::text, null::int
    from levels l
    left join room r on r.kind = l.kind
   cross join lateral (
         ${levelDueRows(task, 'least($4::int, coalesce(r.room, $4::int))', '         ')}) c
   where l.priority is not null and l.kind not in (select kind from limited)
  union all
  select l.kind, c.id, l.priority, c.due_at, row_number() over (partition by l.kind, l.priority order by c.due_at, c.id), null::text, null::int
    from levels l
    left join room r on r.kind = l.kind
   cross join lateral (
         select s.id, s.due_at
           from ${task} s
          where s.state = ${S} and s.queue = $5::text and s.kind = l.kind and s.priority = l.priority
            and s.due_at <= ${NOW} and s.limit_key is null
          order by s.due_at, s.id
          for update skip locked
          limit least($4::int, coalesce(r.room, $4::int))) c
   where l.priority is not null and l.kind in (select kind from limited)
), picked as materialized (
  select x.id
    from (select c.id, c.priority, c.due_at, c.rank, r.room,
                 row_number() over (partition by c.kind order by c.priority desc, c.rank, c.due_at, c.id) as n
            from (select c.*, row_number() over (partition by c.kind, c.key order by c.priority desc, c.rank, c.due_at, c.id) as kn
                    from candidates c) c
            left join room r on r.kind = c.kind
           where c.keyroom is null or c.kn <= c.keyroom) x
   where x.room is null or x.n <= x.room
   order by x.priority desc, x.rank, x.due_at, x.id
   limit $4::int
), claimed as (
${claimUpdate(task)}
), ${rateLogCtes(rate)}${keyLog}
select * from claimed`;
}

export type KeyLimitStatements = ReturnType<typeof keyLimitStatements>;
