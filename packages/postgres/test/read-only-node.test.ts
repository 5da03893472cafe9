/**
 * 25006 means "wrong node" (issue 26, failover): a pool whose connections sit on a read-only server
 * (the old primary after a failover, reached before the endpoint moved) must not keep them. Here the
 * read-only server is a role with `default_transaction_read_only = on`: its sessions opened before
 * the setting is reset stay read-only, new ones are writable, as connections opened before and after
 * an endpoint moves. Each write that meets 25006 is a typed, transient `StoreError`, its connection is
 * discarded (pg: released with the error; postgres.js: the read-only connections end themselves),
 * and within a pool's worth of tries every write succeeds. The evidence case is `failover_promote`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreError } from '@postpone/core';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';
import { SqlState } from '../src/index.js';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

const admin = Admin.create('readonly');
const POOL_MAX = 4;

beforeAll(async () => {
  const kit = makeKit('pg');
  await kit.store({ schema: admin.schema }).migrate();
  await kit.close();
});
afterAll(async () => {
  await admin.drop();
});

/**
 * Creates (again) a login role whose sessions are read-only (`default_transaction_read_only`), as
 * on a standby or the old primary after a failover, and returns the test database's URL as that role.
 */
async function readOnlyRole(role: string): Promise<string> {
  await admin.query(`drop role if exists ${role}`);
  await admin.query(`create role ${role} login superuser password 'ro'`);
  await admin.query(`alter role ${role} set default_transaction_read_only = on`);
  const u = new URL(admin.url);
  u.username = role;
  u.password = 'ro';
  return u.toString();
}

describe.each(DRIVERS)('%s: connections on a read-only node', (driver) => {
  it('a write that meets 25006 is a transient StoreError, its connection is discarded, and the writes move to new connections', async () => {
    const role = `postpone_ro_${driver}_${process.pid}`;
    const connectionString = await readOnlyRole(role);
    const store =
      driver === 'pg'
        ? createPgStore({ schema: admin.schema, connectionString, poolConfig: { max: POOL_MAX } })
        : createPostgresJsStore({ schema: admin.schema, connectionString, connectionOptions: { max: POOL_MAX } });
    try {
      // Every connection of the pool opened on the "old node": reads work there.
      await Promise.all(Array.from({ length: POOL_MAX * 2 }, () => store.countByState()));
      // Refused while every connection, old or new, is read-only. postgres.js ends its read-only
      // connections before the one retry: that retry may meet one of them ending (57P01, a lost
      // connection) or a new read-only one (25006); either is an error a caller may retry.
      const first = await store.schedule({ kind: 'ro', delayMs: 60_000 }).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (driver === 'pg') expect(first).toMatchObject({ sqlState: SqlState.READ_ONLY_SQL_TRANSACTION, transient: true });
      else expect(first).toSatisfy((e) => (e instanceof StoreError && e.sqlState === SqlState.READ_ONLY_SQL_TRANSACTION && e.transient) || (e as { code?: string }).code === 'CONNECTION_LOST');
      // The endpoint moves: connections opened from now on are writable.
      await admin.query(`alter role ${role} reset default_transaction_read_only`);
      const refused: StoreError[] = [];
      let scheduled: string | undefined;
      for (let i = 0; i < POOL_MAX + 1 && scheduled === undefined; i++) {
        try {
          scheduled = (await store.schedule({ kind: 'ro', delayMs: 60_000 })).id;
        } catch (error) {
          expect(error).toSatisfy((e) => (e instanceof StoreError && e.sqlState === SqlState.READ_ONLY_SQL_TRANSACTION && e.transient) || (e as { code?: string }).code === 'CONNECTION_LOST');
          refused.push(error as StoreError);
        }
      }
      expect(scheduled).toBeDefined();
      // Each try discards what it met (pg retries once on another pooled client): at most half the pool's tries refused.
      expect(refused.length).toBeLessThanOrEqual(Math.ceil(POOL_MAX / 2));
      // No connection is left on the read-only node: within a few bursts over the whole pool, one
      // writes everywhere. postgres.js ends its read-only connections server-side, so a statement
      // it had pipelined onto one of them may fail as a lost connection (retryable) meanwhile.
      let written = 1;
      let clean = false;
      const retryable = (e: unknown) => (e instanceof StoreError && e.sqlState === SqlState.READ_ONLY_SQL_TRANSACTION && e.transient) || (e as { code?: string }).code === 'CONNECTION_LOST';
      for (let round = 0; round < 3 && !clean; round++) {
        const burst = await Promise.allSettled(Array.from({ length: POOL_MAX * 2 }, () => store.schedule({ kind: 'ro', delayMs: 60_000 })));
        const rejected = burst.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as unknown);
        expect(rejected.filter((e) => !retryable(e)).map(String)).toEqual([]);
        written += burst.length - rejected.length;
        clean = rejected.length === 0;
      }
      expect(clean).toBe(true);
      expect(await admin.count()).toBe(written);
    } finally {
      await store.close();
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [role]);
      await admin.query(`drop role if exists ${role}`).catch(() => {});
      await admin.truncate();
    }
  }, 60_000);
});

// One sweep reaches only the connections idle or busy at that moment: a connection inside a
// transaction then, left idle on the read-only node and used for reads only, stayed there for ever.
// The follow-up sweeps (every READ_ONLY_RESWEEP_MS after a read-only server was seen) end it.
it('postgres.js: a connection inside a transaction at the first sweep leaves the read-only node by a follow-up sweep, with reads only', async () => {
  const role = `postpone_rs_${process.pid}`;
  const sql = postgres(await readOnlyRole(role), { max: 2, fetch_types: false, onnotice: () => {} });
  const store = createPostgresJsStore({ sql, schema: admin.schema });
  try {
    // Both connections opened on the "old node"; A then holds a (reading) transaction.
    await Promise.all([sql`select pg_sleep(0.1)`, sql`select pg_sleep(0.1)`]);
    let pidA = 0;
    const held = sql.begin(async (tx) => {
      pidA = (await tx<{ p: number }[]>`select pg_backend_pid() as p`)[0]!.p;
      await tx`select pg_sleep(1.5)`;
    });
    await sleep(200);
    await admin.query(`alter role ${role} reset default_transaction_read_only`);
    // The write meets 25006 on the other connection: the sweep ends it, and cannot reach A.
    await store.schedule({ kind: 'ro', delayMs: 60_000 }).catch(() => undefined);
    await held;
    const endedAt = performance.now();
    let alive = true;
    while (alive && performance.now() - endedAt < 5_000) {
      // A read pipelined behind the probe that ends A fails as a lost connection (retryable).
      await sql`select 1`.catch(() => undefined);
      alive = (await admin.query('select 1 from pg_stat_activity where pid = $1', [pidA])).length > 0;
      await sleep(100);
    }
    expect(alive).toBe(false);
  } finally {
    await store.close();
    await sql.end({ timeout: 2 });
    await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [role]);
    await admin.query(`drop role if exists ${role}`).catch(() => {});
    await admin.truncate();
  }
}, 30_000);
