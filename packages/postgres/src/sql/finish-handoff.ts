/**
 * The pieces of the finish hand-off of migration 25 (`./finish-handoff-sql.ts`, which explains it)
 * that every statement deleting from `task` carries, so that the trigger `task_finished` learns of
 * the finished rows that need anything: the flags the DELETE returns, the CTE `finish_handoff`, and
 * the join that makes the statement run it — each marked, so the Citus dialect takes them out. A leaf
 * module (it imports quoting only), since `./sql.ts` and the other statement modules use it.
 */
import { literal, quoteIdent } from './quote.js';

/**
 * The transaction-local setting through which a DELETE from `task` hands its finished rows to the
 * trigger `task_finished`: JSON objects `{"s": schema, "id", "has_dependents", "waiting_for",
 * "held_due_at", "batch_id"}` (ids as decimal text), each followed by a comma; '' or unset when none.
 */
export const FINISHED_SETTING = 'postpone.finished';

/** Opens and closes every piece of text the hand-off adds to a statement, so the Citus dialect (no triggers there) can take them out again ({@link withoutFinishHandoff}). Never nested. */
const OPEN = '/* hand-off */';
const CLOSE = '/* end hand-off */';
const MARKED = /\/\* hand-off \*\/[\s\S]*?\/\* end hand-off \*\//g;

/** `text` marked as the hand-off's: present on plain PostgreSQL, taken out in the Citus dialect. `text` must hold no marked piece itself. */
export function handoffOnly(text: string): string {
  if (text.includes(OPEN)) throw new Error('finish-handoff: a marked piece inside another');
  return `${OPEN}${text}${CLOSE}`;
}

/**
 * What a DELETE from `task` aliased `t` returns for the hand-off, unmarked (comma included): the
 * row's id and the columns that say whether anything must follow its finish.
 */
export function finishFlagsRaw(t: string): string {
  return `, ${t}.id as handoff_id, ${t}.has_dependents as handoff_dependents, ${t}.waiting_for as handoff_waiting, ${t}.held_due_at as handoff_held_due_at, ${t}.batch_id as handoff_batch`;
}

/** {@link finishFlagsRaw}, marked: for the RETURNING of a DELETE from `task` in a CTE that {@link finishHandoffCte} reads. */
export function finishFlags(t: string): string {
  return handoffOnly(finishFlagsRaw(t));
}

/**
 * The CTE `finish_handoff`, unmarked (leading comma included), over the rows CTE `from` deleted
 * (returning {@link finishFlagsRaw}): ONE `set_config` for the whole statement, appending to
 * {@link FINISHED_SETTING} each row with dependents, held, in a batch, or — while a store has
 * `waitFor` callers (a live row of `task_waiter`, read once as an InitPlan) — any row. One aggregate,
 * so a statement of n rows costs O(n), whatever n. Not data-modifying: the statement must read it
 * (`cross join finish_handoff`, exactly one row) for it to run.
 */
export function finishHandoffCteRaw(schema: string, from: string): string {
  const setting = literal(FINISHED_SETTING);
  return `, finish_handoff as (
  select set_config(${setting}, coalesce(current_setting(${setting}, true), '') || coalesce(string_agg(json_build_object('s', ${literal(schema)}, 'id', g.handoff_id::text, 'has_dependents', g.handoff_dependents, 'waiting_for', g.handoff_waiting, 'held_due_at', g.handoff_held_due_at, 'batch_id', g.handoff_batch::text)::text || ',', ''), ''), true) as handed
    from ${from} g
   where g.handoff_dependents or g.handoff_waiting > 0 or g.handoff_batch is not null
      or (select exists (select 1 from ${quoteIdent(schema)}.task_waiter w where w.until > now()))
)`;
}

/** {@link finishHandoffCteRaw}, marked: placed right after the CTE of the DELETE. */
export function finishHandoffCte(schema: string, from: string): string {
  return handoffOnly(finishHandoffCteRaw(schema, from));
}

/** What makes a statement read `finish_handoff` (and so run it), unmarked: appended to the FROM of the statement's move to history. */
export const FINISH_HANDOFF_JOIN_RAW = ' cross join finish_handoff';

/** {@link FINISH_HANDOFF_JOIN_RAW}, marked. */
export const FINISH_HANDOFF_JOIN = handoffOnly(FINISH_HANDOFF_JOIN_RAW);

/** `text` without the pieces the hand-off added (the Citus dialect: no trigger reads them, and `task_waiter` is read on the coordinator): the statement as it was before migration 25. */
export function withoutFinishHandoff(text: string): string {
  return text.includes(OPEN) ? text.replace(MARKED, '') : text;
}
