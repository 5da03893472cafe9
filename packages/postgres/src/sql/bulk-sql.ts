/**
 * The SQL of the bulk operations (`cancelMany`, `retryMany`, `rescheduleMany`, `deleteMany`,
 * docs/contract.md#bulk-operations), once, for both drivers; conventions as in `./sql.ts` (`$1` is
 * `now` or null, ids as text, JSON as text, aliases without underscores). No migration: they read the
 * indexes that exist.
 *
 * Each statement is built for the filter's shape: a condition only for a field the filter gives,
 * each with its own typed parameter ({@link BulkParams}), so a prepared statement of postgres.js has
 * one plan per shape and the planner sees `kind = $n` as an index condition rather than
 * `($n is null or kind = $n)`, which it cannot use under a generic plan.
 *
 * A batch is two statements, each its own transaction (autocommit):
 * 1. {@link bulkStatements}`.pick`: the next `limit` ids matching the filter in one state group, in id
 *    order after a cursor, without locks. It walks an index: SCHEDULED rows of a kind through
 *    `(state, kind, id)` or `(kind, id) where SCHEDULED` (whichever the schema has) or
 *    `task_claim_idx (queue, kind, priority, due_at, id) where SCHEDULED` then a top-N sort, every
 *    SCHEDULED row in id order through the primary key, CLAIMED rows through
 *    `task_claimed_idx (id) where CLAIMED`; history through its partitioned `(id)`, `(kind, id)` or
 *    `(finished_at)` indexes. Checked by `test/bulk-plans.test.ts`.
 * 2. an act statement on those ids: the rows locked `order by id for update` (PostgreSQL 17 SELECT,
 *    "The Locking Clause": rows locked as the sort returns them, so batches and `completeMany`, which
 *    lock in id order too, never wait on each other in a cycle), the state and filter re-checked on
 *    the newest row version (§13.2.1), then the change. A claim skips the locked rows (SKIP LOCKED),
 *    so it never waits; a single-row complete or fail of a listed task waits at most one batch.
 */
import { type NormalizedBulkFilter, TaskState } from '@postpone/core';
import { FINISH_HANDOFF_JOIN, finishFlags, finishHandoffCte } from './finish-handoff.js';
import { historyInsert, taskRowColumns } from './history-sql.js';
import { literal, millis, NOW, notice, quoteIdent } from './sql.js';

const S = literal(TaskState.SCHEDULED);
const C = literal(TaskState.CLAIMED);
const CANCELLED = literal(TaskState.CANCELLED);

/** The positional parameters of one statement: `$1` is the store's now (or null) in a statement that reads the clock. */
export class BulkParams {
  readonly values: (string | number | boolean | null)[];
  /** @param now the store's now as `$1`; `undefined` for a statement without a clock (its first parameter is then `$1`). */
  constructor(now: string | null | undefined) {
    this.values = now === undefined ? [] : [now];
  }
  /** Appends `value`; returns its placeholder cast to `type`. */
  add(value: string | number | null, type: string): string {
    this.values.push(value);
    return `$${this.values.length}::${type}`;
  }
}

/** The parts of a filter a statement re-checks (states given separately). */
export type BulkFilterFields = Pick<NormalizedBulkFilter, 'kinds' | 'queue' | 'keyPrefix' | 'dueFrom' | 'dueBefore' | 'finishedFrom' | 'finishedBefore'>;

/** `and …` conditions on alias `t` for every field `f` gives, states as literals (at least one). */
export function filterConditions(t: string, states: readonly string[], f: BulkFilterFields | null, p: BulkParams): string {
  const parts = [states.length === 1 ? `${t}.state = ${literal(states[0] as string)}` : `${t}.state in (${states.map(literal).join(', ')})`];
  if (f !== null) {
    if (f.kinds !== null) {
      parts.push(f.kinds.length === 1 ? `${t}.kind = ${p.add(f.kinds[0] as string, 'text')}` : `${t}.kind = any(array(select jsonb_array_elements_text(${p.add(JSON.stringify(f.kinds), 'text')}::jsonb)))`);
    }
    if (f.queue !== null) parts.push(`${t}.queue = ${p.add(f.queue, 'text')}`);
    if (f.keyPrefix !== null) parts.push(`starts_with(${t}.key, ${p.add(f.keyPrefix, 'text')})`);
    if (f.dueFrom !== null) parts.push(`${t}.due_at >= ${p.add(f.dueFrom.toISOString(), 'timestamptz')}`);
    if (f.dueBefore !== null) parts.push(`${t}.due_at < ${p.add(f.dueBefore.toISOString(), 'timestamptz')}`);
    if (f.finishedFrom !== null) parts.push(`${t}.finished_at >= ${p.add(f.finishedFrom.toISOString(), 'timestamptz')}`);
    if (f.finishedBefore !== null) parts.push(`${t}.finished_at < ${p.add(f.finishedBefore.toISOString(), 'timestamptz')}`);
  }
  return parts.join('\n     and ');
}

