/**
 * The SQL of the per-key backlog (docs/contract.md#key-backlog; `KeyBacklogStore` of `@postpone/core`),
 * once, for both drivers; conventions as in `./sql.ts` (`$1` is `now` or null, aliases without
 * underscores). Reads the column and the partial index of migration 19 (`./key-limit-sql.ts`); no
 * migration of its own.
 */
import { TaskState } from '@postpone/core';
import { literal, ms, NOW, quoteIdent } from './sql.js';

export function keyBacklogStatements(schema: string) {
  const task = `${quoteIdent(schema)}.task`;
  const S = literal(TaskState.SCHEDULED);
  const C = literal(TaskState.CLAIMED);
  return Object.freeze({
    /**
     * `$1` now or null, `$2` kind, `$3` the previous page's last `due` (null for the first page), `$4`
     * its key, `$5` the page size plus one (the extra row says whether there is a next page) → per
     * limit key `{ limitkey, due, notdue, claimed, oldestdueatms, latenessms }`, most due first, then
     * by key (`collate "C"`: code-point order, whatever the database's collation).
     *
     * `queues` lists the queues with keyed SCHEDULED tasks (a loose index scan of the partial
     * `task_limit_key_idx`, one descent per queue: only keyed SCHEDULED tasks have entries); `sched`
     * then reads, per queue, the index range `(queue, kind)` of this kind only — an index-only scan,
     * no heap page once the visibility map is set (VACUUM, autovacuum), and no entry of another kind or
     * of an unkeyed task — and groups it by key (the grouping inside the lateral subquery keeps the
     * planner from turning it into a join over a sequential scan of `task`), then sums the queues. `held` groups the kind's CLAIMED keyed tasks from the
     * partial `task_claimed_idx` (every CLAIMED task: at most the fleet's concurrency, one heap fetch
     * each). Cost measured in docs/contract.md#key-backlog.
     */
    keyBacklog: `with recursive queues(queue) as (
  (select s.queue from ${task} s where s.state = ${S} and s.limit_key is not null order by s.queue limit 1)
  union all
  select (select s.queue from ${task} s where s.state = ${S} and s.limit_key is not null and s.queue > q.queue order by s.queue limit 1)
    from queues q
   where q.queue is not null
), sched as (
  select r.key, sum(r.due)::int as due, sum(r.notdue)::int as notdue, min(r.oldest) as oldest
    from queues q
   cross join lateral (
         select s.limit_key as key,
                count(*) filter (where s.due_at <= ${NOW}) as due,
                count(*) filter (where s.due_at > ${NOW}) as notdue,
                min(s.due_at) filter (where s.due_at <= ${NOW}) as oldest
           from ${task} s
          where s.state = ${S} and s.limit_key is not null and s.queue = q.queue and s.kind = $2::text
          group by s.limit_key) r
   where q.queue is not null
   group by r.key
), held as (
  select s.limit_key as key, count(*)::int as claimed
    from ${task} s
   where s.state = ${C} and s.limit_key is not null and s.kind = $2::text
   group by s.limit_key
), merged as (
  select coalesce(a.key, h.key) as key, coalesce(a.due, 0) as due, coalesce(a.notdue, 0) as notdue, coalesce(h.claimed, 0) as claimed, a.oldest
    from sched a
    full join held h on h.key = a.key
)
select m.key as limitkey, m.due, m.notdue, m.claimed,
       case when m.oldest is null then null else ${ms('m.oldest')} end as oldestdueatms,
       case when m.oldest is null then 0::float8 else greatest(0::float8, ${ms(NOW)} - ${ms('m.oldest')}) end as latenessms
  from merged m
 where $3::int is null or m.due < $3::int or (m.due = $3::int and m.key collate "C" > $4::text collate "C")
 order by m.due desc, m.key collate "C"
 limit $5::int`,
  });
}

export type KeyBacklogStatements = ReturnType<typeof keyBacklogStatements>;
