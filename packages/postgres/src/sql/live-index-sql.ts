/**
 * Migration 19 — the live table and history keep only the indexes their hot path needs (issue 24,
 * docs/contract.md#data-model). A claim turns a SCHEDULED row into a CLAIMED one: the update changes
 * `state`, which indexes read, so it is not heap-only (PostgreSQL 17 §66.7) and every index of `task`
 * whose predicate the new row version satisfies gets an entry (§11.8: a partial index gets none
 * for a row outside its predicate). Before this migration that was four entries per claim: the
 * primary key, `task_claimed_idx`, and the two full indexes of migration 4, `task_state_id_idx
 * (state, id)` and `task_state_kind_id_idx (state, kind, id)`, which only the list and the stats read.
 *
 * In this order, every step re-runnable:
 * 1. `task_scheduled_kind_idx (kind, id) where state = 'SCHEDULED'`: the list's id order within a
 *    kind, and the stats' counts per kind, for the one live state with a backlog. Its predicate is
 *    SCHEDULED, so a claim (the new version is CLAIMED) writes no entry into it; a schedule writes one,
 *    where it wrote two into the indexes it replaces.
 * 2. `task_state_id_idx` and `task_state_kind_id_idx` are dropped. What they served is now read so:
 *    SCHEDULED in id order from the primary key (the live table holds SCHEDULED and CLAIMED rows only,
 *    since migration 12, and CLAIMED rows are at most the fleet's concurrency, so a page skips few
 *    rows); SCHEDULED of a kind from step 1; CLAIMED from `task_claimed_idx (id) where state =
 *    'CLAIMED'` (migration 7), a kind filtered among those rows; failed live tasks (`hasError`) from
 *    `task_error_idx (state, id) where last_error is not null` (migration 4), which a claim writes only
 *    for a task that failed before. Checked at 1 M live rows by `test/live-list-plans.test.ts`.
 * A claim now writes two index entries (the primary key and `task_claimed_idx`), plus `task_key_idx`
 * for a keyed task and `task_error_idx` for a retried one; a schedule writes three (primary key,
 * `task_claim_idx`, step 1), plus `task_key_idx` for a keyed task.
 *
 * 3. History: `task_history_finished_idx`, a B-tree on `(finished_at)` that every finished task wrote
 *    an entry into, gives way to `task_history_finished_brin`, a BRIN index on the same column
 *    (PostgreSQL 17 §11.2, chapter 71). Rows enter history in finish order, so each block range of a
 *    partition covers a narrow span of `finished_at` and a BRIN index finds the rows before a cut-off
 *    as well as the B-tree did for prune; an insert into a block range not summarized yet (the new
 *    pages at the end of the table) writes nothing into it — ranges are summarized by vacuum. A
 *    finished task now writes two B-tree entries into history (`(id)` for getTask, cancel, complete's
 *    outcome reads and retry; `(kind, id)` for the list by kind and the DEAD counts), plus
 *    `task_history_error_idx` for a task with a last error; the day partitions do the rest of the
 *    finish-time reads (retention drops whole days).
 *
 * The index of step 1 is built in the migration transaction (a SHARE lock on `task`: inserts and
 * claims wait while it reads the live rows; PostgreSQL 17 CREATE INDEX); on a large backlog create it
 * CONCURRENTLY by hand first — the name matches and the step then skips. Dropping an index takes
 * ACCESS EXCLUSIVE on `task` for an instant. The BRIN index of step 3 reads every history partition
 * once, holding SHARE on each (completions wait, as they move rows in): on a large history build it by
 * hand first, CONCURRENTLY on each leaf partition, then `create index … on only task_history` and
 * ATTACH each (PostgreSQL 17 §5.12.2.2, "Partition Maintenance") — the name matches and the step skips. Code of migrations 11–18 runs on the result unchanged
 * (its statements name no index), so no `minReader`.
 */
import { quoteIdent } from './quote.js';

/** The migration number of the hot-path indexes of the live table and of history. */
export const LIVE_INDEX_MIGRATION_VERSION = 19;

/** Migration 19, see the module's docstring. */
export function liveIndexMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  return `create index if not exists task_scheduled_kind_idx on ${q}.task (kind, id) where state = 'SCHEDULED';
drop index if exists ${q}.task_state_id_idx;
drop index if exists ${q}.task_state_kind_id_idx;
drop index if exists ${q}.task_history_finished_idx;
create index if not exists task_history_finished_brin on ${q}.task_history using brin (finished_at);`;
}
