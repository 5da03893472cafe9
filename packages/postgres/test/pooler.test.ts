/**
 * Behind PgBouncer in transaction pooling mode (issue 10 item 9), on both drivers, with a real
 * `pgbouncer` started by the test on 127.0.0.1 (installed by support/install-pgbouncer.sh when
 * missing; the pgbouncer cases skip, saying why, only when it cannot be installed):
 *
 * - `pooler: 'transaction'`: schedule, claim and complete with a write in the transaction, many at
 *   once over few server connections: every task DONE, every write kept, no prepared-statement error;
 * - a postgres.js `sql` with prepared statements on is refused with `pooler: 'transaction'`;
 * - `listen` refuses behind the pooler without `listenConnectionString`, works with a direct one,
 *   and refuses (probe) when the pooler was not declared: never "listening" with nothing arriving.
 *
 * Without pgbouncer: an error of the driver inside `complete`'s `work` (26000, prepared statement
 * missing) is the store's StoreError, not the handler's error.
 */
import { StoreError, ValidationError } from '@postpone/core';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureError } from '@postpone/conformance';
import type { PostgresStore, TaskNotice } from '../src/index.js';
import { createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';
import { ensurePgBouncer, type PgBouncer, startPgBouncer } from './support/pgbouncer.js';
import { Admin, blockStore, DRIVERS, type DriverName, makeKit, waitFor } from './support/kits.js';

const admin = Admin.create('pooler');
const unavailable = ensurePgBouncer();
let bouncer: PgBouncer | undefined;

beforeAll(async () => {
  const kit = makeKit('pg');
  await kit.store({ schema: admin.schema }).migrate();
  await kit.close();
  await admin.query(`create table ${admin.t('side')} (task_id text primary key)`);
  if (unavailable === undefined) bouncer = await startPgBouncer(admin.url, 3);
});
afterAll(async () => {
  await bouncer?.stop();
  await admin.drop();
});

function storeThroughPooler(driver: DriverName, extra: { pooler?: 'transaction'; listenConnectionString?: string } = {}): PostgresStore<any> {
  const url = (bouncer as PgBouncer).url;
  return driver === 'pg'
    ? createPgStore({ connectionString: url, schema: admin.schema, poolConfig: { max: 8 }, ...extra })
    : createPostgresJsStore({ connectionString: url, schema: admin.schema, connectionOptions: { max: 8 }, ...extra });
}

/** One write on the caller's native transaction handle. */
async function sideWrite(driver: DriverName, tx: any, taskId: string): Promise<void> {
  const text = `insert into ${admin.t('side')} (task_id) values ($1)`;
  if (driver === 'pg') await tx.query(text, [taskId]);
  else await tx.unsafe(text, [taskId]);
}

describe.skipIf(unavailable !== undefined).each(DRIVERS)(`behind PgBouncer, pool_mode transaction (%s)`, (driver) => {
  it("pooler: 'transaction' — 60 tasks completed concurrently with a write each: all DONE, 60 writes, no driver error", async () => {
    const store = storeThroughPooler(driver, { pooler: 'transaction' });
    const kind = `pooled-${driver}`;
    try {
      await store.scheduleMany(Array.from({ length: 60 }, () => ({ kind })));
      const claimed = (await store.claim({ owner: 'w', limit: 1_000, leaseMs: 60_000 })).filter((t) => t.kind === kind);
      expect(claimed).toHaveLength(60);
      const outcomes = await Promise.all(
        claimed.map((t) => store.complete({ id: t.id, attempt: t.attempt, owner: 'w', work: (tx) => sideWrite(driver, tx, t.id) })),
      );
      expect(outcomes).toEqual(claimed.map(() => 'DONE'));
      const [row] = await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('side')} where task_id = any($1)`, [claimed.map((t) => t.id)]);
      expect(row?.n).toBe(60);
    } finally {
      await store.close();
    }
  });

  it("listen with pooler: 'transaction' and no listenConnectionString → ValidationError naming it", async () => {
    const store = storeThroughPooler(driver, { pooler: 'transaction' });
    try {
      const error = await captureError(() => store.listen(() => {}));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('listenConnectionString');
    } finally {
      await store.close();
    }
  });

  it('listen with listenConnectionString (direct) receives the notices of schedules sent through the pooler', async () => {
    const store = storeThroughPooler(driver, { pooler: 'transaction', listenConnectionString: admin.url });
    const notices: TaskNotice[] = [];
    try {
      const unlisten = await store.listen((n) => notices.push(n));
      const { id } = await store.schedule({ kind: `listened-${driver}` });
      await waitFor(() => notices.some((n) => n.id === id && n.op === 'scheduled'), 'the notice of the scheduled task', 5_000);
      await unlisten();
    } finally {
      await store.close();
    }
  });

  it('listen through the pooler when it was not declared → StoreError (the probe never arrives), not a silent listener', async () => {
    const store = storeThroughPooler(driver);
    try {
      const error = await captureError(() => store.listen(() => {}));
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).message).toMatch(/receives no notifications/);
    } finally {
      await store.close();
    }
  });
});

describe('prepared statements and a transaction pooler (postgres.js)', () => {
  it("a passed sql with prepare on is refused with pooler: 'transaction'; with prepare: false it is accepted", async () => {
    const prepared = postgres(admin.url, { max: 1 });
    const unprepared = postgres(admin.url, { max: 1, prepare: false });
    try {
      const error = await captureError(async () => createPostgresJsStore({ sql: prepared, schema: admin.schema, pooler: 'transaction' }));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('prepare');
      const store = createPostgresJsStore({ sql: unprepared, schema: admin.schema, pooler: 'transaction' });
      expect((await store.countByState()).SCHEDULED).toBeGreaterThanOrEqual(0);
      await store.close();
    } finally {
      await prepared.end({ timeout: 1 });
      await unprepared.end({ timeout: 1 });
    }
  });
});

describe.each(DRIVERS)('a driver-level error inside complete’s work is the store’s, not the handler’s (%s)', (driver) => {
  const kit = makeKit(driver);
  const store = blockStore(kit, admin);

  async function claimOne(kind: string) {
    await store().schedule({ kind });
    const [t] = (await store().claim({ owner: 'w', limit: 1_000, leaseMs: 60_000 })).filter((c) => c.kind === kind);
    if (!t) throw new Error('nothing claimed');
    return t;
  }

  it('26000 (prepared statement does not exist) → StoreError with sqlState 26000; the task stays CLAIMED', async () => {
    const t = await claimOne(`work-26000-${driver}`);
    const error = await captureError(() =>
      store().complete({
        id: t.id,
        attempt: t.attempt,
        owner: 'w',
        work: async (tx) => {
          if (driver === 'pg') await tx.query('execute postpone_no_such_statement');
          else await tx.unsafe('execute postpone_no_such_statement');
        },
      }),
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).sqlState).toBe('26000');
    expect(await store().getTask(t.id)).toMatchObject({ state: 'CLAIMED', attempt: t.attempt });
  });

  it("the handler's own error passes unchanged (the same object)", async () => {
    const t = await claimOne(`work-own-${driver}`);
    const mine = new Error('the handler failed');
    const error = await captureError(() =>
      store().complete({
        id: t.id,
        attempt: t.attempt,
        owner: 'w',
        work: async () => {
          throw mine;
        },
      }),
    );
    expect(error).toBe(mine);
  });
});
