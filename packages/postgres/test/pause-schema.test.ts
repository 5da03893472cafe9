/**
 * Pause and rolling deploys (docs/contract.md#pause-and-resume, "Versions"): code of migration 15 on a
 * schema before it (no `pause` table) claims and peeks without the pause check — nothing fails —
 * while `pause`, `resume` and `listPaused` throw `SchemaVersionError` `SCHEMA_BEHIND` naming 15; once
 * another process applies migration 15, the running store honours a pause within
 * `PAUSE_SCHEMA_RECHECK_MS` (it reads the schema's version again at a claim). Both drivers.
 */
import { SchemaVersionError } from '@postpone/core';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrations, PAUSE_MIGRATION_VERSION, PAUSE_SCHEMA_RECHECK_MS } from '../src/index.js';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

describe.each(DRIVERS)('pause on a schema before migration 15 (%s)', (driver) => {
  const admin = Admin.create(`pause_skew_${driver}`);
  const kit = makeKit(driver);
  afterAll(async () => {
    await kit.close();
    await admin.drop();
  });

  it('claims without the check, refuses pause with SCHEMA_BEHIND; after migrate() elsewhere its claims honour a pause within the recheck period', async () => {
    await admin.query(`create schema ${pg.escapeIdentifier(admin.schema)}`);
    await admin.query(`create table ${admin.t('migration')} (version integer primary key, name text not null, applied_at timestamptz not null default now())`);
    for (const m of migrations(admin.schema).filter((m) => m.version < PAUSE_MIGRATION_VERSION)) {
      await admin.query(m.sql);
      await admin.query(`insert into ${admin.t('migration')} (version, name) values ($1, $2)`, [m.version, m.name]);
    }
    const store = kit.store({ schema: admin.schema });
    const [a, b, c] = await store.scheduleMany([{ kind: 'job' }, { kind: 'job' }, { kind: 'job' }]);
    expect((await store.claim({ owner: 'w', limit: 1, leaseMs: 10_000 })).map((t) => t.id)).toEqual([a!.id]);
    expect((await store.peekDue({ withinMs: 0 })).tasks.map((t) => t.id)).toEqual([b!.id, c!.id]);
    const refused = await store.pause({ kind: 'job' }).catch((error: unknown) => error);
    expect(SchemaVersionError.isInstance(refused) && refused.code === 'SCHEMA_BEHIND').toBe(true);
    expect((refused as SchemaVersionError).message).toBe(`schema ${admin.schema} is at migration ${migrations(admin.schema).filter((m) => m.version < PAUSE_MIGRATION_VERSION).at(-1)?.version}, this code needs ${PAUSE_MIGRATION_VERSION}: run migrate() first`);
    await expect(store.listPaused()).rejects.toMatchObject({ code: 'SCHEMA_BEHIND' });

    // Another process migrates and pauses the kind; this store finds the table at a claim within the recheck period.
    const waiting = await store.scheduleMany(Array.from({ length: 200 }, () => ({ kind: 'job' })));
    const other = kit.store({ schema: admin.schema });
    expect((await other.migrate()).applied).toContain(PAUSE_MIGRATION_VERSION);
    expect(await other.pause({ kind: 'job' })).toBe(true);
    const pausedAt = performance.now();
    let taken = 0;
    for (let i = 0; i < 1_000 && performance.now() - pausedAt < PAUSE_SCHEMA_RECHECK_MS + 5_000; i++) {
      if ((await store.claim({ owner: 'w', limit: 1, leaseMs: 10_000 })).length === 0) break;
      taken += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const honouredAfterMs = performance.now() - pausedAt;
    console.log(`pause on a schema migrated under a running store (${driver}): honoured after ${Math.round(honouredAfterMs)} ms, ${taken} claimed meanwhile`);
    expect(honouredAfterMs).toBeLessThan(PAUSE_SCHEMA_RECHECK_MS + 5_000);
    expect(taken).toBeLessThan(waiting.length + 2);
    expect(await store.claim({ owner: 'w', limit: 10, leaseMs: 10_000 })).toEqual([]);
    expect((await store.listPaused()).map((p) => p.name)).toEqual(['job']);
    expect(await store.resume({ kind: 'job' })).toBe(true);
    expect(await store.claim({ owner: 'w', limit: 10, leaseMs: 10_000 })).toHaveLength(10);
    await other.close();
    await store.close();
  }, 30_000);
});