/** The ids of a JSON array parameter (decimal text) as `bigint[]`, evaluated once (an InitPlan). */
function idArray(param: string): string {
  return `array(select jsonb_array_elements_text(${param}::jsonb)::bigint)`;
}

/** A statement and its parameters. */
export interface BulkStatement {
  readonly text: string;
  readonly values: readonly (string | number | boolean | null)[];
}

export function bulkStatements(schema: string) {
  const task = `${quoteIdent(schema)}.task`;
  const history = `${quoteIdent(schema)}.task_history`;
  const effect = `${quoteIdent(schema)}.effect`;
  const tableOf = (where: 'live' | 'history') => (where === 'live' ? task : history);

  return Object.freeze({
    /** No parameters → `{ maxid }`: the highest task id now; a filter walk leaves tasks above it (scheduled after the call began) alone. */
    maxId: `select greatest((select max(id) from ${task}), (select max(id) from ${history}))::text as maxid`,

    /**
     * The next `limit` ids after `after` (and at most `upTo`) matching `states` and `f`, in id
     * order, no locks → rows `{ id }`.
     */
    pick(where: 'live' | 'history', states: readonly string[], f: BulkFilterFields, after: string, upTo: string, limit: number): BulkStatement {
      const p = new BulkParams(undefined);
      const cond = filterConditions('t', states, f, p);
      const text = `select t.id::text as id from ${tableOf(where)} t
   where ${cond}
     and t.id > ${p.add(after, 'bigint')} and t.id <= ${p.add(upTo, 'bigint')}
   order by t.id
   limit ${p.add(limit, 'int')}`;
      return { text, values: p.values };
    },

    /** Counts for a dry run → rows `{ state, retried, n }` of the tasks matching `states` and `f` with id ≤ `upTo`. */
    count(where: 'live' | 'history', states: readonly string[], f: BulkFilterFields, upTo: string): BulkStatement {
      const p = new BulkParams(undefined);
      const cond = filterConditions('t', states, f, p);
      const retried = where === 'history' ? '(t.retried_as is not null)' : 'false';
      const text = `select t.state, ${retried} as retried, count(*)::int as n from ${tableOf(where)} t
   where ${cond} and t.id <= ${p.add(upTo, 'bigint')}
   group by 1, 2`;
      return { text, values: p.values };
    },

    /** `$1` ids (JSON text) → `{ id, state, retriedas }` of those that exist, live or finished: what an id's outcome rests on when the act missed it. */
    statesOf: `select t.id::text as id, t.state, t.retried_as::text as retriedas from ${task} t where t.id = any(${idArray('$1::text')})
union all
select t.id::text as id, t.state, t.retried_as::text as retriedas from ${history} t where t.id = any(${idArray('$1::text')})`,

    /**
     * Cancel of the listed ids, exactly as `taskCancel` of `./sql.ts` per row: SCHEDULED → CANCELLED,
     * moved to `task_history` in the same statement (a NOTIFY `cancelled`), CLAIMED → cancel
     * requested (a NOTIFY `cancelRequested`) → rows `{ id, state }` of the rows it changed.
     */
    cancel(now: string | null, ids: string, f: BulkFilterFields | null, states: readonly string[], channel: string): BulkStatement {
      const p = new BulkParams(now);
      const list = idArray(p.add(ids, 'text'));
      const cond = filterConditions('s', states, f, p);
      const ch = p.add(channel, 'text');
      return {
        text: `with target as materialized (
  select s.id, s.state from ${task} s
   where s.id = any(${list})
     and ${cond}
   order by s.id
   for update
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
select c.id::text as id, c.state as state,
       case when c.state = ${CANCELLED} then ${notice('cancelled', ch, 'c')} else ${notice('cancelRequested', ch, 'c')} end as notified
  from cancelled c`,
        values: p.values,
      };
    },

    /**
     * Retry of the listed finished ids, exactly as `taskRetry` of `./admin-sql.ts` per row: a NEW
     * SCHEDULED task (kind, queue, priority, payload, attempts and retry policy of the original,
     * `retry_of`), the original's `retried_as` set in the same statement; one already retried makes
     * nothing → rows `{ id, retriedas, newid }`, one per locked original.
     */
    retry(now: string | null, ids: string, f: BulkFilterFields | null, states: readonly string[], dueAt: string | null, delayMs: number, channel: string): BulkStatement {
      const p = new BulkParams(now);
      const list = idArray(p.add(ids, 'text'));
      const cond = filterConditions('o', states, f, p);
      const due = `coalesce(${p.add(dueAt, 'timestamptz')}, ${NOW} + ${millis(p.add(delayMs, 'float8'))})`;
      const ch = p.add(channel, 'text');
      return {
        text: `with orig as materialized (
  select o.id, o.kind, o.queue, o.priority, o.payload, o.max_attempts, o.retry, o.state, o.retried_as from ${history} o
   where o.id = any(${list})
     and ${cond}
   order by o.id
   for update
), ins as (
  insert into ${task} as n (kind, queue, priority, payload, state, due_at, attempt, max_attempts, retry, cancel_requested, created_at, updated_at, retry_of)
  select o.kind, o.queue, o.priority, o.payload, ${S}, ${due}, 0, o.max_attempts, o.retry, false, ${NOW}, ${NOW}, o.id
    from orig o
   where o.retried_as is null
   order by o.id
  returning n.id, n.retry_of, n.due_at
), link as (
  update ${history} t set retried_as = i.id from ins i where t.id = i.retry_of returning t.id
)
select o.id::text as id, o.retried_as::text as retriedas, i.id::text as newid,
       case when i.id is null then null else ${notice('scheduled', ch, 'i')} end as notified,
       (select count(*) from link)::int as linked
  from orig o left join ins i on i.retry_of = o.id`,
        values: p.values,
      };
    },

    /**
     * New due time for the listed SCHEDULED ids (fenced on SCHEDULED; attempt, failures and the rest
     * unchanged; a NOTIFY `scheduled` so timing wheels re-place it) → rows `{ id }` it moved. A task
     * still waiting for dependencies stays held: the new time becomes its own due time (`held_due_at`).
     */
    reschedule(now: string | null, ids: string, f: BulkFilterFields | null, dueAt: string | null, delayMs: number, channel: string): BulkStatement {
      const p = new BulkParams(now);
      const list = idArray(p.add(ids, 'text'));
      const cond = filterConditions('s', [TaskState.SCHEDULED], f, p);
      const due = `coalesce(${p.add(dueAt, 'timestamptz')}, ${NOW} + ${millis(p.add(delayMs, 'float8'))})`;
      const ch = p.add(channel, 'text');
      return {
        text: `with target as materialized (
  select s.id from ${task} s
   where s.id = any(${list})
     and ${cond}
   order by s.id
   for update
)
update ${task} t
   set due_at = case when t.waiting_for > 0 then t.due_at else ${due} end,
       held_due_at = case when t.waiting_for > 0 then ${due} else t.held_due_at end,
       updated_at = ${NOW}
  from target g
 where t.id = g.id and t.state = ${S}
returning t.id::text as id, ${notice('scheduled', ch, 't')} as notified`,
        values: p.values,
      };
    },

    /** Deletes the listed finished ids with their rows of the legacy `effect` table (written before migration 13) → rows `{ id, effects }` of the tasks deleted. */
    delete(ids: string, f: BulkFilterFields | null, states: readonly string[]): BulkStatement {
      const p = new BulkParams(undefined);
      const list = idArray(p.add(ids, 'text'));
      const cond = filterConditions('h', states, f, p);
      const text = `with doomed as materialized (
  select h.id from ${history} h
   where h.id = any(${list})
     and ${cond}
   order by h.id
   for update
), effects as (
  delete from ${effect} e using doomed d where e.task_id = d.id returning 1
), tasks as (
  delete from ${history} t where t.id = any(array(select d.id from doomed d)) returning t.id
)
select t.id::text as id, (select count(*) from effects)::int as effects from tasks t`;
      return { text, values: p.values };
    },
  });
}

export type BulkStatements = ReturnType<typeof bulkStatements>;
