/**
 * Numbered schema migrations (graphile-worker style: numbered raw SQL, applied in order, each once).
 *
 * A migration, once released, never changes; a change to the schema is a new version. `migrate()`
 * in {@link ./store.ts} applies the missing versions inside one transaction holding an advisory lock.
 */
import { quoteIdent, STATE_CHECK_LIST } from './sql.js';
import { ADMIN_MIGRATION_VERSION, adminMigrationSql } from './admin-sql.js';

export interface Migration {
  /** 1, 2, 3 … in application order. */
  readonly version: number;
  readonly name: string;
  /** One or more statements, run with the simple query protocol (no parameters). */
  readonly sql: string;
}

/**
 * The migrations of one schema.
 *
 * Version 1 — SPEC.md §2:
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
    // Version 5 — store operations (list, retry, prune, stats): see ./admin-sql.ts.
    Object.freeze({ version: ADMIN_MIGRATION_VERSION, name: 'store operations', sql: adminMigrationSql(schema) }),
  ]);
}
