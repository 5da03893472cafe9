/**
 * A cut (RST) and a half-open connection (bytes swallowed, no FIN, no RST) during every store
 * operation, on both drivers, through the harness TCP proxy (issue 12, first "Done when"; issue 10
 * items 1 and 5): the call rejects with a typed connection error (within the documented bound
 * `replyTimeoutMs` for a half-open one), nothing reaches the process as an uncaught error, and the
 * same operation works once the network is back.
 *
 * "During": the proxy first holds every byte (delay mode), the call is sent, and then the fault
 * hits the connection carrying it.
 */
import { ConnectionError, ConnectionLostError, PostponeError, type ClaimedTask } from '@postpone/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { captureError } from '@postpone/conformance';
import { TcpProxy } from '@postpone/testkit';
import type { PostgresStore } from '../src/index.js';
import { createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';
import { Admin, DRIVERS, type DriverName, makeKit } from './support/kits.js';

/** The half-open bound the stores under test are built with. */
const REPLY_TIMEOUT_MS = 1_000;
/** How long the request is held by the proxy before the fault hits it. */
const HOLD_MS = 150;

const admin = Admin.create('faults');
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => uncaught.push(error);

beforeAll(async () => {
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  const kit = makeKit('pg');
  await kit.store({ schema: admin.schema }).migrate();
  await kit.close();
});
afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  process.off('unhandledRejection', onUncaught);
  await admin.drop();
});

function storeThrough(driver: DriverName, url: string): PostgresStore<any> {
  const options = { schema: admin.schema, replyTimeoutMs: REPLY_TIMEOUT_MS };
  return driver === 'pg'
    ? createPgStore({ ...options, connectionString: url, poolConfig: { max: 4 } })
    : createPostgresJsStore({ ...options, connectionString: url, connectionOptions: { max: 4 } });
}

function isConnectionFault(error: unknown): boolean {
  return error instanceof ConnectionLostError || error instanceof ConnectionError;
}

type Operation = {
  readonly name: string;
  /** Runs the operation once on `store`, using fresh rows set up through `direct`; returns what it returned. */
  readonly run: (store: PostgresStore<any>, direct: PostgresStore<any>) => Promise<unknown>;
  /** What a successful run returns. */
  readonly expected: (result: unknown) => void;
};

let serial = 0;
async function claimedTask(direct: PostgresStore<any>, leaseMs = 60_000): Promise<ClaimedTask> {
  const kind = `fault-${++serial}`;
  await direct.schedule({ kind });
  // Other tests' leftovers are claimed and completed out of the way; ours is the one with this kind.
  for (let i = 0; i < 10; i++) {
    const claimed = await direct.claim({ owner: 'w', limit: 100, leaseMs });
    const mine = claimed.find((t) => t.kind === kind);
    for (const t of claimed) if (t !== mine) await direct.complete({ id: t.id, attempt: t.attempt, owner: 'w' });
    if (mine) return mine;
  }
  throw new Error('could not claim the test task');
}

