/**
 * Migration 25 — the finish hand-off (issue #29: "the claim and completion of tasks that use none of
 * these features cost the same as before"). Measured by `pnpm bench:feature-cost`
 * (evidence/bench/feature-cost.md): with migrations 18, 20 and 21 a completion of 50 plain tasks read
 * 516.5 shared buffers against 463.6 before them (+11 %) and took about 30 % more server time,
 * although their trigger functions did nothing for a plain task. The cause is the kind of trigger,
 * not its work: an AFTER DELETE trigger on `task` that is row-level or has a transition table
 * (`task_finished_notice` 18, `task_dependency_release` 20, `task_batch_members_finished` 21) makes
 * PostgreSQL fetch every deleted row once more and copy it into the transition table
 * (`ExecARDeleteTriggers`), whatever the trigger's WHEN condition or function then decides.
 *
 * So the deleted rows are no longer handed to the triggers by PostgreSQL; the statement that deletes
 * them hands over the few that need anything, itself:
 * - every DELETE from `task` of this code's statements returns the row's id and flags
 *   (`finishFlags`), and the statement's CTE `finish_handoff` (`finishHandoffCte`, read by its move
 *   to history) appends, in ONE `set_config` per statement, each row with dependents
 *   (`has_dependents`, migration 24), held (`waiting_for > 0`, 20), in a batch (`batch_id`, 21), or —
 *   while a store has `waitFor` callers (a live row of `task_waiter`, 18, read once per statement) —
 *   any row, as JSON, to the transaction-local setting {@link FINISHED_SETTING}. One aggregate per
 *   statement: a first version appended row by row (a `set_config` per row copies the growing text
 *   each time), and a completeMany of 2 000 tasks with a waiter present took 1.2 s instead of 0.09 s,
 *   one of 8 000 more than 30 s. `test/finish-handoff.test.ts` checks that every statement deleting
 *   from `task` carries it, and keeps that input.
 * - one statement-level trigger `task_finished` AFTER DELETE on `task`, without a transition table,
 *   so nothing per row: it reads and clears the setting, keeps this schema's entries, and runs what
 *   the three triggers ran, in their order — the batch counts and callback (21, on the store clock
 *   since 22), the dependency release and its cancel cascade (20, with 24's flag), the finish
 *   notice (18) — after the whole statement, so the history rows it reads are there (§39.4). A
 *   plain completion with nobody waiting hands nothing over: the trigger finds the setting empty
 *   and returns. (No WHEN condition on the setting: a statement-level trigger's WHEN is evaluated
 *   when the DELETE's own plan node ends, before the statement's `finish_handoff` CTE has run.)
 * - the cascade (dependents cancelled because a dependency ended DEAD or CANCELLED) is a loop in
 *   `task_finished`, one level per turn (`task_finished_dependents` returns the rows it cancelled),
 *   not a nested firing of the trigger: its own DELETE hands nothing over.
 * Nothing else changes: the same functions decide the same things under the same locks in the same
 * transaction. The setting is transaction-local (`set_config(…, true)`): a rolled-back statement or
 * savepoint takes its entries back with it.
 *
 * `minReader` 25: code older than 25 deletes without the hand-off, so with it running on this schema
 * dependents would never be released nor batches settled; `checkSchema()` makes such a process
 * refuse the schema with `SchemaVersionError` `SCHEMA_TOO_NEW` instead (README "Failure modes",
 * version skew). This code runs on a schema of 24 as well (`MIN_SCHEMA_VERSION`): there the old
 * triggers do the work and nothing reads the setting.
 */
import { TaskState } from '@postpone/core';
import { STORE_NOW } from './batch-clock-sql.js';
import { dependencyReleaseFunctionSql } from './dependency-flag-sql.js';
import { FINISH_NOTICE_QUEUE_LIMIT, finishChannel, MAX_IDS_PER_FINISH_NOTICE } from './progress-wait-sql.js';
import { FINISHED_SETTING, finishFlagsRaw } from './finish-handoff.js';
import { literal, quoteIdent } from './quote.js';

