/** Runs the README's ORM examples (./readme-examples.ts) against PostgreSQL and checks what they left. */
import { createPgStore } from '../../src/drivers/pg.js';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { drizzleExample, knexExample, kyselyExample, ownExecutor, prismaExample } from './readme-examples.js';
import { testSchema } from './support.js';

const db = testSchema('orm_readme');
const store = () => createPgStore({ connectionString: db.url, schema: db.schema });
let s: ReturnType<typeof store>;
let check: pg.Pool;
beforeAll(() => {
  s = store();
  check = new pg.Pool({ connectionString: db.url, max: 2 });
});
afterAll(async () => {
  await s.close();
  await check.end();
});

it('each example commits the reservation and its close-reservation task together', async () => {
  const ids = [await kyselyExample(db.url, db.schema, s), await drizzleExample(db.url, db.schema, s), await knexExample(db.url, db.schema, s)];
  const prisma = await prismaExample(db.url, db.schema, s);
  expect(prisma.cancelled).toBe('CANCELLED');
  const tasks = await Promise.all([...ids, prisma.id].map((id) => s.getTask(id)));
  expect(tasks.map((t) => [t?.key, t?.state])).toEqual([
    ['reservation-42', 'SCHEDULED'],
    ['reservation-43', 'SCHEDULED'],
    ['reservation-44', 'SCHEDULED'],
    ['reservation-45', 'CANCELLED'],
  ]);
  const rows = (await check.query(`select id, status from "${db.schema}".reservation order by id`)).rows;
  expect(rows).toEqual([
    { id: 42, status: 'pending' },
    { id: 43, status: 'pending' },
    { id: 44, status: 'pending' },
    { id: 45, status: 'confirmed' },
  ]);
});

it('an executor of your own over a pg client works the same', async () => {
  const client = await check.connect();
  try {
    await client.query('begin');
    const { id } = await s.schedule({ kind: 'k', key: 'own' }, { tx: ownExecutor(client) });
    await client.query('rollback');
    expect(await s.getTask(id)).toBeNull();
  } finally {
    client.release();
  }
});
