/**
 * Numbered schema migrations (graphile-worker style: numbered raw SQL, applied in order, each once).
 *
 * A migration, once released, never changes; a change to the schema is a new version. `migrate()`
 * (`PostgresStore` in `@postpone/postgres`) applies the missing versions inside one transaction holding an advisory lock.
 */
import { KEY_LIMIT_MIGRATION_VERSION, keyLimitMigrationSql } from './key-limit-sql.js';
import { KEY_RATE_MIGRATION_VERSION, keyRateMigrationSql } from './key-rate-sql.js';
import { quoteIdent, STATE_CHECK_LIST } from './sql.js';
import { ADMIN_MIGRATION_VERSION, adminMigrationSql } from './admin-sql.js';
import { COMPLETION_MIGRATION_VERSION, completionMigrationSql } from './completion-sql.js';
import { CRON_MIGRATION_VERSION, cronMigrationSql } from './cron-sql.js';
import { HISTORY_MIGRATION_VERSION, historyMigrationSql } from './history-sql.js';
import { LIVE_INDEX_MIGRATION_VERSION, liveIndexMigrationSql } from './live-index-sql.js';
import { LIVE_STATE_MIGRATION_VERSION, liveStateMigrationSql } from './live-state-sql.js';
import { PAUSE_MIGRATION_VERSION, pauseMigrationSql } from './pause-sql.js';
import { DEDUP_MODES_MIGRATION_VERSION, dedupModesMigrationSql } from './dedup-sql.js';
import { RATE_LIMIT_MIGRATION_VERSION, rateLimitMigrationSql } from './rate-limit-sql.js';
import { PROGRESS_MIGRATION_VERSION, progressMigrationSql } from './progress-wait-sql.js';
import { DEPENDENCY_MIGRATION_VERSION, dependencyMigrationSql } from './dependency-sql.js';
import { BATCH_MIGRATION_VERSION, batchMigrationSql } from './batch-sql.js';
import { BATCH_CLOCK_MIGRATION_VERSION, batchClockMigrationSql } from './batch-clock-sql.js';
import { DEPENDENCY_FLAG_MIGRATION_VERSION, dependencyFlagMigrationSql } from './dependency-flag-sql.js';
import { FINISH_HANDOFF_MIGRATION_VERSION, finishHandoffMigrationSql } from './finish-handoff-sql.js';

export interface Migration {
  /** 1, 2, 3 … in application order. */
  readonly version: number;
  readonly name: string;
  /** One or more statements, run with the simple query protocol (no parameters). */
  readonly sql: string;
  /**
   * The oldest code that still runs correctly on a schema with this migration applied, named by the
   * newest migration that code knows; absent when every older code does (the migration is
   * additive: columns nullable or with a constant default, new tables, indexes). `migrate()` records
   * it in the schema's `migration` table (`min_reader`), so code OLDER than this migration — which
   * cannot know it — reads it there and refuses to run (`SchemaVersionError` `SCHEMA_TOO_NEW`) when
   * its own version is below (docs/guides/deploy.md, "Version skew").
   */
  readonly minReader?: number;
}

