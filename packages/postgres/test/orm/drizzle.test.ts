/** `drizzleTx`: drizzle-orm 0.45 on node-postgres — see ./support.ts for the cases. */
import { drizzle } from 'drizzle-orm/node-postgres';
import { integer, PgDialect, pgSchema, text } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { drizzleStatement, drizzleTx } from '../../src/orm/drizzle.js';
import { describeOrm, rollback, rollingBack, testSchema } from './support.js';

const db = testSchema('orm_drizzle');
const reservation = pgSchema(db.schema).table('reservation', { id: integer('id').primaryKey(), status: text('status').notNull() });

describeOrm('drizzle', db, () => {
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const orm = drizzle({ client: pool });
  return {
    async transaction(fn, end) {
      const run = () =>
        orm.transaction(async (tx) => {
          const result = await fn(drizzleTx(tx), async (id) => {
            await tx.insert(reservation).values({ id, status: 'pending' });
          });
          if (end === 'rollback') rollback();
          return result;
        });
      return end === 'rollback' ? rollingBack(run) : run();
    },
    outsideTransaction: () => drizzleTx(orm as never),
    close: () => pool.end(),
  };
});

describe('drizzleStatement', () => {
  it('numbers each placeholder again in order, the value repeated, quoted text untouched', () => {
    const query = new PgDialect().sqlToQuery(drizzleStatement(`select $2::int, '$1 '' $3', "$1", $1::text -- $9\n, $2::int`, [10, 20]));
    expect(query.sql).toBe(`select $1::int, '$1 '' $3', "$1", $2::text -- $9\n, $3::int`);
    expect(query.params).toEqual([20, 10, 20]);
  });
});