/** The migration number of the finish hand-off; kept in this one constant so it can be renumbered at merge. */
export const FINISH_HANDOFF_MIGRATION_VERSION = 25;

/** Replaces `from` by `to` in `text`, exactly once (a changed source is a build-time error, not a silent no-op). */
function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`finish-handoff-sql: expected exactly one ${JSON.stringify(from.slice(0, 60))}`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

/**
 * `task_finished_dependents(gone_rows jsonb) returns jsonb`: migration 24's `release_task_dependents()`
 * (20's release on 22's clock with 24's flag) as a function of the handed-over rows instead of a
 * trigger over the transition table `gone`. The same statements, so the same locks, order and
 * results, except the cascade: the dependents it cancels (a dependency ended DEAD or CANCELLED on a
 * `'cancel'` edge) are returned, in the hand-off's form, for `task_finished` to process next, instead
 * of being handed over by their DELETE to a nested firing of the trigger. The cascade is a loop, not
 * a recursion: before, each level nested two more PL/pgSQL calls, and a chain of about 700 levels
 * (390 with a first version of this migration) failed with 54001 "stack depth limit exceeded" — and
 * the reclaim or fail that finished the chain's root failed with it, every time (a fresh user's
 * attempt; `test/finish-handoff.test.ts` keeps a chain of 2 000).
 */
function dependentsFunctionSql(schema: string): string {
  const q = quoteIdent(schema);
  let fn = dependencyReleaseFunctionSql(schema);
  fn = replaceOnce(fn, `create or replace function ${q}.release_task_dependents() returns trigger`, `create or replace function ${q}.task_finished_dependents(gone_rows jsonb) returns jsonb`);
  fn = replaceOnce(fn, 'declare\n  doomed bigint[];\n', "declare\n  doomed bigint[];\n  cascaded jsonb := '[]';\n");
  fn = fn.replaceAll('return null;', 'return cascaded;').replaceAll('gone g', 'jsonb_to_recordset(gone_rows) as g(id bigint, has_dependents boolean, waiting_for integer, held_due_at timestamptz)');
  fn = replaceOnce(fn, ', t.progress, t.held_due_at\n    )\n', `, t.progress, t.held_due_at${finishFlagsRaw('t')}\n    ), moved as (\n`);
  fn = replaceOnce(
    fn,
    '    from cancelled g;',
    `    from cancelled g
    returning 1
    )
    select coalesce(jsonb_agg(jsonb_build_object('s', ${literal(schema)}, 'id', g.handoff_id::text, 'has_dependents', g.handoff_dependents, 'waiting_for', g.handoff_waiting, 'held_due_at', g.handoff_held_due_at, 'batch_id', g.handoff_batch::text)), '[]')
      into cascaded
      from cancelled g;`,
  );
  if (fn.includes('returns trigger') || /\bgone\b(?!_rows)/.test(fn)) throw new Error('finish-handoff-sql: the release function still reads the transition table');
  return fn;
}

/**
 * Migration 25: the functions, the three old triggers dropped, the one new trigger. See the module
 * comment. Re-runnable (`create or replace`, `drop trigger if exists`).
 */
