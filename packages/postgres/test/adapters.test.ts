/**
 * Adapter specifics: the factories' options, stores that own their pool / sql, a postgres.js `sql`
 * with a column transform, and a main entry that loads no driver.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StoreClosedError, ValidationError } from '@postpone/core';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SCHEMA, defaultNotifyChannel, type PostgresStore } from '../src/index.js';
import { createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';
import { migratedSchema, waitFor } from './support/kits.js';

const admin = migratedSchema('adapters');

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('factories', () => {
  it.each([
    ['pg without pool or connectionString', () => createPgStore({})],
    ['pg with both', () => createPgStore({ connectionString: 'postgres://x', pool: {} as never })],
    ['postgres.js without sql or connectionString', () => createPostgresJsStore({})],
    ['a schema that is not an identifier', () => createPgStore({ connectionString: 'postgres://127.0.0.1:1/x', schema: 'bad-name; drop' })],
    ['a schema over 63 characters', () => createPgStore({ connectionString: 'postgres://127.0.0.1:1/x', schema: 's'.repeat(64) })],
    ['a bad notify channel', () => createPostgresJsStore({ connectionString: 'postgres://127.0.0.1:1/x', notifyChannel: 'a b' })],
    ['maxPayloadBytes 0', () => createPgStore({ connectionString: 'postgres://127.0.0.1:1/x', maxPayloadBytes: 0 })],
  ])('%s → ValidationError INVALID_OPTION', (_label, make) => {
    const error = thrown(make);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('INVALID_OPTION');
  });

  it('defaults: schema `postpone`, channel `postpone_<schema>` cut to 63 bytes', () => {
    const store = createPostgresJsStore({ connectionString: 'postgres://127.0.0.1:1/x' });
    expect(store.schema).toBe(DEFAULT_SCHEMA);
    expect(store.notifyChannel).toBe('postpone_postpone');
    expect(store.name).toBe('postgres');
    expect(defaultNotifyChannel('s'.repeat(63))).toHaveLength(63);
    return store.close();
  });

  it.each([
    ['pg', (app: string) => createPgStore({ connectionString: admin.url, poolConfig: { application_name: app, max: 3 }, schema: admin.schema })],
    [
      'postgres',
      (app: string) =>
        createPostgresJsStore({ connectionString: admin.url, connectionOptions: { connection: { application_name: app }, max: 3 }, schema: admin.schema }),
    ],
  ] as const)('a %s store made from a connection string (+ options) works, listens, and ends its own connections on close', async (name, make) => {
    const appName = `postpone_adapters_${name}`;
    const store: PostgresStore<any> = make(appName);
    expect(store.name).toBe(name);
    const notices: string[] = [];
    await store.listen((n) => notices.push(n.id));
    const { id } = await store.schedule({ kind: 'own' });
    await waitFor(() => notices.includes(id), 'the notice');
    expect((await store.getTask(id))?.kind).toBe('own');
    const connections = async () =>
      (await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where application_name = $1', [appName]))[0]?.n;
    expect(await connections()).toBeGreaterThan(0);
    await store.close();
    await store.close();
    await waitFor(async () => (await connections()) === 0, 'the store’s connections to close');
    await expect(store.countByState()).rejects.toBeInstanceOf(StoreClosedError);
    await admin.truncate();
  });
});

describe('postgres.js with a column transform', () => {
  it('a user `sql` with `transform: postgres.camel` still reads every row right (aliases have no underscores)', async () => {
    const sql = postgres(admin.url, { transform: postgres.camel, max: 2, onnotice: () => {} });
    const store = createPostgresJsStore({ sql, schema: admin.schema });
    try {
      const { id } = await store.schedule({ kind: 'camel', payload: { some_key: 1 } });
      const [claimed] = await store.claim({ owner: 'w', limit: 1, leaseMs: 5_000 });
      expect(claimed).toMatchObject({ id, kind: 'camel', payload: { some_key: 1 }, attempt: 1, maxAttempts: 5 });
      expect(await store.complete({ id, attempt: 1, owner: 'w', result: { done_at: 1 } })).toBe('DONE');
      expect(await store.getTask(id)).toMatchObject({ state: 'DONE', result: { done_at: 1 }, leaseOwner: null, cancelRequested: false });
      expect(await store.getCompletion(id)).toMatchObject({ taskId: id, attempt: 1, worker: 'w' });
    } finally {
      await store.close();
      await sql.end({ timeout: 1 });
      await admin.truncate();
    }
  });
});

describe('entry points', () => {
  const src = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

  /** Module specifiers imported by `file` and, transitively, by the relative modules it imports (the package's own folders). */
  function importsOf(file: string, seen = new Set<string>()): Set<string> {
    const out = new Set<string>();
    if (seen.has(file)) return out;
    seen.add(file);
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(/^(?:import|export)[^'"]*from\s+'([^']+)'/gm)) {
      if (spec === undefined) continue;
      const next = spec.startsWith('.') ? resolve(dirname(file), spec.replace(/\.js$/, '.ts')) : undefined;
      if (!spec.startsWith('.')) out.add(spec);
      if (next !== undefined) for (const s of importsOf(next, seen)) out.add(s);
    }
    return out;
  }

  it('the main entry imports no driver; each subpath imports only its own', () => {
    // Node.js built-ins are no dependency: the waitFor registration names its host (`node:os`, `node:crypto`).
    const ours = ['@postpone/core', 'node:crypto', 'node:os'];
    expect([...importsOf(resolve(src, 'index.ts'))].sort()).toEqual(ours);
    expect([...importsOf(resolve(src, 'drivers/pg.ts'))].sort()).toEqual([...ours, 'node:net', 'pg'].sort());
    expect([...importsOf(resolve(src, 'drivers/postgres-js.ts'))].sort()).toEqual([...ours, 'node:net', 'postgres'].sort());
  });

  it('each ORM subpath imports no driver and no other ORM', () => {
    for (const orm of ['kysely', 'drizzle', 'knex', 'prisma']) {
      const imported = [...importsOf(resolve(src, `orm/${orm}.ts`))];
      expect(imported.filter((s) => ['pg', 'postgres', 'kysely', 'drizzle-orm', 'knex', '@prisma/client'].includes(s) && !s.startsWith(orm === 'drizzle' ? 'drizzle' : orm))).toEqual([]);
    }
  });

  it('package.json exports the driver and ORM subpaths', async () => {
    const pkg = JSON.parse(readFileSync(resolve(src, '../package.json'), 'utf8')) as { exports: Record<string, { types: string; import: string }> };
    for (const [sub, file] of [['pg', 'drivers/pg'], ['postgres-js', 'drivers/postgres-js'], ['kysely', 'orm/kysely'], ['drizzle', 'orm/drizzle'], ['knex', 'orm/knex'], ['prisma', 'orm/prisma']]) {
      expect(pkg.exports[`./${sub}`]).toEqual({ types: `./dist/${file}.d.ts`, import: `./dist/${file}.js`, default: `./dist/${file}.js` });
    }
  });
});
