/**
 * A full pool is not the database being down (issue 27 item 4): `Promise.all` of many
 * `store.schedule` calls on a `pg.Pool` used to reject with `ConnectionError CONNECTION_FAILED could
 * not connect (TIMEOUT)` while the database was fine. A wait for a client of a full pool that runs
 * past `connectionTimeoutMillis` is now a `PoolTimeoutError` (`POOL_TIMEOUT`) naming the wait, the
 * pool's max and the calls still waiting. Real PostgreSQL, a pool of max 1 whose one client the
 * test holds.
 */
import { ConnectionError, PoolTimeoutError, PostponeError, TaskState } from '@postpone/core';
import { freePort } from '@postpone/embedded';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureError } from '@postpone/conformance';
import { createPgStore } from '../src/drivers/pg.js';
import { Admin } from './support/kits.js';

const admin = Admin.create('pool_timeout');
const TIMEOUT_MS = 300;

beforeAll(async () => {
  const store = createPgStore({ connectionString: admin.url, schema: admin.schema });
  await store.migrate();
  await store.close();
});
afterAll(() => admin.drop());

describe('a full pg pool', () => {
  it('schedule waiting past connectionTimeoutMillis for a held client: PoolTimeoutError, not ConnectionError', async () => {
    const pool = new pg.Pool({ connectionString: admin.url, max: 1, connectionTimeoutMillis: TIMEOUT_MS });
    const store = createPgStore({ pool, schema: admin.schema });
    const held = await pool.connect();
    try {
      const started = performance.now();
      const [first, second, third] = await Promise.all([
        captureError(() => store.schedule({ kind: 'mail' })),
        captureError(() => store.schedule({ kind: 'mail' })),
        captureError(() => store.scheduleMany([{ kind: 'mail' }, { kind: 'mail' }])),
      ]);
      const elapsed = performance.now() - started;
      for (const error of [first, second, third]) {
        expect(PostponeError.isInstance(error)).toBe(true);
        expect(error).toBeInstanceOf(PoolTimeoutError);
        expect(error).not.toBeInstanceOf(ConnectionError);
        const e = error as PoolTimeoutError;
        expect(e.code).toBe('POOL_TIMEOUT');
        expect(e.name).toBe('PoolTimeoutError');
        expect(e.poolMax).toBe(1);
        expect(e.waitedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
        expect(e.waitedMs).toBeLessThanOrEqual(Math.ceil(elapsed) + 5);
        expect(e.message).toMatch(new RegExp(`^waited ${e.waitedMs} ms for a pooled connection \\(pool max 1, ${e.waiting} waiting\\)`));
        expect(e.message).toContain('scheduleMany');
        expect((e.cause as Error).message).toBe('timeout exceeded when trying to connect');
      }
      // All three queued together: the first to give up saw the other two still waiting.
      expect((([first, second, third] as PoolTimeoutError[]).map((e) => e.waiting)).sort()).toEqual([0, 1, 2]);
      // The database was fine all along: the held client answers, and nothing was inserted.
      expect((await held.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
      expect(await admin.count()).toBe(0);
    } finally {
      held.release();
    }
    // With the client back, the same store schedules at once.
    const { id } = await store.schedule({ kind: 'mail' });
    expect((await store.getTask(id))?.state).toBe(TaskState.SCHEDULED);
    await store.close();
    await pool.end();
  });

  it('a transaction (complete with work) waiting for a held client: PoolTimeoutError too', async () => {
    const pool = new pg.Pool({ connectionString: admin.url, max: 1, connectionTimeoutMillis: TIMEOUT_MS });
    const store = createPgStore({ pool, schema: admin.schema });
    await admin.truncate();
    const { id } = await store.schedule({ kind: 'mail' });
    const [claimed] = await store.claim({ owner: 'w1', limit: 1, leaseMs: 30_000 });
    expect(claimed?.id).toBe(id);
    const held = await pool.connect();
    try {
      const error = await captureError(() => store.complete({ id, attempt: claimed!.attempt, owner: 'w1', result: null, work: async () => {} }));
      expect(error).toBeInstanceOf(PoolTimeoutError);
      expect(error).toMatchObject({ code: 'POOL_TIMEOUT', poolMax: 1, waiting: 0 });
    } finally {
      held.release();
    }
    expect((await store.getTask(id))?.state).toBe(TaskState.CLAIMED);
    await store.close();
    await pool.end();
  });

  it('a connect that times out with room in the pool is still ConnectionError TIMEOUT', async () => {
    // A port that accepts TCP and never answers: the connect itself times out, the pool is not full.
    const net = await import('node:net');
    const sockets = new Set<import('node:net').Socket>();
    const server = net.createServer((socket) => sockets.add(socket));
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    const url = new URL(admin.url);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    const pool = new pg.Pool({ connectionString: url.toString(), max: 1, connectionTimeoutMillis: TIMEOUT_MS });
    const store = createPgStore({ pool, schema: admin.schema });
    try {
      const error = await captureError(() => store.schedule({ kind: 'mail' }));
      expect(error).toBeInstanceOf(ConnectionError);
      expect(error).toMatchObject({ code: 'CONNECTION_FAILED', reason: 'TIMEOUT' });
    } finally {
      await store.close();
      await pool.end();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
