import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { dropSchema, freePort, resolveDatabase, startEmbeddedPostgres, uniqueSchemaName } from '../src/index.js';

describe('embedded PostgreSQL', () => {
  it('starts a real PostgreSQL 17 on loopback and stops it', async () => {
    const db = await startEmbeddedPostgres();
    try {
      expect(db.embedded).toBe(true);
      expect(new URL(db.url).hostname).toBe('127.0.0.1');
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      const { rows } = await client.query<{ v: string }>("select current_setting('server_version_num') as v");
      await client.end();
      expect(Number(rows[0]?.v)).toBeGreaterThanOrEqual(170000);
    } finally {
      await db.stop();
      await db.stop(); // idempotent
    }
    const client = new pg.Client({ connectionString: db.url, connectionTimeoutMillis: 2000 });
    await expect(client.connect()).rejects.toThrow();
  });

  it('uses DATABASE_URL when it is set, without starting anything', async () => {
    const db = await resolveDatabase({ DATABASE_URL: 'postgres://u:p@127.0.0.1:1/x' });
    expect(db).toMatchObject({ url: 'postgres://u:p@127.0.0.1:1/x', embedded: false });
    await db.stop();
  });

  it('gives distinct schema names and free ports', async () => {
    const names = new Set(Array.from({ length: 50 }, () => uniqueSchemaName('Conf-Test')));
    expect(names.size).toBe(50);
    for (const n of names) expect(n).toMatch(/^conf_test_[a-z0-9_]+$/);
    const port = await freePort();
    expect(port).toBeGreaterThan(0);
  });

  it('drops a schema with its tables', async () => {
    const db = await startEmbeddedPostgres();
    try {
      const schema = uniqueSchemaName('drop');
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      await client.query(`create schema ${schema}; create table ${schema}.x (id int)`);
      await dropSchema(db.url, schema);
      const { rows } = await client.query('select 1 from information_schema.schemata where schema_name = $1', [schema]);
      await client.end();
      expect(rows).toHaveLength(0);
    } finally {
      await db.stop();
    }
  });
});
