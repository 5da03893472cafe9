import pg from 'pg';
import { expect, it } from 'vitest';
import { testDatabaseUrl } from '../src/vitest-setup.js';

it('globalSetup hands every test file a live database URL', async () => {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  const { rows } = await client.query<{ one: number }>('select 1 as one');
  await client.end();
  expect(rows[0]?.one).toBe(1);
});
