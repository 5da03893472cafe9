/** `kyselyTx`: Kysely 0.29 with its PostgresDialect (node-postgres pool) — see ./support.ts for the cases. */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { kyselyTx } from '../../src/orm/kysely.js';
import { describeOrm, rollback, rollingBack, testSchema } from './support.js';

interface Database {
  reservation: { id: number; status: string };
}

const db = testSchema('orm_kysely');

describeOrm('kysely', db, () => {
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: db.url, max: 2 }) }) }).withSchema(db.schema);
  return {
    async transaction(fn, end) {
      const run = () =>
        kysely.transaction().execute(async (trx) => {
          const result = await fn(kyselyTx(trx), async (id) => {
            await trx.insertInto('reservation').values({ id, status: 'pending' }).execute();
          });
          if (end === 'rollback') rollback();
          return result;
        });
      return end === 'rollback' ? rollingBack(run) : run();
    },
    outsideTransaction: () => kyselyTx(kysely),
    close: () => kysely.destroy(),
  };
});
