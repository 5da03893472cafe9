/**
 * `cancelMany` by kind racing claimers of the same kind (docs/contract.md#bulk-operations), on both
 * drivers: three claim loops (each its own store and pool) claim and `completeMany` tasks while the
 * bulk cancel walks them in batches. Each task ends exactly once, DONE or CANCELLED, with the single
 * cancel's semantics: every `REQUESTED` task's complete answers `CANCELLED_BEFORE_COMMIT`, and the
 * CANCELLED rows in history are the bulk call's `CANCELLED` plus `REQUESTED`. No call fails (no
 * deadlock between the batches, which lock in id order, and `completeMany`, which does too).
 */
import type { CompleteOutcome } from '@postpone/core';
import { afterAll, describe, expect, it } from 'vitest';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

const TASKS = 2_000;
const admin = Admin.create('bulk_race');

afterAll(async () => {
  await admin.drop();
});

describe.each(DRIVERS)('cancelMany racing claims (%s)', (driver) => {
  it(`${TASKS} due tasks of one kind: each ends DONE or CANCELLED once, REQUESTED ones are CANCELLED_BEFORE_COMMIT`, async () => {
    const kit = makeKit(driver);
    const claimers = [makeKit(driver), makeKit(driver), makeKit(driver)];
    const store = kit.store({ schema: admin.schema });
    try {
      await store.migrate();
      await admin.truncate();
      const kind = `race-${driver}`;
      for (let i = 0; i < TASKS; i += 500) await store.scheduleMany(Array.from({ length: 500 }, (_, j) => ({ kind, payload: { n: i + j } })));

      const outcomes: CompleteOutcome[] = [];
      let stop = false;
      const loops = claimers.map(async (k, w) => {
        const s = k.store({ schema: admin.schema });
        for (let round = 0; round < 10_000 && !stop; round++) {
          const claimed = await s.claim({ owner: `w${w}`, limit: 20, leaseMs: 60_000, kinds: [kind] });
          if (claimed.length === 0) {
            await new Promise((r) => setTimeout(r, 5));
            continue;
          }
          outcomes.push(...(await s.completeMany(claimed.map((c) => ({ id: c.id, attempt: c.attempt, owner: `w${w}` })))));
        }
      });
      await new Promise((r) => setTimeout(r, 30)); // the claimers are under way
      const result = await store.cancelMany({ kinds: [kind] }, { batchSize: 100 });
      // Let the claimers finish what they hold (the tasks left CLAIMED), then stop them.
      for (let i = 0; i < 400; i++) {
        const [row] = await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task')} where kind = $1`, [kind]);
        if (row?.n === 0) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      stop = true;
      await Promise.all(loops);

      const states = Object.fromEntries(
        (await admin.query<{ state: string; n: number }>(`select state, count(*)::int as n from ${admin.t('task_history')} where kind = $1 group by state`, [kind])).map((r) => [r.state, r.n]),
      );
      const live = await admin.query(`select 1 from ${admin.t('task')} where kind = $1`, [kind]);
      const done = outcomes.filter((o) => o === 'DONE').length;
      const cancelledBeforeCommit = outcomes.filter((o) => o === 'CANCELLED_BEFORE_COMMIT').length;
      console.log(`bulk race (${driver}): ${JSON.stringify(result.counts)} in ${result.batches} batches; completes DONE ${done}, CANCELLED_BEFORE_COMMIT ${cancelledBeforeCommit}`);
      expect(live).toEqual([]);
      expect((states.DONE ?? 0) + (states.CANCELLED ?? 0)).toBe(TASKS);
      expect(states.DONE ?? 0).toBe(done);
      expect(result.counts.REQUESTED).toBe(cancelledBeforeCommit);
      expect(states.CANCELLED ?? 0).toBe(result.counts.CANCELLED + result.counts.REQUESTED);
      expect(result.counts.NOT_FOUND + result.counts.ALREADY_CANCELLED).toBe(0);
      expect(outcomes.filter((o) => o === 'REJECTED_STALE' || o === 'NOT_FOUND')).toEqual([]);
      expect(result.counts.CANCELLED).toBeGreaterThan(0);
      // Each task counted at most once (a task claimed meanwhile is REQUESTED once, not again by the CLAIMED walk).
      expect(result.counts.CANCELLED + result.counts.REQUESTED + result.counts.TOO_LATE).toBeLessThanOrEqual(TASKS);
    } finally {
      await store.close();
      for (const k of [kit, ...claimers]) await k.close();
    }
  }, 180_000);
});

describe('cancelMany as a deadlock victim', () => {
  it('a batch rolled back by the deadlock detector (40P01) runs again and cancels every task', async () => {
    const kit = makeKit('pg');
    const store = kit.store({ schema: admin.schema });
    const client = await admin.pool.connect();
    try {
      await store.migrate();
      await admin.truncate();
      const [a, b] = await store.scheduleMany([
        { kind: 'deadlock', delayMs: 60_000 },
        { kind: 'deadlock', delayMs: 60_000 },
      ]);
      // The other session locks the higher id first, then the lower one: the opposite of the batch's
      // id order. Its deadlock_timeout is long, so the batch's session (1 s) detects the cycle and is the victim.
      await client.query(`set deadlock_timeout = '20s'`);
      await client.query('begin');
      await client.query(`select 1 from ${admin.t('task')} where id = $1 for update`, [b?.id]);
      const cancelling = store.cancelMany({ ids: [a?.id as string, b?.id as string] });
      await new Promise((r) => setTimeout(r, 300)); // the batch holds a and waits for b
      const other = client.query(`select 1 from ${admin.t('task')} where id = $1 for update`, [a?.id]);
      await other; // granted once the batch was rolled back
      await client.query('commit');
      const result = await cancelling;
      expect(result.counts).toEqual({ CANCELLED: 2, REQUESTED: 0, TOO_LATE: 0, ALREADY_CANCELLED: 0, NOT_FOUND: 0 });
      const [stats] = await admin.query<{ n: number }>(`select deadlocks::int as n from pg_stat_database where datname = current_database()`);
      expect(stats?.n).toBeGreaterThan(0);
    } finally {
      client.release();
      await store.close();
      await kit.close();
    }
  }, 60_000);
});
