/**
 * Pause and rolling deploys (docs/contract.md#pause-and-resume, "Versions"): this code needs the
 * schema at `MIN_SCHEMA_VERSION` (18, whose history moves name `progress`), so on a schema before the
 * pause table (15) `claim`, `pause` and `listPaused` throw `SchemaVersionError` `SCHEMA_BEHIND` naming
 * both versions and touch no task; once another process applies the migrations, the same store's
 * next claim reads the schema again and honours a pause. Both drivers.
 */
import { SchemaVersionError } from '@postpone/core';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { MIN_SCHEMA_VERSION, migrations, PAUSE_MIGRATION_VERSION } from '../src/index.js';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

describe.each(DRIVERS)('pause on a schema before migration 15 (%s)', (driver) => {
  const admin = Admin.create(`pause_skew_${driver}`);
  const kit = makeKit(driver);
  afterAll(async () => {
    await kit.close();
    await admin.drop();
  });

  it('refuses claim and pause with SCHEMA_BEHIND naming both versions, touching nothing; after migrate() elsewhere it claims and honours a pause', async () => {
    await admin.query(`create schema ${pg.escapeIdentifier(admin.schema)}`);
    await admin.query(`create table ${admin.t('migration')} (version integer primary key, name text not null, applied_at timestamptz not null default now())`);
    for (const m of migrations(admin.schema).filter((m) => m.version < PAUSE_MIGRATION_VERSION)) {
      await admin.query(m.sql);
      await admin.query(`insert into ${admin.t('migration')} (version, name) values ($1, $2)`, [m.version, m.name]);
    }
    const behind = `schema ${admin.schema} is at migration ${PAUSE_MIGRATION_VERSION - 1}, this code needs ${MIN_SCHEMA_VERSION}: run migrate() first`;
    await admin.query(`insert into ${admin.t('task')} (kind, state, due_at, max_attempts) values ('job', 'SCHEDULED', now(), 3), ('job', 'SCHEDULED', now(), 3)`);
    const store = kit.store({ schema: admin.schema });
    for (const call of [() => store.claim({ owner: 'w', limit: 1, leaseMs: 10_000 }), () => store.pause({ kind: 'job' }), () => store.listPaused()]) {
      const refused = await call().then(
        () => null,
        (error: unknown) => error,
      );
      expect(SchemaVersionError.isInstance(refused) && refused.code === 'SCHEMA_BEHIND').toBe(true);
      expect((refused as SchemaVersionError).message).toBe(behind);
    }
    expect(await admin.query(`select state, attempt from ${admin.t('task')}`)).toEqual([
      { state: 'SCHEDULED', attempt: 0 },
      { state: 'SCHEDULED', attempt: 0 },
    ]);

    // Another process migrates and pauses the kind: this store's next claim reads the schema again and honours the pause.
    const other = kit.store({ schema: admin.schema });
    expect((await other.migrate()).applied).toContain(PAUSE_MIGRATION_VERSION);
    expect(await other.pause({ kind: 'job' })).toBe(true);
    expect(await store.claim({ owner: 'w', limit: 10, leaseMs: 10_000 })).toEqual([]);
    expect((await store.listPaused()).map((p) => p.name)).toEqual(['job']);
    expect(await store.resume({ kind: 'job' })).toBe(true);
    expect(await store.claim({ owner: 'w', limit: 10, leaseMs: 10_000 })).toHaveLength(2);
    await other.close();
    await store.close();
  }, 30_000);
});
