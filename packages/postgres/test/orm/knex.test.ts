/** `knexTx`: Knex 3 with the pg client — see ./support.ts for the cases. */
import knexFactory from 'knex';
import { describe, expect, it } from 'vitest';
import { knexStatement, knexTx } from '../../src/orm/knex.js';
import { describeOrm, rollback, rollingBack, testSchema } from './support.js';

const db = testSchema('orm_knex');

describeOrm('knex', db, () => {
  const knex = knexFactory({ client: 'pg', connection: db.url, pool: { min: 0, max: 2 } });
  return {
    async transaction(fn, end) {
      const run = () =>
        knex.transaction(async (trx) => {
          const result = await fn(knexTx(trx), async (id) => {
            await trx.withSchema(db.schema).table('reservation').insert({ id, status: 'pending' });
          });
          if (end === 'rollback') rollback();
          return result;
        });
      return end === 'rollback' ? rollingBack(run) : run();
    },
    outsideTransaction: () => knexTx(knex as never),
    close: () => knex.destroy(),
  };
});

describe('knexStatement', () => {
  it('turns $n into ? with the bindings in order and escapes a ? of the text', () => {
    expect(knexStatement(`select $2::int, '$1', payload ? 'k', $1::text, $2::int`, ['a', 2])).toEqual({
      sql: `select ?::int, '$1', payload \\? 'k', ?::text, ?::int`,
      bindings: [2, 'a', 2],
    });
  });
});
