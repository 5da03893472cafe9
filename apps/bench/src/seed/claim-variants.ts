/**
 * The store's real claim statement (`statements(schema).taskClaim` of `@postpone/postgres`) and the
 * seed's contrast: the same statement with the due condition judged by `clock_timestamp()` instead of
 * `now()`. `now()` is STABLE and can be an index condition; `clock_timestamp()` is VOLATILE and
 * cannot (PostgreSQL 17 §38.7, §9.9.5), so the index scan must filter row by row.
 *
 * The variant is derived from the imported text, never copied, so it follows the store's SQL.
 */
import { statements } from '@postpone/postgres';

/** The due predicate of the claim's inner SELECT, as the store writes it (`coalesce($1, now())`). */
const DUE_NOW = /(\bdue_at\s*<=\s*coalesce\(\$1::timestamptz,\s*)now\(\)/g;

/** The store's claim SQL for `schema`. Parameters: `$1` now (null: database clock), `$2` owner, `$3` lease ms, `$4` limit, `$5` queue, `$6` kinds (JSON text, null: every kind). */
export function claimSql(schema: string): string {
  return statements(schema).taskClaim;
}

/**
 * The claim SQL with `due_at <= clock_timestamp()` in place of `due_at <= now()`.
 * @throws Error when the store's statement no longer has exactly one such predicate
 */
export function clockTimestampClaimSql(schema: string): string {
  const sql = claimSql(schema);
  const found = sql.match(DUE_NOW)?.length ?? 0;
  if (found !== 1) throw new Error(`expected one "due_at <= coalesce($1::timestamptz, now())" in the claim SQL, found ${found}`);
  return sql.replace(DUE_NOW, '$1clock_timestamp()');
}

/** Parameters of an idle claim probe: database clock, a bench owner, 30 s lease, limit 10, the default queue, every kind. */
export const CLAIM_PROBE_PARAMS: readonly (string | number | null)[] = [null, 'bench-probe', 30_000, 10, 'default', null];
