/**
 * The finish hand-off column of migration 25 (`./finish-handoff-sql.ts`, which explains it): what
 * every DELETE from `task` returns so that the trigger `task_finished` learns of the finished rows
 * that need anything. A leaf module (it imports quoting only), since `./sql.ts` and the other
 * statement modules use it.
 */
import { literal, quoteIdent } from './quote.js';

/**
 * The transaction-local setting through which a DELETE from `task` hands its finished rows to the
 * trigger `task_finished`: JSON objects `{"s": schema, "id", "has_dependents", "waiting_for",
 * "held_due_at", "batch_id"}` (ids as decimal text), each followed by a comma; '' or unset when none.
 */
export const FINISHED_SETTING = 'postpone.finished';

/** Opens the hand-off column, so the Citus dialect (no triggers there) can take it out again ({@link withoutFinishHandoff}). */
const HANDOFF_MARK = '/* finish hand-off, migration 25 */';

/** The hand-off column as {@link finishHandoff} writes it, for any schema and row alias. */
const HANDOFF_COLUMN = /,\n\s*\/\* finish hand-off, migration 25 \*\/ case [\s\S]*? end as finish_handoff/g;

/**
 * One more RETURNING column, `finish_handoff`, for a DELETE from `task` aliased `t` (comma included):
 * see the module comment. Its value is of no use to the caller (the setting's new text or null).
 * @param schema unquoted schema name
 * @param t the alias of `task` in the DELETE
 */
export function finishHandoff(schema: string, t: string): string {
  const q = quoteIdent(schema);
  const setting = literal(FINISHED_SETTING);
  return `,
         ${HANDOFF_MARK} case when ${t}.has_dependents or ${t}.waiting_for > 0 or ${t}.batch_id is not null or (select exists (select 1 from ${q}.task_waiter w where w.until > now()))
           then set_config(${setting}, coalesce(current_setting(${setting}, true), '') || json_build_object('s', ${literal(schema)}, 'id', ${t}.id::text, 'has_dependents', ${t}.has_dependents, 'waiting_for', ${t}.waiting_for, 'held_due_at', ${t}.held_due_at, 'batch_id', ${t}.batch_id::text)::text || ',', true) end as finish_handoff`;
}

/** `text` without its {@link finishHandoff} columns (the Citus dialect: no trigger reads them, and the subquery would read a table of the coordinator from a worker node). */
export function withoutFinishHandoff(text: string): string {
  return text.includes(HANDOFF_MARK) ? text.replace(HANDOFF_COLUMN, '') : text;
}

