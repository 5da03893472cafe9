/**
 * The SQL of `PostgresStore.extendMany`: one lease renewal for every attempt a worker holds. Kept out
 * of `./sql.ts` but following its conventions (`$1` now or null, JSON input as text, aliases without
 * underscores).
 */
import { TaskState } from '@postpone/core';
import { batchFence, literal, millis, NOW, quoteIdent } from './sql.js';

const C = literal(TaskState.CLAIMED);
const CLOCK = 'coalesce($1::timestamptz, clock_timestamp())';

/** The renewal statements of the store in `schema`. */
export function renewStatements(schema: string) {
  const task = `${quoteIdent(schema)}.task`;
  return Object.freeze({
    /**
     * `$1` now, `$2` JSON array of `{ id, attempt }` as text, `$3` lease ms → one `{ ord }` row (the
     * 1-based position in `$2`) per renewed lease. The guard of each item is `taskExtend`'s = core
     * `transition('extend')`: CLAIMED, same attempt, not cancel-requested, lease not yet expired; an
     * item that fails it is left alone (docs/contract.md#transitions). Rows are locked in id order
     * first (`for no key update`, the lock the UPDATE takes anyway: PostgreSQL 17 §13.3.2), so two
     * multi-row statements never wait on each other in a cycle; only rows that pass the whole guard
     * are locked, so an expired lease is never held from reclaim (which skips locked rows). Only `lease_until` changes — no
     * indexed column, not even `updated_at` — so every renewal can be a HOT update (migration 7,
     * PostgreSQL 17 §66.7).
     */
    taskExtendMany: `with input as (
  select x.id, x.attempt, x.ord
    from rows from (jsonb_to_recordset($2::text::jsonb) as (id bigint, attempt integer))
         with ordinality as x(id, attempt, ord)
), locked as materialized (
  select s.id
    from ${task} s
   where s.id = any(array(select i.id from input i))
     and exists (select 1 from input i where i.id = s.id and i.attempt = s.attempt)
     and s.state = ${C}
     and not s.cancel_requested
     and s.lease_until > ${NOW}
   order by s.id
   for no key update
)
update ${task} t
   set lease_until = ${CLOCK} + ${millis('$3')}
  from input i
 where ${batchFence('t', '   ')}
   and t.lease_until > ${NOW}
returning i.ord::int as ord`,
  });
}

export type RenewStatements = ReturnType<typeof renewStatements>;
