/**
 * The id range of one shard group of a sharded deployment (`../sharded/sharded-store.ts`,
 * docs/scale.md#one-deployment-over-many-shard-groups), once, for both drivers and both dialects.
 *
 * Group `g` of a front owns the task ids `g·2⁵⁶ … (g+1)·2⁵⁶ − 1` (group 0 from 1), so an id names its
 * group in its high bits and every call by id reaches one group. The range is set on the schema's
 * identity sequence with `setval` (PostgreSQL 17 §9.17), not with `alter table … alter column id
 * restart`: Citus 13 refuses ALTER on the identity column and ALTER SEQUENCE of a distributed
 * table ("Altering a distributed sequence is currently not supported"), and accepts `setval` on the
 * coordinator, which draws every id of an insert routed through it. No migration: the range is a
 * setting of the deployment, like a restarted sequence, not a change of the schema's shape.
 */
import { literal, quoteIdent } from './quote.js';

/** Bits of an id below the group index: each group holds 2⁵⁶ − 1 ids (group 0: 2⁵⁶ − 1 from 1). */
export const SHARD_ID_BITS = 56;
/** Most groups one front can address: the index must fit in the 7 bits a positive `bigint` leaves above {@link SHARD_ID_BITS}. */
export const MAX_SHARD_GROUPS = 128;

/**
 * `$1` the first id of the group's range, `$2` its last: moves the `task` identity sequence of the
 * schema to the range's start when it is below it (`setval(…, first, false)`: the next id is
 * `first`), and reports the sequence's `last_value` before (`null`: never used) so the caller can
 * refuse a schema whose ids already passed the range's end. Run under the schema's migration lock
 * (`migrationLock` of `./sql.ts`) so two fronts migrating at once do not both move it.
 */
export function reserveIdRangeSql(schema: string): string {
  const seq = `pg_get_serial_sequence(${literal(`${quoteIdent(schema)}.task`)}, 'id')`;
  return `with s as (
  select q.last_value::text as last from pg_sequences q where format('%I.%I', q.schemaname, q.sequencename) = ${seq}
), moved as (
  select setval(${seq}, $1::bigint, false) as v
   where coalesce((select last::bigint from s), 0) < $1::bigint
)
select (select last from s) as last, (select count(*) from moved)::int as moved`;
}
