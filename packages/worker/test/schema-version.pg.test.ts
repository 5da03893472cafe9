/**
 * Version skew at worker start (issue #26 item 2, README "Failure modes", evidence `version_skew`):
 * a worker whose code needs a newer schema than the database has refuses with `SchemaVersionError`
 * `SCHEMA_BEHIND` naming both versions — an `error` event and an error log line, then it stops —
 * and touches no task; on a schema ahead of it whose migrations are additive it runs.
 */
import { SchemaVersionError } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { MIN_SCHEMA_VERSION, migrations, SCHEMA_VERSION } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import { createPostgresJsStore } from '@postpone/postgres/postgres-js';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createWorker, type WorkerEvents } from '../src/index.js';
import { until } from './harness.js';

const url = testDatabaseUrl();
const admin = new pg.Pool({ connectionString: url, max: 2 });
const schemas: string[] = [];

afterAll(async () => {
  await admin.end();
  for (const schema of schemas) await dropSchema(url, schema);
});

/** A schema as the previous code left it at `version` (its `migration` table without `min_reader`), with 3 due tasks. */
async function schemaAt(version: number): Promise<string> {
  const schema = uniqueSchemaName('schema_version');
  schemas.push(schema);
  const q = pg.escapeIdentifier(schema);
  await admin.query(`create schema ${q}`);
  await admin.query(`create table ${q}.migration (version integer primary key, name text not null, applied_at timestamptz not null default now())`);
  for (const m of migrations(schema).filter((m) => m.version <= version)) {
    await admin.query(m.sql);
    await admin.query(`insert into ${q}.migration (version, name) values ($1, $2)`, [m.version, m.name]);
  }
  await admin.query(`insert into ${q}.task (kind, state, due_at, max_attempts) select 'ship', 'SCHEDULED', now(), 5 from generate_series(1, 3)`);
  return schema;
}

describe.each(['pg', 'postgres-js'] as const)('%s worker', (driver) => {
  const storeOn = (schema: string) =>
    (driver === 'pg' ? createPgStore({ connectionString: url, schema }) : createPostgresJsStore({ connectionString: url, schema })) as ReturnType<typeof createPgStore>;

  it(`on a schema behind what the code needs (${MIN_SCHEMA_VERSION - 1}) refuses at start naming both versions, stops, and touches no task`, async () => {
    const schema = await schemaAt(MIN_SCHEMA_VERSION - 1);
    const store = storeOn(schema);
    const lines: { level: number; msg: string }[] = [];
    const stream = { write: (text: string) => void lines.push(JSON.parse(text) as { level: number; msg: string }) };
    const worker = createWorker({
      store,
      pollIntervalMs: 20,
      handlers: { ship: async () => ({ shipped: true }) },
      logger: pino({ level: 'info' }, stream),
    });
    const errors: WorkerEvents['error'][] = [];
    worker.on('error', (e) => void errors.push(e));
    let stopped = false;
    worker.on('stopped', () => {
      stopped = true;
    });
    try {
      worker.start();
      await until(() => stopped, 'the worker stops');
      const [first] = errors;
      expect(SchemaVersionError.isInstance(first?.error) && first.error.code).toBe('SCHEMA_BEHIND');
      expect((first?.error as Error | undefined)?.message).toBe(`schema ${schema} is at migration ${MIN_SCHEMA_VERSION - 1}, this code needs ${MIN_SCHEMA_VERSION}: run migrate() first`);
      expect(lines.some((l) => l.level === 50 && l.msg.includes(`at migration ${MIN_SCHEMA_VERSION - 1}, this code needs ${MIN_SCHEMA_VERSION}`))).toBe(true);
      const { rows } = await admin.query(`select count(*) filter (where state = 'SCHEDULED' and attempt = 0)::int as n from ${pg.escapeIdentifier(schema)}.task`);
      expect(rows[0].n).toBe(3);
    } finally {
      await worker.stop({ timeoutMs: 0 });
      await store.close();
    }
  });

  it('on a schema ahead of it (a future additive migration recorded) runs its tasks', async () => {
    const schema = await schemaAt(SCHEMA_VERSION);
    const q = pg.escapeIdentifier(schema);
    await admin.query(`alter table ${q}.task add column future_note text not null default 'n'`);
    await admin.query(`insert into ${q}.migration (version, name) values ($1, 'future: a column')`, [SCHEMA_VERSION + 1]);
    const store = storeOn(schema);
    let done = 0;
    const worker = createWorker({ store, pollIntervalMs: 20, handlers: { ship: async () => ({ shipped: true }) } });
    const errors: unknown[] = [];
    worker.on('error', (e) => void errors.push(e.error));
    worker.on('completed', () => {
      done++;
    });
    try {
      worker.start();
      await until(() => done === 3, 'three tasks done');
      expect(errors).toEqual([]);
      expect(worker.state).toBe('running');
    } finally {
      await worker.stop({ timeoutMs: 0 });
      await store.close();
    }
  });
});
