/**
 * Migration 13 — the effect is the handler's, not a library row (docs/contract.md#completion,
 * issue #24). Up to version 12 every DONE kept in history also inserted a row into the library's
 * `effect` table (primary key `task_id`) in the completing transaction: one more heap tuple, one more
 * index entry and their WAL per task, for a guarantee the completion already gives — only the holder
 * of the current attempt can delete the live row, once (the fenced DELETE), and history holds one row
 * per task. From this version the completion is the fenced `delete from task` plus the `insert into
 * task_history` (or the fenced delete alone, DONE not kept), and the history row of a DONE keeps the
 * worker that completed it in the new column `finished_by` (`Store.getCompletion`). A handler's local
 * effect is its own row, written through `work` / `ctx.tx` in the transaction that commits DONE.
 */
import { quoteIdent } from './quote.js';

/** The migration number of "the effect is the handler's" (renumber here at a merge). */
export const COMPLETION_MIGRATION_VERSION = 13;

/**
 * Migration 13, every step re-runnable:
 * 1. `task_history.finished_by text` (nullable, no default): the `owner` given to the complete that
 *    moved the task to DONE; null on every other row, and on DONE rows written before this version
 *    (their worker is in `effect`). Added to the partitioned table, so every partition, present and
 *    future (a day partition is made `like task_history`), has it; a nullable column without a
 *    default changes the catalog only, no row is rewritten (PostgreSQL 17 ALTER TABLE, Notes).
 *    It takes ACCESS EXCLUSIVE on `task_history` and its partitions, for the instant of the catalog
 *    change but, inside `migrate()`'s one transaction, until commit.
 * 2. The table `effect` stays as it is, unused by this code, and says so in its comment. Not dropped:
 *    during a rolling deploy the workers of version 12 and before still insert into it in every
 *    DONE transaction, and a drop would fail each of their completes (42P01) — the task would be
 *    reclaimed and run again. Kept, the old code runs unchanged (this migration is additive: no
 *    `minReader`) and its DONE rows simply have no `finished_by`. `prune` still deletes the rows
 *    old code left, with their tasks (`effectsDeleted`). A later migration may drop the table with
 *    `minReader` 13, once no process of version 12 or before runs.
 */
export function completionMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  return `alter table ${q}.task_history add column if not exists finished_by text;
comment on table ${q}.effect is 'Unused since migration 13 of Postpone (the effect is the handler''s own row): written only by code of version 12 or before; prune deletes its rows with their tasks. The worker of a DONE is task_history.finished_by.';`;
}
