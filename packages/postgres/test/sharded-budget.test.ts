/**
 * The connections the sharded front offers a worker (`connectionBudget`, checked by `@postpone/worker`
 * against `concurrency`): a pool the caller gave under every group is counted once; pools the stores
 * made add up; with `pg`, each group's LISTEN holds a pool connection, so `max` is lowered by the
 * N − 1 listeners beyond the one the budget's `listen` stands for; postgres.js listens on a
 * connection of its own. No query is sent: the budgets are read from the stores as built.
 */
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import pg from 'pg';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { createShardedStore } from '../src/index.js';
import { createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';

const schemas = ['budget_g0', 'budget_g1', 'budget_g2'];

describe('sharded front: connectionBudget', () => {
  it('pg, one pool given under three groups: its max once, less the two extra LISTEN connections', async () => {
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 20 });
    const front = createShardedStore({ stores: schemas.map((schema) => createPgStore({ pool, schema })) });
    expect(front.stores.map((s) => s.connectionBudget)).toEqual(schemas.map(() => ({ max: 20, listen: true, shared: true })));
    expect(front.connectionBudget).toEqual({ max: 18, listen: true, shared: true });
    await front.close();
    await pool.end();
  });

  it('pg, a pool per group made by its store: the maxes add up, less the extra LISTEN connections', async () => {
    const front = createShardedStore({ stores: schemas.map((schema) => createPgStore({ connectionString: testDatabaseUrl(), schema, poolConfig: { max: 4 } })) });
    expect(front.connectionBudget).toEqual({ max: 10, listen: true, shared: false });
    await front.close();
  });

  it('postgres.js, one sql given: its max once (LISTEN has a connection of its own)', async () => {
    const sql = postgres(testDatabaseUrl(), { max: 9 });
    const front = createShardedStore({ stores: schemas.map((schema) => createPostgresJsStore({ sql, schema })) });
    expect(front.connectionBudget).toEqual({ max: 9, listen: false, shared: true });
    await front.close();
    await sql.end({ timeout: 1 });
  });
});