const OPERATIONS: readonly Operation[] = [
  {
    name: 'schedule',
    run: (store) => store.schedule({ kind: 'fault-schedule' }),
    expected: (r) => expect(r).toMatchObject({ id: expect.any(String) }),
  },
  {
    name: 'claim',
    run: async (store, direct) => {
      await direct.schedule({ kind: 'fault-claim' });
      return await store.claim({ owner: 'w', limit: 1_000, leaseMs: 60_000 });
    },
    expected: (r) => expect((r as ClaimedTask[]).length).toBeGreaterThan(0),
  },
  {
    name: 'extend',
    run: async (store, direct) => {
      const t = await claimedTask(direct);
      return await store.extend({ id: t.id, attempt: t.attempt, leaseMs: 60_000 });
    },
    expected: (r) => expect(r).toBe(true),
  },
  {
    name: 'complete',
    run: async (store, direct) => {
      const t = await claimedTask(direct);
      return await store.complete({ id: t.id, attempt: t.attempt, owner: 'w' });
    },
    expected: (r) => expect(r).toBe('DONE'),
  },
  {
    name: 'complete with work',
    run: async (store, direct) => {
      const t = await claimedTask(direct);
      return await store.complete({ id: t.id, attempt: t.attempt, owner: 'w', work: async () => {} });
    },
    expected: (r) => expect(r).toBe('DONE'),
  },
  {
    name: 'completeMany',
    run: async (store, direct) => {
      const a = await claimedTask(direct);
      const b = await claimedTask(direct);
      return await store.completeMany([
        { id: a.id, attempt: a.attempt, owner: 'w' },
        { id: b.id, attempt: b.attempt, owner: 'w' },
      ]);
    },
    expected: (r) => expect(r).toEqual(['DONE', 'DONE']),
  },
  {
    name: 'fail',
    run: async (store, direct) => {
      const t = await claimedTask(direct);
      return await store.fail({ id: t.id, attempt: t.attempt, error: 'boom', backoffMs: 3_600_000 });
    },
    expected: (r) => expect(r).toMatchObject({ outcome: 'SCHEDULED' }),
  },
  {
    name: 'release',
    run: async (store, direct) => {
      const t = await claimedTask(direct);
      const outcome = await store.release({ id: t.id, attempt: t.attempt });
      // Out of the way of the next claims: it is due now again.
      await direct.cancel(t.id);
      return outcome;
    },
    expected: (r) => expect(r).toBe('SCHEDULED'),
  },
  {
    name: 'reclaim',
    run: async (store, direct) => {
      const t = await claimedTask(direct, 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const reclaimed = await store.reclaimExpired({});
      return reclaimed.some((r) => r.id === t.id);
    },
    expected: (r) => expect(r).toBe(true),
  },
  {
    name: 'peek',
    run: async (store, direct) => {
      const { id } = await direct.schedule({ kind: 'fault-peek', delayMs: 1_000 });
      const result = await store.peekDue({ withinMs: 3_600_000, limit: 10_000 });
      await direct.cancel(id);
      return result.tasks.some((t) => t.id === id);
    },
    expected: (r) => expect(r).toBe(true),
  },
  {
    name: 'listen',
    run: async (store) => {
      const unlisten = await store.listen(() => {});
      await unlisten();
      return 'listened';
    },
    expected: (r) => expect(r).toBe('listened'),
  },
  {
    name: 'migrate',
    run: async (store) => {
      await store.migrate();
      return 'migrated';
    },
    expected: (r) => expect(r).toBe('migrated'),
  },
];

const FAULTS = [
  { name: 'cut', mode: 'drop' },
  { name: 'half-open', mode: 'blackhole' },
] as const;

describe.each(DRIVERS)('a connection fault during each operation (%s)', (driver) => {
  const kit = makeKit(driver);
  let proxy: TcpProxy;
  let store: PostgresStore<any>;
  let direct: PostgresStore<any>;

  beforeAll(async () => {
    proxy = await TcpProxy.forUrl(kit.url);
    store = storeThrough(driver, proxy.rewrite(kit.url));
    direct = kit.store({ schema: admin.schema });
  });
  afterEach(() => proxy.setFault({ mode: 'pass' }));
  afterAll(async () => {
    await store.close();
    await proxy.close();
    await kit.close();
  });

  for (const op of OPERATIONS) {
    for (const fault of FAULTS) {
      it(`${fault.name} during ${op.name}: a typed error, no uncaught error, and the next call works`, async () => {
        // A warm connection, so the fault hits the call and not the connect phase.
        expect((await store.now()).getTime()).toBeGreaterThan(0);
        const uncaughtBefore = uncaught.length;

        proxy.setFault({ mode: 'delay', delayMs: 60_000 });
        const started = performance.now();
        const pending = captureError(() => op.run(store, direct));
        await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
        proxy.setFault({ mode: fault.mode });
        const error = await pending;
        const elapsedMs = performance.now() - started;

        expect(PostponeError.isInstance(error), `${String(error)}`).toBe(true);
        expect(isConnectionFault(error), `${(error as Error).name}: ${(error as Error).message}`).toBe(true);
        // The documented bound: replyTimeoutMs of silence after the request (plus the hold and the
        // setup statements of the operation, which run on the direct connection).
        if (fault.mode === 'blackhole') expect(elapsedMs).toBeLessThan(HOLD_MS + 3 * REPLY_TIMEOUT_MS + 2_000);

        proxy.setFault({ mode: 'pass' });
        op.expected(await op.run(store, direct));
        expect(uncaught.slice(uncaughtBefore)).toEqual([]);
      });
    }
  }
});

describe('an idle pg connection lost (pool given by the user, no error listener of its own)', () => {
  it('is reported to onConnectionError as a typed error, never as an uncaught error; the next call works', async () => {
    const kit = makeKit('pg');
    const proxy = await TcpProxy.forUrl(kit.url);
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: proxy.rewrite(kit.url), max: 2 });
    const reported: unknown[] = [];
    const store = createPgStore({ pool, schema: admin.schema, onConnectionError: (e) => reported.push(e) });
    const uncaughtBefore = uncaught.length;
    try {
      await Promise.all([store.now(), store.now()]);
      expect(pool.idleCount).toBe(2);
      proxy.setFault({ mode: 'drop' });
      const deadline = Date.now() + 5_000;
      while (reported.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(reported).toHaveLength(2);
      expect(reported.every((e) => e instanceof ConnectionLostError)).toBe(true);
      proxy.setFault({ mode: 'pass' });
      expect((await store.now()).getTime()).toBeGreaterThan(0);
      expect(uncaught.slice(uncaughtBefore)).toEqual([]);
    } finally {
      await store.close();
      await pool.end();
      await proxy.close();
      await kit.close();
    }
  });
});
