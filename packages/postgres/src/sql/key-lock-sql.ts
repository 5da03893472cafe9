/**
 * The dedup-key locks of `scheduleMany` (issue #26 item 5, README "Failure modes", batches over the
 * same tasks): before a batch looks for the live tasks holding its keys, it takes one advisory lock
 * per (kind, key), in the order of the lock keys, held until its transaction ends
 * (`pg_advisory_xact_lock`, PostgreSQL 17 §9.28.10). Every insert of a keyed task takes the lock of
 * its key first, so while a batch holds its keys no other scheduler can commit a new holder of one of
 * them: the batch's holder pick, run by the next statement with a fresh snapshot (READ COMMITTED,
 * §13.2.1), sees every holder and locks them all in id order, like `completeMany` / `extendMany`.
 * Without the locks a holder committed after the insert's snapshot was locked by `on conflict do
 * update` in key order, and a renewal holding it in id order could close a cycle (40P01).
 *
 * Two schedulers take their key locks in the same (sorted) order and hold no row lock of theirs while
 * waiting for one, so the key locks add no cycle; a hash collision between two keys only serialises
 * the two batches. The key is `hashtextextended` (a bigint) of the schema and the (kind, key) pair as
 * JSON, so two schemas never wait on each other and no (kind, key) text can be confused with another.
 */
import { literal } from './quote.js';

/** The advisory lock key (a bigint SQL expression) of the (kind, key) given by SQL text expressions, in `schema`. */
export function keyLockKey(schema: string, kind: string, key: string): string {
  return `hashtextextended(${literal(`postpone:key:${schema}:`)} || jsonb_build_array(${kind}, ${key})::text, 0)`;
}

/**
 * `$1` the batch as the JSON text `taskInsertMany` takes (only `kind` and `key` are read) → one row
 * per distinct lock key of the keyed inputs (none without keys). The locks are taken in key order:
 * PostgreSQL evaluates a volatile output expression after the sort (PostgreSQL 17 `make_sort_input_target`).
 */
export function keyLocksSql(schema: string): string {
  return `select pg_advisory_xact_lock(s.k)::text as locked
  from (select distinct ${keyLockKey(schema, 'x.kind', 'x.key')} as k
          from jsonb_to_recordset($1::text::jsonb) as x(kind text, key text)
         where x.key is not null) s
 order by s.k`;
}
