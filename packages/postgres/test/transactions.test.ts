/**
 * Writes in the caller's transaction (schedule with `tx`) and the handler's own writes committing
 * with DONE (complete with `work`), on both drivers with their native transaction handles.
 */
import { TestClock } from '@postpone/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

const admin = Admin.create('tx');
beforeAll(async () => {
  const kit = makeKit('pg');
  await kit.store({ schema: admin.schema }).migrate();
  await kit.close();
  await admin.query(`create table ${admin.t('reservation')} (id int primary key, status text not null)`);
});
afterAll(() => admin.drop());

describe.each(DRIVERS)('transactions (%s)', (driver) => {
  const kit = makeKit(driver);
  const clock = new TestClock();
  let store: PostgresStore<any>;
  const reservation = admin.t('reservation');

  beforeAll(() => {
    store = kit.store({ schema: admin.schema, clock });
  });
  afterEach(() => admin.truncate(['reservation']));
  afterAll(async () => {
    await store.close();
    await kit.close();
  });

  async function status(id: number): Promise<string | undefined> {
    return (await admin.query<{ status: string }>(`select status from ${reservation} where id = $1`, [id]))[0]?.status;
  }

  it('schedule inside the caller’s transaction: rolled back → no task; committed → the task, together with the caller’s row', async () => {
    let rolledBack = '';
    await kit.inTransaction(async (tx) => {
      await kit.queryIn(tx, `insert into ${reservation} (id, status) values (1, 'pending')`);
      rolledBack = (await store.schedule({ kind: 'expire', payload: { reservationId: 1 }, delayMs: 1_800_000 }, { tx })).id;
      expect(await admin.count()).toBe(0); // not visible outside before commit
    }, 'rollback');
    expect(await store.getTask(rolledBack)).toBeNull();
    expect(await admin.count()).toBe(0);
    expect(await status(1)).toBeUndefined();

    let committed: string[] = [];
    await kit.inTransaction(async (tx) => {
      await kit.queryIn(tx, `insert into ${reservation} (id, status) values (2, 'pending')`);
      committed = (await store.scheduleMany([{ kind: 'expire', payload: { reservationId: 2 } }, { kind: 'remind' }], { tx })).map((s) => s.id);
    }, 'commit');
    expect(await admin.count()).toBe(2);
    expect((await store.getTask(committed[0] as string))?.payload).toEqual({ reservationId: 2 });
    expect(await status(2)).toBe('pending');
  });

  it('a work that catches the error of its own statement leaves the transaction aborted: complete and completeMany reject, nothing is DONE', async () => {
    const scheduled = await store.scheduleMany([{ kind: 'swallow' }, { kind: 'swallow' }, { kind: 'swallow' }]);
    const claimed = await store.claim({ owner: 'w1', limit: 3, leaseMs: 60_000 });
    expect(claimed).toHaveLength(3);
    const swallowing = async (tx: unknown): Promise<void> => {
      await kit.queryIn(tx, `insert into ${reservation} (id, status) values (9, 'pending')`);
      // Caught: the transaction is now aborted, and its COMMIT would complete as ROLLBACK.
      await kit.queryIn(tx, 'select 1 / 0').catch(() => undefined);
    };
    const [first, ...rest] = claimed as [(typeof claimed)[number], ...typeof claimed];
    // pg: the probe after the work meets the aborted transaction (25P02); postgres.js: sql.begin
    // itself rejects with the statement's error, caught or not (22012).
    const sqlState = driver === 'pg' ? '25P02' : '22012';
    const alone = await store.complete({ id: first.id, attempt: first.attempt, owner: 'w1', work: swallowing }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(alone).toMatchObject({ code: 'STORE_ERROR', sqlState });
    const batch = await store.completeMany(rest.map((c, i) => ({ id: c.id, attempt: c.attempt, owner: 'w1', ...(i === 1 ? { work: swallowing } : {}) }))).then(
      () => null,
      (error: unknown) => error,
    );
    expect(batch).toMatchObject({ code: 'STORE_ERROR', sqlState });
    for (const { id } of scheduled) expect((await store.getTask(id))?.state).toBe('CLAIMED');
    expect(await status(9)).toBeUndefined();
  });

  it('complete runs work(tx) in the DONE transaction: the handler’s UPDATE commits with DONE and the effect row', async () => {
    await admin.query(`insert into ${reservation} (id, status) values (7, 'pending')`);
    const { id } = await store.schedule({ kind: 'expire', payload: { reservationId: 7 } });
    const [claimed] = await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
    let sawTx = false;
    const outcome = await store.complete({
      id,
      attempt: claimed?.attempt as number,
      owner: 'w1',
      result: { expired: 7 },
      work: async (tx) => {
        sawTx = true;
        await kit.queryIn(tx, `update ${reservation} set status = 'expired' where id = $1 and status = 'pending'`, [7]);
        // Inside the transaction the task is already DONE (moved to history); outside, not yet.
        const inside = await kit.queryIn(tx, `select state from ${admin.t('task_history')} where id = $1`, [id]);
        expect(inside[0]?.state).toBe('DONE');
        expect(await kit.queryIn(tx, `select state from ${admin.t('task')} where id = $1`, [id])).toEqual([]);
        expect((await admin.query<{ state: string }>(`select state from ${admin.t('task')} where id = $1`, [id]))[0]?.state).toBe('CLAIMED');
      },
    });
    expect(outcome).toBe('DONE');
    expect(sawTx).toBe(true);
    expect(await status(7)).toBe('expired');
    expect(await store.getTask(id)).toMatchObject({ state: 'DONE', result: { expired: 7 }, leaseOwner: null, leaseUntil: null });
    expect(await store.getCompletion(id)).toMatchObject({ taskId: id, attempt: 1, worker: 'w1' });
  });

  it('a stale complete (attempt 1 after the lease was reclaimed and attempt 2 claimed) never calls work and leaves the row untouched', async () => {
    await admin.query(`insert into ${reservation} (id, status) values (8, 'pending')`);
    const { id } = await store.schedule({ kind: 'expire', payload: { reservationId: 8 } });
    await store.claim({ owner: 'A', limit: 1, leaseMs: 1_000 });
    clock.tick(1_001);
    expect(await store.reclaimExpired()).toEqual([{ id, attempt: 1, outcome: 'SCHEDULED' }]);
    const [second] = await store.claim({ owner: 'B', limit: 1, leaseMs: 1_000 });
    expect(second?.attempt).toBe(2);
    let called = false;
    const work = async () => {
      called = true;
    };
    expect(await store.complete({ id, attempt: 1, owner: 'A', result: 'A', work })).toBe('REJECTED_STALE');
    expect(called).toBe(false);
    expect(await status(8)).toBe('pending');
    expect(await store.getCompletion(id)).toBeNull();
    expect(await store.getTask(id)).toMatchObject({ state: 'CLAIMED', attempt: 2, leaseOwner: 'B' });
  });

  it('work that throws rolls everything back and complete rethrows the same error; the task stays CLAIMED, no effect', async () => {
    await admin.query(`insert into ${reservation} (id, status) values (9, 'pending')`);
    const { id } = await store.schedule({ kind: 'expire' });
    await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
    const boom = new Error('handler failed');
    let thrown: unknown;
    try {
      await store.complete({
        id,
        attempt: 1,
        owner: 'w1',
        work: async (tx) => {
          await kit.queryIn(tx, `update ${reservation} set status = 'expired' where id = 9`);
          throw boom;
        },
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBe(boom);
    expect(await status(9)).toBe('pending');
    expect(await store.getCompletion(id)).toBeNull();
    expect(await store.getTask(id)).toMatchObject({ state: 'CLAIMED', attempt: 1, leaseOwner: 'w1' });
    // The attempt can still complete.
    expect(await store.complete({ id, attempt: 1, owner: 'w1' })).toBe('DONE');
  });

  it('a SQL error inside work (the handler’s own) is rethrown as is and rolls back', async () => {
    const { id } = await store.schedule({ kind: 'expire' });
    await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
    let thrown: unknown;
    try {
      await store.complete({ id, attempt: 1, owner: 'w1', work: (tx) => kit.queryIn(tx, 'select 1/0').then(() => undefined) });
    } catch (error) {
      thrown = error;
    }
    expect((thrown as { code?: string }).code).toBe('22012');
    expect(await store.getTask(id)).toMatchObject({ state: 'CLAIMED' });
    expect(await store.getCompletion(id)).toBeNull();
  });
});
