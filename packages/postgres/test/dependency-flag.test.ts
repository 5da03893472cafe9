/**
 * Migration 24, the dependency flag (docs/contract.md#dependencies, `src/sql/dependency-flag-sql.ts`):
 * - a completion of tasks that no edge names does not read `task_dependency` at all (its scans
 *   counted by `pg_stat_xact_user_tables` in the completing transaction: 0), while a completion of a
 *   dependency does (so the count can tell);
 * - linking sets `has_dependents` on the dependency only, and its finish releases the dependent;
 * - edges written before migration 24 (by code that does not know the flag) are flagged by its
 *   back-fill, and their dependents are released after the upgrade.
 */
import { HELD_DUE_AT_MS, TaskState } from '@postpone/core';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { DEPENDENCY_FLAG_MIGRATION_VERSION, migrations, statements } from '../src/index.js';
import { Admin, migratedKit, makeKit } from './support/kits.js';

const { admin, kit } = migratedKit('dependency_flag');

/** Completes `items` with the store's `taskCompleteManyFenced` in one transaction and returns the scans of `task_dependency` it made. */
async function edgeScansOfCompletion(schema: string, items: { id: string; attempt: number }[]): Promise<{ done: number; scans: number }> {
  const client = new pg.Client({ connectionString: kit.url });
  await client.connect();
  try {
    await client.query('begin');
    const json = JSON.stringify(items.map((i) => ({ id: i.id, attempt: i.attempt, owner: 'w', result: null })));
    const done = await client.query(statements(schema).taskCompleteManyFenced, [null, json]);
    const { rows } = await client.query<{ scans: string }>(
      `select (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::text as scans from pg_stat_xact_user_tables where schemaname = $1 and relname = 'task_dependency'`,
      [schema],
    );
    await client.query('commit');
    return { done: done.rows.length, scans: Number(rows[0]?.scans ?? Number.NaN) };
  } finally {
    await client.end();
  }
}

describe('dependency flag (migration 24)', () => {
  it('a completion of 50 tasks without dependents does not read the edge table; one of a dependency does', { timeout: 60_000 }, async () => {
    const store = kit.store({ schema: admin.schema });
    // An unrelated edge, so the edge table is not empty.
    const [far] = await store.scheduleMany([{ kind: 'flag_far', delayMs: 3_600_000 }]);
    await store.schedule({ kind: 'flag_far', after: [far!.id] });
    await store.scheduleMany(Array.from({ length: 50 }, () => ({ kind: 'flag_plain' })));
    const plain = await store.claim({ owner: 'w', limit: 50, leaseMs: 600_000, kinds: ['flag_plain'] });
    expect(plain.length).toBe(50);
    expect(await edgeScansOfCompletion(admin.schema, plain)).toEqual({ done: 50, scans: 0 });

    const parent = await store.schedule({ kind: 'flag_parent' });
    const child = await store.schedule({ kind: 'flag_child', after: [parent.id] });
    const [claimed] = await store.claim({ owner: 'w', limit: 1, leaseMs: 600_000, kinds: ['flag_parent'] });
    expect(claimed?.id).toBe(parent.id);
    const withDependent = await edgeScansOfCompletion(admin.schema, [claimed!]);
    expect(withDependent.done).toBe(1);
    expect(withDependent.scans).toBeGreaterThan(0);
    const released = await store.getTask(child.id);
    expect(released?.waitingFor).toBeUndefined();
    expect(released?.dueAt.getTime()).toBeLessThan(HELD_DUE_AT_MS);
  });

  it('linking flags the dependency only; its finish releases the dependent', { timeout: 60_000 }, async () => {
    const store = kit.store({ schema: admin.schema });
    const [a, b] = await store.scheduleMany([{ kind: 'flag_a' }, { kind: 'flag_a' }]);
    const child = await store.schedule({ kind: 'flag_b', after: [a!.id, b!.id] });
    const flags = await admin.query<{ id: string; flag: boolean | null }>(`select id::text as id, has_dependents as flag from ${admin.t('task')} where id = any($1::bigint[]) order by id`, [[a!.id, b!.id, child.id]]);
    expect(flags).toEqual([
      { id: a!.id, flag: true },
      { id: b!.id, flag: true },
      { id: child.id, flag: null },
    ]);
    const claimed = await store.claim({ owner: 'w', limit: 2, leaseMs: 600_000, kinds: ['flag_a'] });
    expect(claimed.length).toBe(2);
    expect(await store.completeMany(claimed.map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w' })))).toEqual(['DONE', 'DONE']);
    const task = await store.getTask(child.id);
    expect(task?.state).toBe(TaskState.SCHEDULED);
    expect(task?.waitingFor).toBeUndefined();
    expect(task?.dueAt.getTime()).toBeLessThan(HELD_DUE_AT_MS);
  });

  it('edges written before migration 24 are flagged by its back-fill and released after the upgrade', { timeout: 60_000 }, async () => {
    const old = Admin.create('dependency_flag_backfill');
    const oldKit = makeKit('pg');
    try {
      const q = pg.escapeIdentifier(old.schema);
      await old.query(`create schema ${q}`);
      await old.query(`create table ${q}.migration (version integer primary key, name text not null, applied_at timestamptz not null default now())`);
      for (const m of migrations(old.schema).filter((m) => m.version < DEPENDENCY_FLAG_MIGRATION_VERSION)) {
        await old.query(m.sql);
        await old.query(`insert into ${q}.migration (version, name) values ($1, $2)`, [m.version, m.name]);
      }
      const store = oldKit.store({ schema: old.schema });
      const parent = await store.schedule({ kind: 'bf_parent' });
      const child = await store.schedule({ kind: 'bf_child', after: [parent.id] });
      const [column] = await old.query<{ n: number }>(`select count(*)::int as n from information_schema.columns where table_schema = $1 and table_name = 'task' and column_name = 'has_dependents'`, [old.schema]);
      expect(column?.n).toBe(0);
      const migrated = await store.migrate();
      expect(migrated.applied).toContain(DEPENDENCY_FLAG_MIGRATION_VERSION);
      const [after] = await old.query<{ flag: boolean | null }>(`select has_dependents as flag from ${old.t('task')} where id = $1`, [parent.id]);
      expect(after?.flag).toBe(true);
      const [c] = await store.claim({ owner: 'w', limit: 1, leaseMs: 600_000, kinds: ['bf_parent'] });
      expect(await store.complete({ id: c!.id, attempt: c!.attempt, owner: 'w' })).toBe('DONE');
      const task = await store.getTask(child.id);
      expect(task?.waitingFor).toBeUndefined();
      expect(task?.dueAt.getTime()).toBeLessThan(HELD_DUE_AT_MS);
    } finally {
      await oldKit.close();
      await old.drop();
    }
  });
});