/**
 * The migrations of one schema.
 *
 * Version 1 — docs/contract.md#data-model:
 * - `task`: the CHECK `(state = 'CLAIMED') = (lease_owner is not null and lease_until is not null)`
 *   rejects "running without a lease" (and a lease outside CLAIMED) at write time;
 *   the `state` CHECK list is generated from core `TASK_STATES`.
 * - `task_due_idx` on `(due_at) where state = 'SCHEDULED'` and `task_lease_idx` on
 *   `(lease_until) where state = 'CLAIMED'`: partial indexes hold only live rows, so their size does
 *   not grow with history (PostgreSQL 17 §11.8).
 * - `effect`: one local effect per task (primary key `task_id`), written in the DONE transaction.
 *
 * Version 2 — `task_due_idx` becomes `(due_at, id) where state = 'SCHEDULED'`: the claim orders by
 * `(due_at, id)`, and with `due_at` alone every claim sorted the whole group of tasks sharing one due
 * time (a bulk `scheduleMany` gives a backlog one due time), so its cost grew with the backlog
 * (measured in apps/bench). With `id` in the key the index yields the claim order directly.
 *
 * Version 3 — `failures`: the attempts a task has used up, counted apart from `attempt` (the claim
 * counter, which stays the fencing token). A fail and an expired lease reclaimed each add one, a
 * release (graceful hand-back) does not; DEAD when a failure brings `failures` to `max_attempts`
 * (docs/contract.md#attempts). Existing rows: under versions 1–2 every claim that ended counted against
 * `max_attempts`, and releases cannot be told apart after the fact, so a row gets the number of
 * its claims that have ended other than by completing — `attempt`, less the claim still running
 * (CLAIMED) or the one that completed (DONE). Every live task thus keeps exactly the attempts it had
 * left before the upgrade (conservative: releases made before it stay counted), and the new rules
 * apply from the next claim, fail, reclaim or release on. Only rows whose count is above 0 are
 * written (a task DONE at its first attempt, the bulk of history, keeps the default 0); adding a
 * column with a constant default rewrites no rows (PostgreSQL 17 ALTER TABLE, Notes).
 *
 * Version 4 — store operations (list, retry, prune, stats): see `./admin-sql.ts`.
 *
 * Version 5 — `trace_context`: the W3C trace context given at schedule time (core `TraceContext`,
 * `{"traceparent":…,"tracestate":…}`), null when none was given. A nullable column without a default
 * is added without rewriting the table (PostgreSQL 17 ALTER TABLE, Notes); a null costs one bit of
 * the row's null bitmap.
 *
 * Version 6 — dedup keys (docs/contract.md#dedup-keys): a nullable `key` column and the partial
 * unique index `task_key_idx` on `(kind, key) where state in ('SCHEDULED', 'CLAIMED') and key is not
 * null`: at most one live task per (kind, key), decided by the index (PostgreSQL 17 §11.6, §11.8)
 * and used as the arbiter of `insert … on conflict` (INSERT, "ON CONFLICT Clause"). Terminal rows
 * and rows without a key are outside it, so a key is free again once its task is terminal and the
 * index holds only keyed live rows. The column is new and null everywhere, so building the index
 * reads the table once and inserts no entry. Written to be re-runnable (`if not exists`), like
 * version 5: migrate_concurrently runs it once before `migrate()` applies it.
 *
 * Version 7 — vacuum settings and HOT renewals (docs/contract.md#vacuum):
 * - `task_lease_idx (lease_until)` is replaced by `task_claimed_idx (id) where state = 'CLAIMED'`,
 *   and a renewal no longer writes `updated_at` (indexed by `task_finished_idx`). A renewal then
 *   changes no column any index reads, so PostgreSQL can make it a heap-only tuple (HOT) update: the
 *   new row version goes on the same page and no index gets an entry (PostgreSQL 17 §66.7, "Heap-Only
 *   Tuples"). Reclaim reads the CLAIMED rows through `task_claimed_idx` and filters `lease_until`
 *   among them: at most `concurrency × workers` rows, the tasks being run now.
 * - `fillfactor = 90`: new pages keep a tenth free, so a renewal's new version fits beside the old
 *   one (HOT needs room on the same page; §66.7, CREATE TABLE "fillfactor").
 * - autovacuum triggers on a count of dead rows, not a fraction of the table
 *   (`autovacuum_vacuum_scale_factor = 0`, `autovacuum_vacuum_threshold = 1000`): the default, 20 % of
 *   the table, means one vacuum per 200 000 dead rows once history reaches a million rows, while the
 *   claim's index keeps every dead entry until then. Oban's scaling guide gives the same advice (scale
 *   factor 0, a threshold of 100); graphile-worker, pg-boss and River ship no table settings. 1 000
 *   rather than 100 because the table still holds history, so each vacuum has more to read; the
 *   visibility map lets it skip the all-visible pages of history (§24.1.5). Analyze likewise after
 *   5 000 changed rows (`autovacuum_analyze_scale_factor = 0`), so the planner's view of the live
 *   rows stays current.
 * `alter table … set` takes a SHARE UPDATE EXCLUSIVE lock, which does not block reads or writes; the
 * new index is built in the migration transaction over CLAIMED rows only, but it reads the whole
 * table while blocking writes (on a large table, create it CONCURRENTLY by hand first — the name
 * matches). Re-runnable (`if not exists`, `if exists`), like versions 5–6.
 *
 * Version 8 — `retry`: the task's own retry policy given at schedule (core `RetryPolicy`,
 * `{"maxAttempts":…,"baseMs":…,"capMs":…,"jitter":…}`, only the fields given; docs/contract.md#retry-policy),
 * null when it has none. A nullable column without a default: no table rewrite (PostgreSQL 17 ALTER
 * TABLE, Notes); existing rows read null (no policy of their own). No index: it is read only with the
 * row it belongs to (claim, getTask), never searched. Re-runnable (`if not exists`), like versions 5–6.
 *
 * Version 9 — recurring schedules (docs/contract.md#recurring-schedules): the table `cron_schedule`
 * with each schedule's watermark; see `./cron-sql.ts`. Re-runnable (`create table if not exists`).
 *
 * Version 10 — queues and priorities (docs/contract.md#queues, #priorities): `queue text not null
 * default 'default'` and `priority smallint not null default 0` (constant defaults: no table rewrite,
 * PostgreSQL 17 ALTER TABLE, Notes), and the claim's index becomes `task_claim_idx` on `(queue, kind,
 * priority, due_at, id) where state = 'SCHEDULED'`, replacing `task_due_idx`. A claim orders by
 * `priority desc, due_at, id` and takes `due_at <= now`: no single index range yields that order
 * when priorities differ, so the claim walks the index per (kind, priority) level — the levels found by
 * a loose index scan (one descent each), each level's due rows a range that stops at the first row
 * not yet due (`taskClaim` in `./sql.ts`). Its cost grows with the number of levels, never with
 * history, other queues or other kinds. The new index is built first, then the old one dropped:
 * `create index concurrently` would not block writers, but it cannot run inside a transaction block
 * (PostgreSQL 17 CREATE INDEX, "Building Indexes Concurrently") and `migrate()` applies every
 * version in one transaction under its advisory lock, so this build holds a SHARE lock on `task`
 * (inserts and claims wait; reads go on) for as long as it reads the SCHEDULED rows — the partial
 * index reads the table once but indexes only the live backlog. To avoid that pause on a large
 * table, run the `create index concurrently if not exists …` by hand before upgrading: the
 * statement below then finds it and skips. Re-runnable (`if not exists`, `if exists`), like 5–9.
 *
 * Version 11 — live and history apart (docs/contract.md#live-and-history): finished tasks move to
 * `task_history`, partitioned by state, then by UTC day of `finished_at`, so retention drops whole
 * partitions; existing DONE, CANCELLED and DEAD rows move in the migration; see `./history-sql.ts`.
 * Re-runnable (`if not exists`, `create or replace`, a move that finds nothing the second time).
 *
 * Version 12 — the live table holds live states only: the CHECK `task_live_state` `(state in
 * ('SCHEDULED', 'CLAIMED'))` on `task`, added NOT VALID when the catalog does not list it (no scan;
 * ACCESS EXCLUSIVE for an instant), then VALIDATE CONSTRAINT, which scans the live rows holding only
 * SHARE UPDATE EXCLUSIVE (PostgreSQL 17 ALTER TABLE, Notes) — inside `migrate()`'s one transaction
 * the ADD's lock is kept until commit, so run both by hand first on a large backlog. A finished row
 * still in `task` (written by a process older than version 11) moves to history first. See
 * `live-state-sql.ts` of `@postpone/postgres`. Re-runnable (a catalog check, a VALIDATE
 * of a valid constraint does nothing, a move that finds nothing).
 *
 * Version 13 — the effect is the handler's, not a library row (docs/contract.md#completion): the
 * nullable column `task_history.finished_by`, the worker whose complete moved the task to DONE
 * (`Store.getCompletion`), and no more writes to `effect`: the completion is the fenced delete from
 * `task` plus the insert into `task_history`, in one statement. The table `effect` is kept, unused
 * by this code and commented so: workers of version 12 and before still insert into it during a
 * rolling deploy, and dropping it would fail each of their completes; keeping it makes the
 * migration additive (no `minReader`). A later migration may drop it with `minReader` 13. Catalog
 * only (a nullable column without a default: no rewrite). See `./completion-sql.ts`.
 * Re-runnable (`if not exists`; a comment set again).
 *
 * Version 14 — only the indexes the hot path needs on the live table: `task_state_id_idx` and
 * `task_state_kind_id_idx` (migration 4, full indexes every claim wrote) give way to
 * `task_scheduled_kind_idx (kind, id) where state = 'SCHEDULED'`, which a claim does not write: a claim
 * writes two index entries instead of four; history's B-tree on `finished_at` becomes a BRIN index,
 * so a finished task writes two B-tree entries into history instead of three. See `live-index-sql.ts` of `@postpone/postgres`.
 * Re-runnable (`if not exists`, `if exists`).
 *
 * Version 15 — paused queues and kinds (docs/contract.md#pause-and-resume): the table `pause`, one row
 * per paused queue or kind, primary key `(scope, name)`; the claim and peek leave paused work out.
 * See `./pause-sql.ts`. A new table: additive, no `minReader`. This code runs on a schema before 15
 * too (it claims without the pause check until the schema has it), so `MIN_SCHEMA_VERSION` does not need 15.
 * Re-runnable (`create table if not exists`).
 *
 * Version 16 — dedup key modes (docs/contract.md#dedup-keys): the table `dedup_throttle`, one row
 * per (kind, key) that `onConflict: 'throttle'` created a task for, with the time until which the
 * key's window stays closed; it outlives the task, so the period holds after the task finished. A new
 * table: additive, no `minReader` (older code never reads it). See `./dedup-sql.ts`. Re-runnable
 * (`create table if not exists`).
 *
 * Version 17 — rate limits (docs/contract.md#rate-limits): the table `rate_limit`, one row per
 * declared limit of a kind or a queue with its sliding log of claim times; see `./rate-limit-sql.ts`.
 * A new table only (no `minReader`): code that does not know it applies no limit. Re-runnable.
 *
 * Version 18 — progress and finish notices (docs/contract.md#progress, #awaiting-a-result): a
 * nullable `progress jsonb` on `task` and `task_history` (in no index: progress writes are HOT
 * updates), the statement-level trigger `task_finished_notice` that announces every task leaving
 * the live table on the schema's finish channel while a store has `waitFor` callers, and the table
 * `task_waiter` recording those stores; see `./progress-wait-sql.ts`. Additive, re-runnable.
 *
 * Version 19 — per-key concurrency and fair share (docs/contract.md#per-key-concurrency): a nullable
 * `task.limit_key`, the partial index `task_limit_key_idx` (keyed tasks only) and the table
 * `key_limit`; see `./key-limit-sql.ts`. Additive (no `minReader`), re-runnable.
 *
 * Version 24 — the dependency flag (docs/contract.md#dependencies): a nullable `task.has_dependents`,
 * set by the trigger `task_dependency_mark` whenever an edge names a task as its dependency, and
 * migration 20's release trigger returning at once for a DELETE of tasks without it: a completion of
 * a task without dependents no longer probes `task_dependency` (measured by `pnpm bench:feature-cost`,
 * evidence/bench/feature-cost.md); see `./dependency-flag-sql.ts`. Additive (no `minReader`), re-runnable.
 *
 * Version 25 — the finish hand-off (docs/contract.md#live-and-history): the three AFTER DELETE
 * triggers of 18, 20 and 21, which made PostgreSQL fetch and copy every deleted row (+1 shared buffer
 * per plain completed task), give way to one statement-level trigger `task_finished` without a
 * transition table; each DELETE from `task` hands the rows that need anything (dependents, held,
 * batch member, or any while someone waits) to it through a transaction-local setting; see
 * `./finish-handoff-sql.ts`. `minReader` 25: older code deletes without the hand-off. Re-runnable.
 *
 * @param schema unquoted schema name
 */
