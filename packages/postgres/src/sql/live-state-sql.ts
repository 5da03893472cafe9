/**
 * Migration 12 — the live table holds live states only (docs/contract.md#live-and-history): a CHECK
 * `task_live_state` on `task`, `state in ('SCHEDULED', 'CLAIMED')`, so a DONE, DEAD or CANCELLED row
 * written into `task` (by hand, by a process of a version before migration 11, by a test fixture) is
 * refused with 23514 check_violation instead of sitting in the live table, where `getTask` would find
 * it before its history row and the claim's indexes would never drop it.
 */
import { literal, quoteIdent } from './quote.js';
import { HISTORY_STATES, MIGRATION_11_COLUMN_NAMES } from './history-sql.js';

/** The migration number of the live-state CHECK. */
export const LIVE_STATE_MIGRATION_VERSION = 12;

/** The name of the CHECK constraint of migration 12 on `task`. */
export const LIVE_STATE_CONSTRAINT = 'task_live_state';

/**
 * Migration 12, in this order, every step re-runnable:
 * 1. Any finished row still in `task` (only a process of a version before migration 11 writes one)
 *    moves to `task_history` as migration 11 moved history (`finished_at` its `updated_at`); the
 *    second run finds none.
 * 2. `add constraint task_live_state check (…) not valid`, only when the catalog (`pg_constraint`)
 *    does not list it yet: NOT VALID checks every row written from now on but not the rows already
 *    there, so it reads no row (PostgreSQL 17 ALTER TABLE, "ADD table_constraint … NOT VALID").
 * 3. `validate constraint`: scans `task` once to check the rows already there; a constraint already
 *    valid is not scanned again.
 * Locks (PostgreSQL 17 ALTER TABLE, Notes; §13.3.1): the ADD takes ACCESS EXCLUSIVE on `task` for an
 * instant (no scan); VALIDATE takes only SHARE UPDATE EXCLUSIVE during its scan, so claims and writes
 * go on. `migrate()` runs every version in one transaction, which keeps the ADD's ACCESS EXCLUSIVE
 * until commit, across the scan: the scan reads the live rows only (the backlog, not history), so
 * it is short; to keep writers going through it on a large backlog, run the two ALTER statements by
 * hand, each in its own transaction, before upgrading (the ADD below then finds the constraint and
 * skips, and the VALIDATE finds it valid).
 */
export function liveStateMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const live = `state in (${literal('SCHEDULED')}, ${literal('CLAIMED')})`;
  return `with gone as (
  delete from ${task} t where t.state in (${HISTORY_STATES.map(literal).join(', ')}) returning t.*
)
insert into ${q}.task_history (${MIGRATION_11_COLUMN_NAMES.join(', ')}, finished_at) select ${MIGRATION_11_COLUMN_NAMES.map((c) => `g.${c}`).join(', ')}, g.updated_at from gone g;
do $do$
begin
  if not exists (select 1 from pg_constraint
                  where conrelid = to_regclass(${literal(`${q}.task`)}) and conname = ${literal(LIVE_STATE_CONSTRAINT)}) then
    alter table ${task} add constraint ${quoteIdent(LIVE_STATE_CONSTRAINT)} check (${live}) not valid;
  end if;
end
$do$;
alter table ${task} validate constraint ${quoteIdent(LIVE_STATE_CONSTRAINT)};`;
}
