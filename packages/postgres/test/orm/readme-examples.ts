/**
 * The README's examples ("Schedule in your ORM's transaction"), kept here so `tsc` (typecheck) proves
 * they compile and ./readme-examples.test.ts runs them against PostgreSQL. Each takes the database
 * URL where the README reads `process.env.DATABASE_URL`, and the schema where the README uses the default.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { integer, pgSchema, text } from 'drizzle-orm/pg-core';
import knexFactory from 'knex';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { PostgresStore } from '../../src/store/store.js';
import type { SqlExecutor } from '../../src/store/driver.js';
import type { PgTx } from '../../src/drivers/pg.js';
import { drizzleTx } from '../../src/orm/drizzle.js';
import { knexTx } from '../../src/orm/knex.js';
import { kyselyTx } from '../../src/orm/kysely.js';
import { prismaTx } from '../../src/orm/prisma.js';
import { PrismaClient } from './prisma/generated/client.js';

const close = (reservationId: number) => ({ kind: 'close-reservation', key: `reservation-${reservationId}`, payload: { reservationId }, delayMs: 30 * 60_000 });

export async function kyselyExample(url: string, schema: string, store: PostgresStore<PgTx>): Promise<string> {
  interface Database {
    reservation: { id: number; status: string };
  }
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url }) }) }).withSchema(schema);
  const { id } = await db.transaction().execute(async (trx) => {
    await trx.insertInto('reservation').values({ id: 42, status: 'pending' }).execute();
    return await store.schedule(close(42), { tx: kyselyTx(trx) });
  });
  await db.destroy();
  return id;
}

export async function drizzleExample(url: string, schema: string, store: PostgresStore<PgTx>): Promise<string> {
  const reservation = pgSchema(schema).table('reservation', { id: integer('id').primaryKey(), status: text('status').notNull() });
  const pool = new pg.Pool({ connectionString: url });
  const db = drizzle({ client: pool });
  const { id } = await db.transaction(async (tx) => {
    await tx.insert(reservation).values({ id: 43, status: 'pending' });
    return await store.schedule(close(43), { tx: drizzleTx(tx) });
  });
  await pool.end();
  return id;
}

export async function knexExample(url: string, schema: string, store: PostgresStore<PgTx>): Promise<string> {
  const knex = knexFactory({ client: 'pg', connection: url });
  const { id } = await knex.transaction(async (trx) => {
    await trx.withSchema(schema).table('reservation').insert({ id: 44, status: 'pending' });
    return await store.schedule(close(44), { tx: knexTx(trx) });
  });
  await knex.destroy();
  return id;
}

export async function prismaExample(url: string, schema: string, store: PostgresStore<PgTx>): Promise<{ id: string; cancelled: string }> {
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url }, { schema }) });
  const { id } = await prisma.$transaction(async (tx) => {
    await tx.reservation.create({ data: { id: 45, status: 'pending' } });
    return await store.schedule(close(45), { tx: prismaTx(tx) });
  });
  // The guest checked in: the reservation is confirmed and its close cancelled, together.
  const cancelled = await prisma.$transaction(async (tx) => {
    await tx.reservation.update({ where: { id: 45 }, data: { status: 'confirmed' } });
    return await store.cancel(id, { tx: prismaTx(tx) });
  });
  await prisma.$disconnect();
  return { id, cancelled };
}

/** An executor of your own, for any other client: `query(text, params)` on the transaction's connection. */
export function ownExecutor(client: pg.PoolClient): SqlExecutor {
  return { query: (text, params) => client.query(text, params === undefined ? undefined : [...params]) };
}
