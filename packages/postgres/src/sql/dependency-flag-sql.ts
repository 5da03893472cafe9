/**
 * Migration 24 — what the dependency release costs a task that has no dependents (issue #29: "the
 * claim and completion of tasks that use none of these features cost the same as before"). Measured
 * by `pnpm bench:feature-cost` (evidence/bench/feature-cost.md): migration 20's trigger
 * `task_dependency_release` probed `task_dependency`'s primary key once per deleted row of EVERY
 * DELETE from `task`, about 2 shared buffers per completed task (+10 % of a plain task's buffers).
 */
import { batchClockMigrationSql } from './batch-clock-sql.js';
import { quoteIdent } from './quote.js';

/** The migration number of the dependency flag; kept in this one constant so it can be renumbered at merge. */
export const DEPENDENCY_FLAG_MIGRATION_VERSION = 24;

/**
 * `release_task_dependents` as the migrations before this one left it: migration 20's function with
 * migration 22's store clock (`./batch-clock-sql.ts` replaces it first), the whole
 * `create or replace function … $fn$;`.
 */
function releaseFunctionBefore(schema: string): string {
  const sql = batchClockMigrationSql(schema);
  const start = sql.indexOf(`create or replace function ${quoteIdent(schema)}.release_task_dependents()`);
  const end = sql.indexOf('$fn$;', start);
  if (start < 0 || end < 0) throw new Error('dependency-flag-sql: migration 22 no longer holds release_task_dependents');
  return sql.slice(start, end + '$fn$;'.length);
}

/** Replaces `from` by `to` in `text`, exactly once (a changed source is a build-time error, not a silent no-op). */
function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`dependency-flag-sql: expected exactly one ${JSON.stringify(from.slice(0, 60))} in the release function`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

/**
 * `release_task_dependents()` as migration 24 defines it (the `create or replace function … $fn$;`
 * statement): migration 22's function (20's on the store clock) with the early return and the flag
 * filter. A later migration that replaces the function again must start from this text, not from an
 * older one, or it undoes 24 (`test/dependency-flag.test.ts` would see the edge table scanned again).
 */
export function dependencyReleaseFunctionSql(schema: string): string {
  const q = quoteIdent(schema);
  let release = releaseFunctionBefore(schema);
  release = replaceOnce(
    release,
    'begin\n',
    `begin
  -- Migration 24: a statement that deleted no task with dependents and no held task has nothing to release.
  if not exists (select 1 from gone g where g.has_dependents or g.waiting_for > 0) then
    return null;
  end if;
`,
  );
  release = replaceOnce(release, 'perform 1 from gone g where exists (', 'perform 1 from gone g where g.has_dependents and exists (');
  return replaceOnce(release, `delete from ${q}.task_dependency d using gone g where d.dependency = g.id`, `delete from ${q}.task_dependency d using gone g where g.has_dependents and d.dependency = g.id`);
}

/**
 * Migration 24 — the dependency flag:
 * - `task.has_dependents boolean`, nullable without a default (no table rewrite, PostgreSQL 17
 *   ALTER TABLE, Notes; in no index): true on a live task that some edge of `task_dependency` names
 *   as its dependency, null on every other task.
 * - the statement-level trigger `task_dependency_mark` AFTER INSERT on `task_dependency` (transition
 *   table `added`): locks the named dependencies not yet flagged in id order (`for no key update`,
 *   so two schedules naming the same dependencies never wait on each other in a cycle) and sets
 *   `has_dependents`. Every way an edge is written sets the flag in the edge's own transaction,
 *   whatever code wrote the edge (code of migrations 20–23 included, during a rolling deploy).
 *   The schedule already holds the dependency `FOR KEY SHARE`, so its finish (a DELETE) still waits
 *   for the schedule's commit and then deletes the flagged row version (READ COMMITTED re-check,
 *   PostgreSQL 17 §13.2.1): the release sees the flag whenever it would have seen the edge. The
 *   flag's UPDATE takes `FOR NO KEY UPDATE` on the dependency row: a renewal or progress write of a
 *   RUNNING dependency waits for the scheduling transaction that links to it for the first time
 *   (before, only its finish did); a claim's SKIP LOCKED pick skips it meanwhile, as before.
 * - the flag written on the live dependencies of the edges already there.
 * - `release_task_dependents` (migration 20's function, on the store clock since 22) returns at once unless a deleted row has
 *   the flag or is itself a held task (`waiting_for > 0`): one scan of the transition table, no
 *   probe of `task_dependency` for a task without dependents; and it probes the edge table only for
 *   the flagged rows. The rest of the function (the release, the cascade) is migration 22's, unchanged.
 * The trigger stays statement-level: one run per DELETE statement, all its rows at once, the
 * dependents locked in id order (migration 20). Additive (a nullable column, a trigger, a function
 * replaced in place), no `minReader`. Re-runnable (`if not exists`, `create or replace`, `drop
 * trigger if exists`, an update that finds nothing the second time).
 */
export function dependencyFlagMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const release = dependencyReleaseFunctionSql(schema);
  return `alter table ${task} add column if not exists has_dependents boolean;
create or replace function ${q}.mark_task_dependencies() returns trigger
language plpgsql as $fn$
begin
  perform 1
    from (select t.id from ${task} t
           where t.id in (select a.dependency from added a) and t.has_dependents is not true
           order by t.id
             for no key update) x;
  update ${task} t set has_dependents = true
   where t.id in (select a.dependency from added a) and t.has_dependents is not true;
  return null;
end
$fn$;
drop trigger if exists task_dependency_mark on ${q}.task_dependency;
create trigger task_dependency_mark after insert on ${q}.task_dependency referencing new table as added for each statement execute function ${q}.mark_task_dependencies();
update ${task} t set has_dependents = true
 where t.id in (select d.dependency from ${q}.task_dependency d) and t.has_dependents is not true;
${release}`;
}

/** The Citus rewrites of migration 24 (`./citus.ts`): no trigger there (dependencies are refused on Citus, `DEPENDENCIES_UNSUPPORTED`). */
export function dependencyFlagCitusRewrites(schema: string): { version: number; original: string; replacement: readonly string[]; why: string }[] {
  const q = quoteIdent(schema);
  return [
    {
      version: DEPENDENCY_FLAG_MIGRATION_VERSION,
      original: `drop trigger if exists task_dependency_mark on ${q}.task_dependency`,
      replacement: [],
      why: 'no trigger on Citus (see the next rewrite), hence none to drop',
    },
    {
      version: DEPENDENCY_FLAG_MIGRATION_VERSION,
      original: `create trigger task_dependency_mark after insert on ${q}.task_dependency referencing new table as added for each statement execute function ${q}.mark_task_dependencies()`,
      replacement: [],
      why: 'Citus refuses statement-level triggers with transition tables; the Citus store refuses `after` (DEPENDENCIES_UNSUPPORTED), so no edge is ever written there',
    },
    {
      version: DEPENDENCY_FLAG_MIGRATION_VERSION,
      original: `update ${q}.task t set has_dependents = true
 where t.id in (select d.dependency from ${q}.task_dependency d) and t.has_dependents is not true`,
      replacement: [],
      why: 'no edge exists on Citus (dependencies are refused there), so there is nothing to flag; and a join of two distributed tables on a non-distribution column may be refused',
    },
  ];
}
