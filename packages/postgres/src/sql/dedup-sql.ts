/**
 * Dedup key modes `'debounce'`, `'queueBehind'` and `'throttle'` (docs/contract.md#dedup-keys): the migration of the
 * throttle table and the statements that run, in one transaction, beside `taskInsertMany`.
 */
import { TaskState } from '@postpone/core';
import { literal, quoteIdent } from './quote.js';

/** The migration number of the dedup key modes (one constant, so it can be renumbered at a merge). */
export const DEDUP_MODES_MIGRATION_VERSION = 16;

/**
 * Migration 16 — the table `dedup_throttle`, one row per (kind, key) a throttle schedule created a
 * task for: `last_at` (the store's now at that creation), `closed_until` (`last_at` plus that
 * schedule's `throttleMs`: the throttle refuses new tasks of the key before it), and the task's
 * `task_id` and `due_at` as created (what a refused schedule returns). The task table's key index
 * frees a key when its task leaves the live table; this row outlives the task, which is what lets the
 * period hold after the task finished. A row whose `closed_until` has passed tells nothing a missing
 * row does not, so `prune()` deletes those. A new table: additive, no `minReader`; re-runnable.
 */
export function dedupModesMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  return `create table if not exists ${q}.dedup_throttle (
  kind text not null,
  key text not null,
  last_at timestamptz not null,
  closed_until timestamptz not null,
  task_id bigint,
  due_at timestamptz,
  primary key (kind, key)
);`;
}

const NOW = 'coalesce($1::timestamptz, now())';

/** The statements of the dedup key modes for one schema. */
export function dedupStatements(schema: string) {
  const q = quoteIdent(schema);
  const throttle = `${q}.dedup_throttle`;
  const task = `${q}.task`;
  return Object.freeze({
    /**
     * `$1` now, `$2` keys as JSON text `[{kind, key}]` (distinct) → `{ kind, key, throttled, taskid, dueatms }`, one row per key.
     *
     * The gate of a `'throttle'` schedule: makes the key's row exist and locks it until the
     * transaction ends, in (kind, key) order (two batches never wait on each other in a cycle). The
     * unique primary key decides the race of two first schedules (the second waits, then conflicts);
     * `do update` locks the row and returns its newest committed version even when this statement's
     * snapshot predates it (PostgreSQL 17 INSERT, "ON CONFLICT Clause"; §13.2.1). A new row is
     * `closed_until = -infinity`: open. `throttled` is `closed_until > now`. The update writes the
     * same values (no indexed column changes, so a HOT update, §66.7). Every throttle schedule of the
     * key waits here for the one before it to commit, so the check and the write that follows
     * (`throttleRecord`) are one step for every process: no read-then-write race.
     */
    throttleGate: `insert into ${throttle} as d (kind, key, last_at, closed_until)
select x.kind, x.key, '-infinity', '-infinity'
  from jsonb_to_recordset($2::text::jsonb) as x(kind text, key text)
 order by x.kind, x.key
on conflict (kind, key) do update set closed_until = d.closed_until
returning d.kind, d.key, d.closed_until > ${NOW} as throttled, d.task_id::text as taskid,
          floor(extract(epoch from d.due_at) * 1000)::float8 as dueatms`,
    /**
     * `$1` now, `$2` created tasks as JSON text `[{kind, key, id, dueAt, throttleMs}]` (`dueAt` ISO text) → no rows. After the
     * insert, in the gate's transaction (the rows are locked): each key's window closes until now +
     * `throttleMs`, and the task becomes the one a refused schedule returns.
     */
    throttleRecord: `update ${throttle} d
   set last_at = ${NOW}, closed_until = ${NOW} + (x."throttleMs"::float8 * interval '1 millisecond'), task_id = x.id::bigint, due_at = x."dueAt"
  from jsonb_to_recordset($2::text::jsonb) as x(kind text, key text, id text, "dueAt" timestamptz, "throttleMs" float8)
 where (d.kind, d.key) = (x.kind, x.key)`,
    /**
     * `$1` keys as JSON text `[{kind, key}]` → the ids of the CLAIMED tasks that gave up their key.
     *
     * Before a `'debounce'` or `'queueBehind'` insert, in its transaction: a CLAIMED task holding one of the keys hands
     * it over (`key` becomes null) so the insert that follows queues a new task behind it. The holders
     * are locked first in id order (the lock order of `completeMany` and `extendMany`); the update
     * re-checks `state` and `key` on the newest row version (§13.2.1), so a holder that finished or
     * was handed over meanwhile is left alone. Fencing is untouched: complete, fail and extend match
     * `(id, attempt, state)`, not the key.
     */
    releaseKeys: `with held as (
  select t.id
    from ${task} t
   where (t.kind, t.key) in (select x.kind, x.key from jsonb_to_recordset($1::text::jsonb) as x(kind text, key text))
     and t.key is not null
     and t.state = ${literal(TaskState.CLAIMED)}
   order by t.id
   for update
)
update ${task} t set key = null
  from held
 where t.id = held.id and t.state = ${literal(TaskState.CLAIMED)} and t.key is not null
returning t.id::text as id`,
    /** `$1` now → `{ deleted }`: the throttle rows whose window has reopened (`closed_until <= now`); a later throttle schedule finds the key open either way. */
    throttlePrune: `with gone as (delete from ${throttle} d where d.closed_until <= ${NOW} returning 1)
select count(*)::int as deleted from gone`,
  });
}

export type DedupStatements = ReturnType<typeof dedupStatements>;
