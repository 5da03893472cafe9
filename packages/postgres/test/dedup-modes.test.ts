/**
 * The dedup key modes' locks on PostgreSQL (docs/contract.md#dedup-key-modes), on both drivers, with
 * the interleaving forced: a throttle schedule inside an open caller transaction holds the key's
 * throttle row, so a second throttle schedule waits for its commit and is then throttled with its
 * task (or, after a rollback, creates one); a debounce that hands a CLAIMED holder's key over holds
 * that holder until its commit, so a concurrent debounce then meets the queued task instead of
 * queueing a second one.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SchemaVersionError } from '@postpone/core';
import { afterAll, describe, expect, it } from 'vitest';
import { MIN_SCHEMA_VERSION, migrations } from '../src/index.js';
import { innerSqlStateOf } from '../src/store/errors.js';
import { DEDUP_MODES_MIGRATION_VERSION } from '../src/sql/dedup-sql.js';
import { DRIVERS, makeKit, migratedSchema } from './support/kits.js';

const admin = migratedSchema('dedup_modes');

describe.each(DRIVERS)('dedup key modes under forced interleavings (%s)', (driver) => {
  const kit = makeKit(driver);
  const other = makeKit(driver === 'pg' ? 'postgres' : 'pg');
  afterAll(async () => {
    await kit.close();
    await other.close();
  });
  const opts = { onConflict: 'throttle', throttleMs: 60_000 } as const;

  it('throttle: a second schedule waits for the open transaction holding the window, then is throttled (commit) or creates (rollback)', async () => {
    const store = kit.store({ schema: admin.schema });
    const rival = other.store({ schema: admin.schema });
    for (const end of ['commit', 'rollback'] as const) {
      const key = `${driver}-${end}`;
      let settled = false;
      let waiting: Promise<{ id: string; created: boolean; throttled?: true }> | undefined;
      let first: { id: string } | undefined;
      await kit.inTransaction(async (tx) => {
        first = await store.schedule({ kind: 'digest', key }, { tx, ...opts });
        waiting = rival.schedule({ kind: 'digest', key }, opts).finally(() => {
          settled = true;
        });
        await sleep(300);
        // Still waiting on the throttle row this transaction holds.
        expect(settled).toBe(false);
      }, end);
      const second = await (waiting as Promise<{ id: string; created: boolean; throttled?: true }>);
      if (end === 'commit') expect(second).toMatchObject({ id: first?.id, created: false, throttled: true });
      else {
        expect(second).toMatchObject({ created: true });
        expect(second.throttled).toBeUndefined();
      }
      const rows = await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task')} where key = $1`, [key]);
      expect(rows[0]?.n).toBe(1);
    }
  });

  it('debounce: a hand-over in an open transaction makes a concurrent debounce wait, then replace the queued task', async () => {
    const store = kit.store({ schema: admin.schema });
    const rival = other.store({ schema: admin.schema });
    const key = `${driver}-handover`;
    const kind = `recompute-${driver}`;
    const holder = await store.schedule({ kind, key });
    const [claimed] = await store.claim({ owner: 'w', limit: 1, leaseMs: 60_000, kinds: [kind] });
    expect(claimed?.id).toBe(holder.id);
    let settled = false;
    let waiting: Promise<{ id: string; created: boolean; replaced: boolean }> | undefined;
    let queued: { id: string; created: boolean } | undefined;
    await kit.inTransaction(async (tx) => {
      queued = await store.schedule({ kind, key, payload: 1 }, { tx, onConflict: 'debounce' });
      waiting = rival.schedule({ kind, key, payload: 2 }, { onConflict: 'debounce' }).finally(() => {
        settled = true;
      });
      await sleep(300);
      expect(settled).toBe(false);
    }, 'commit');
    expect(queued).toMatchObject({ created: true });
    expect(await waiting).toMatchObject({ id: queued?.id, created: false, replaced: true });
    const rows = await admin.query<{ id: string; state: string; key: string | null }>(
      `select id::text as id, state, key from ${admin.t('task')} where kind = $3 and (key = $1 or id = $2::bigint) order by id`,
      [key, holder.id, kind],
    );
    expect(rows).toEqual([
      { id: holder.id, state: 'CLAIMED', key: null },
      { id: queued?.id, state: 'SCHEDULED', key },
    ]);
  });
});

describe('a schema before the dedup modes migration', () => {
  it('a throttle schedule fails with SchemaVersionError SCHEMA_BEHIND (the table is missing: 42P01 as its cause) and writes nothing; after migrate() it creates the task', async () => {
    const schema = `${admin.schema}_before`;
    const q = `"${schema}"`;
    await admin.query(`create schema ${q}`);
    await admin.query(`create table ${q}.migration (version integer primary key, name text not null, applied_at timestamptz not null default now())`);
    for (const m of migrations(schema).filter((m) => m.version < DEDUP_MODES_MIGRATION_VERSION)) {
      await admin.query(m.sql);
      await admin.query(`insert into ${q}.migration (version, name) values ($1, $2)`, [m.version, m.name]);
    }
    const kit = makeKit('pg');
    const store = kit.store({ schema });
    try {
      const error = await store.schedule({ kind: 'digest', key: 'u' }, { onConflict: 'throttle', throttleMs: 1_000 }).catch((e: unknown) => e);
      // This code needs the schema at MIN_SCHEMA_VERSION (18): the missing table is reported as the schema being behind.
      expect(SchemaVersionError.isInstance(error) && error.code === 'SCHEMA_BEHIND').toBe(true);
      expect((error as SchemaVersionError).message).toBe(`schema ${schema} is at migration ${DEDUP_MODES_MIGRATION_VERSION - 1}, this code needs ${MIN_SCHEMA_VERSION}: run migrate() first`);
      expect(innerSqlStateOf((error as SchemaVersionError).cause)).toBe('42P01');
      expect(await admin.query(`select id from ${q}.task`)).toEqual([]);
      // Once migrated, the same call creates the task and opens the key's window.
      await store.migrate();
      expect(await store.schedule({ kind: 'digest', key: 'u' }, { onConflict: 'throttle', throttleMs: 1_000 })).toMatchObject({ created: true });
      expect(await admin.query(`select key from ${q}.dedup_throttle`)).toEqual([{ key: 'u' }]);
    } finally {
      await kit.close();
      await admin.query(`drop schema ${q} cascade`);
    }
  });
});