export function finishHandoffMigrationSql(schema: string): string {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  const history = `${q}.task_history`;
  const batch = `${q}.task_batch`;
  return `${dependentsFunctionSql(schema)}
create or replace function ${q}.task_finished_batches(gone_rows jsonb) returns void
language plpgsql as $fn$
declare
  r record;
begin
  for r in
    select m.batch_id,
           count(*)::int as n,
           (count(*) filter (where m.state = ${literal(TaskState.DONE)}))::int as done,
           (count(*) filter (where m.state = ${literal(TaskState.DEAD)}))::int as dead,
           (count(*) filter (where m.state = ${literal(TaskState.CANCELLED)}))::int as cancelled,
           coalesce(max(m.finished_at), ${STORE_NOW}) as at
      from (select g.batch_id, h.finished_at, coalesce(h.state, ${literal(TaskState.DONE)}) as state
              from jsonb_to_recordset(gone_rows) as g(id bigint, batch_id bigint)
              left join lateral (select x.state, x.finished_at from ${history} x where x.id = g.id order by x.finished_at desc limit 1) h on true
             where g.batch_id is not null) m
     group by m.batch_id
     order by m.batch_id
  loop
    update ${batch}
       set remaining = remaining - r.n, done = done + r.done, dead = dead + r.dead, cancelled = cancelled + r.cancelled
     where id = r.batch_id;
    perform ${q}.task_batch_settle_at(r.batch_id, r.at);
  end loop;
end
$fn$;
create or replace function ${q}.task_finished_notice(gone_rows jsonb) returns void
language plpgsql as $fn$
declare
  payload text;
begin
  if not exists (select 1 from ${q}.task_waiter w where w.until > now()) then
    return;
  end if;
  if pg_notification_queue_usage() >= ${FINISH_NOTICE_QUEUE_LIMIT} then
    return;
  end if;
  for payload in
    select '{"op":"finished","ids":["' || string_agg(g.id, '","') || '"]}'
      from (select e.value->>'id' as id, (e.ord - 1) / ${MAX_IDS_PER_FINISH_NOTICE} as chunk
              from jsonb_array_elements(gone_rows) with ordinality as e(value, ord)) g
     group by g.chunk
  loop
    perform pg_notify(${literal(finishChannel(schema))}, payload);
  end loop;
end
$fn$;
create or replace function ${q}.task_finished() returns trigger
language plpgsql as $fn$
declare
  handed text := current_setting(${literal(FINISHED_SETTING)}, true);
  gone_rows jsonb;
  cascaded jsonb;
begin
  if handed is null or handed = '' then
    return null;
  end if;
  perform set_config(${literal(FINISHED_SETTING)}, '', true);
  select coalesce(jsonb_agg(e), '[]') into gone_rows
    from jsonb_array_elements(('[' || left(handed, -1) || ']')::jsonb) e
   where e->>'s' = ${literal(schema)};
  if jsonb_array_length(gone_rows) = 0 then
    return null;
  end if;
  -- One level of the cancel cascade per turn (the dependents cancelled because a dependency of this
  -- level ended DEAD or CANCELLED); bounded, as a chain is at most the tasks there are.
  for level in 1..1000000 loop
    perform ${q}.task_finished_batches(gone_rows);
    cascaded := ${q}.task_finished_dependents(gone_rows);
    perform ${q}.task_finished_notice(gone_rows);
    exit when jsonb_array_length(cascaded) = 0;
    gone_rows := cascaded;
  end loop;
  return null;
end
$fn$;
drop trigger if exists task_batch_members_finished on ${task};
drop trigger if exists task_dependency_release on ${task};
drop trigger if exists task_finished_notice on ${task};
drop trigger if exists task_finished on ${task};
create trigger task_finished after delete on ${task} for each statement execute function ${q}.task_finished();`;
}

/** The Citus rewrites of migration 25 (`./citus.ts`): no trigger there, as for 18, 20 and 21; the functions are created but never called. */
export function finishHandoffCitusRewrites(schema: string): { version: number; original: string; replacement: readonly string[]; why: string }[] {
  const q = quoteIdent(schema);
  const task = `${q}.task`;
  return [
    ...['task_batch_members_finished', 'task_dependency_release', 'task_finished_notice', 'task_finished'].map((name) => ({
      version: FINISH_HANDOFF_MIGRATION_VERSION,
      original: `drop trigger if exists ${name} on ${task}`,
      replacement: [],
      why: 'no trigger on Citus (see the next rewrite), hence none to drop',
    })),
    {
      version: FINISH_HANDOFF_MIGRATION_VERSION,
      original: `create trigger task_finished after delete on ${task} for each statement execute function ${q}.task_finished()`,
      replacement: [],
      why: 'Citus refuses triggers on distributed tables (XX000); the Citus statements carry no hand-off (`withoutFinishHandoff`), and the Citus store refuses dependencies and batches',
    },
  ];
}