export function migrations(schema: string): readonly Migration[] {
  const q = quoteIdent(schema);
  return Object.freeze([
    Object.freeze({
      version: 1,
      name: 'task and effect',
      sql: `create table ${q}.task (
  id bigint generated always as identity primary key,
  kind text not null,
  payload jsonb not null default 'null'::jsonb,
  state text not null check (state in (${STATE_CHECK_LIST})),
  due_at timestamptz not null,
  attempt integer not null default 0 check (attempt >= 0),
  max_attempts integer not null check (max_attempts >= 1),
  lease_owner text,
  lease_until timestamptz,
  cancel_requested boolean not null default false,
  result jsonb,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint task_lease_iff_claimed check ((state = 'CLAIMED') = (lease_owner is not null and lease_until is not null))
);
create index task_due_idx on ${q}.task (due_at) where state = 'SCHEDULED';
create index task_lease_idx on ${q}.task (lease_until) where state = 'CLAIMED';
create table ${q}.effect (
  task_id bigint primary key references ${q}.task (id),
  attempt integer not null,
  worker text not null,
  created_at timestamptz not null default now()
);`,
    }),
    Object.freeze({
      version: 2,
      name: 'due index in claim order',
      sql: `drop index ${q}.task_due_idx;
create index task_due_idx on ${q}.task (due_at, id) where state = 'SCHEDULED';`,
    }),
    Object.freeze({
      version: 3,
      name: 'failures counted apart from attempt',
      sql: `alter table ${q}.task add column failures integer not null default 0 check (failures >= 0);
update ${q}.task
   set failures = attempt - case when state in ('CLAIMED', 'DONE') then 1 else 0 end
 where attempt > case when state in ('CLAIMED', 'DONE') then 1 else 0 end;`,
    }),
    // Version 4 — store operations (list, retry, prune, stats): see ./admin-sql.ts.
    Object.freeze({ version: ADMIN_MIGRATION_VERSION, name: 'store operations', sql: adminMigrationSql(schema) }),
    Object.freeze({
      version: 5,
      name: 'trace context',
      sql: `alter table ${q}.task add column if not exists trace_context jsonb;`,
    }),
    Object.freeze({
      version: 6,
      name: 'dedup keys',
      sql: `alter table ${q}.task add column if not exists key text;
create unique index if not exists task_key_idx on ${q}.task (kind, key) where state in ('SCHEDULED', 'CLAIMED') and key is not null;`,
    }),
    Object.freeze({
      version: 7,
      name: 'vacuum settings and HOT renewals',
      sql: `alter table ${q}.task set (fillfactor = 90, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000);
create index if not exists task_claimed_idx on ${q}.task (id) where state = 'CLAIMED';
drop index if exists ${q}.task_lease_idx;`,
    }),
    Object.freeze({
      version: 8,
      name: 'retry policy',
      sql: `alter table ${q}.task add column if not exists retry jsonb;`,
    }),
    // Version 9 — recurring schedules: see ./cron-sql.ts.
    Object.freeze({ version: CRON_MIGRATION_VERSION, name: 'cron schedules', sql: cronMigrationSql(schema) }),
    Object.freeze({
      version: 10,
      name: 'queues and priorities',
      sql: `alter table ${q}.task add column if not exists queue text not null default 'default';
alter table ${q}.task add column if not exists priority smallint not null default 0;
create index if not exists task_claim_idx on ${q}.task (queue, kind, priority, due_at, id) where state = 'SCHEDULED';
drop index if exists ${q}.task_due_idx;`,
    }),
    // Version 11 — live and history apart: see ./history-sql.ts.
    Object.freeze({ version: HISTORY_MIGRATION_VERSION, name: 'live and history apart', sql: historyMigrationSql(schema) }),
    // Version 12 — live states only in the live table: see live-state-sql.ts of @postpone/postgres.
    // Code from before version 11 writes finished tasks into `task`, which the CHECK of 12 refuses (23514).
    Object.freeze({ version: LIVE_STATE_MIGRATION_VERSION, name: 'live table holds live states', sql: liveStateMigrationSql(schema), minReader: 11 }),
    // Version 13 — the effect is the handler's: `task_history.finished_by`, `effect` no longer written; see ./completion-sql.ts.
    Object.freeze({ version: COMPLETION_MIGRATION_VERSION, name: 'effect left to the handler', sql: completionMigrationSql(schema) }),
    // Version 14 — only the indexes the hot path needs on the live table: see live-index-sql.ts of @postpone/postgres.
    Object.freeze({ version: LIVE_INDEX_MIGRATION_VERSION, name: 'hot-path indexes of the live table and history', sql: liveIndexMigrationSql(schema) }),
    // Version 15 — paused queues and kinds: see ./pause-sql.ts.
    Object.freeze({ version: PAUSE_MIGRATION_VERSION, name: 'paused queues and kinds', sql: pauseMigrationSql(schema) }),
    // Version 16 — dedup key modes (the throttle table): see ./dedup-sql.ts.
    Object.freeze({ version: DEDUP_MODES_MIGRATION_VERSION, name: 'dedup key modes', sql: dedupModesMigrationSql(schema) }),
    // Version 17 — rate limits: see ./rate-limit-sql.ts. Additive (a new table), no minReader.
    Object.freeze({ version: RATE_LIMIT_MIGRATION_VERSION, name: 'rate limits', sql: rateLimitMigrationSql(schema) }),
    // Version 18 — progress and finish notices: see ./progress-wait-sql.ts.
    Object.freeze({ version: PROGRESS_MIGRATION_VERSION, name: 'progress and finish notices', sql: progressMigrationSql(schema) }),
    // Version 19 — per-key concurrency and fair share: see ./key-limit-sql.ts. Additive, no minReader.
    Object.freeze({ version: KEY_LIMIT_MIGRATION_VERSION, name: 'per-key concurrency', sql: keyLimitMigrationSql(schema) }),
    // Version 20 — dependencies: see ./dependency-sql.ts. Additive (nullable columns, a new table, a trigger), no minReader.
    Object.freeze({ version: DEPENDENCY_MIGRATION_VERSION, name: 'dependencies', sql: dependencyMigrationSql(schema) }),
    // Version 21 — batches with a callback: see ./batch-sql.ts. Additive (a nullable column, a table, a trigger), no minReader.
    Object.freeze({ version: BATCH_MIGRATION_VERSION, name: 'batches with a callback', sql: batchMigrationSql(schema) }),
    // Version 22 — batches and releases on the store's clock: see ./batch-clock-sql.ts. Functions replaced (same signatures) or added, no minReader.
    Object.freeze({ version: BATCH_CLOCK_MIGRATION_VERSION, name: 'batches and releases on the store clock', sql: batchClockMigrationSql(schema) }),
    // Version 23 — per-key rate limits: see ./key-rate-sql.ts. Additive (new tables), no minReader.
    Object.freeze({ version: KEY_RATE_MIGRATION_VERSION, name: 'per-key rate limits', sql: keyRateMigrationSql(schema) }),
    // Version 24 — the dependency flag: a completion without dependents skips the edge probe; see ./dependency-flag-sql.ts. Additive, no minReader.
    Object.freeze({ version: DEPENDENCY_FLAG_MIGRATION_VERSION, name: 'dependency flag', sql: dependencyFlagMigrationSql(schema) }),
    // Version 25 — the finish hand-off: one statement-level trigger without a transition table; see ./finish-handoff-sql.ts. minReader 25.
    Object.freeze({ version: FINISH_HANDOFF_MIGRATION_VERSION, name: 'finish hand-off', sql: finishHandoffMigrationSql(schema), minReader: FINISH_HANDOFF_MIGRATION_VERSION }),
  ]);
}

/** The newest migration this code knows (and `migrate()` applies). */
export const SCHEMA_VERSION: number = migrations('postpone').at(-1)?.version ?? 0;

/**
 * The oldest schema this code runs on: the newest migration whose objects its statements use
 * (migration 24: every DELETE from `task` hands over `has_dependents` (24), `waiting_for` (20) and
 * `batch_id` (21) and reads `task_waiter` (18), `./finish-handoff-sql.ts`; before it 18, the
 * `progress` column every move to `task_history` names, and 13, `task_history.finished_by`). On a
 * schema of 24 the transition-table triggers still do the finish work and the hand-off is unread. `checkSchema()` of `PostgresStore` refuses an
 * older schema with `SchemaVersionError` `SCHEMA_BEHIND`; on a schema between it and
 * {@link SCHEMA_VERSION} the code works, so a rolling deploy may apply a later additive migration
 * under workers of this code (evidence `migrate_concurrently`). Raise it when a statement
 * starts to need a newer migration.
 */
export const MIN_SCHEMA_VERSION = Math.max(COMPLETION_MIGRATION_VERSION, PROGRESS_MIGRATION_VERSION, DEPENDENCY_FLAG_MIGRATION_VERSION);
