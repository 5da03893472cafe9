/**
 * Concurrency on real connections: the atomic claim (FOR UPDATE SKIP LOCKED + the outer state
 * re-check) hands every task out exactly once, and concurrent reclaims move every expired task once.
 */
import { TestClock } from '@postpone/core';
import { afterAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { type DriverName, type Kit, makeKit, migratedSchema } from './support/kits.js';

const admin = migratedSchema('concurrency');

const DEADLINE_MS = 30_000;

const MIXES: readonly [string, readonly DriverName[]][] = [
  ['pg', ['pg', 'pg', 'pg']],
  ['postgres', ['postgres', 'postgres', 'postgres']],
  ['pg + postgres', ['pg', 'postgres', 'pg']],
];

describe.each(MIXES)('concurrent claims from 3 connections (%s)', (_label, drivers) => {
  let kits: Kit<any>[] = [];
  afterAll(async () => {
    await Promise.all(kits.map((k) => k.close()));
    await admin.truncate();
  });

  it('300 due tasks: claims 300, duplicates 0, every task at attempt 1', async () => {
    kits = drivers.map((d) => makeKit(d));
    const stores = kits.map((k) => k.store({ schema: admin.schema }));
    const scheduled = await (stores[0] as PostgresStore<any>).scheduleMany(Array.from({ length: 300 }, (_, i) => ({ kind: 'job', payload: { i } })));
    const wanted = new Set(scheduled.map((s) => s.id));
    const claims: { id: string; owner: string }[] = [];
    const deadline = Date.now() + DEADLINE_MS;
    await Promise.all(
      stores.map(async (store, w) => {
        const owner = `w${w}`;
        for (let round = 0; round < 1_000 && claims.length < wanted.size && Date.now() < deadline; round++) {
          const batch = await store.claim({ owner, limit: 7, leaseMs: 60_000 });
          for (const c of batch) claims.push({ id: c.id, owner });
          if (batch.length === 0) await new Promise((resolve) => setImmediate(resolve));
        }
      }),
    );
    const ids = claims.map((c) => c.id);
    expect(ids.length).toBe(300);
    expect(new Set(ids).size).toBe(300);
    expect(new Set(ids)).toEqual(wanted);
    const rows = await admin.query<{ id: string; attempt: number; lease_owner: string }>(
      `select id::text, attempt, lease_owner from ${admin.t('task')} where state = 'CLAIMED'`,
    );
    expect(rows.length).toBe(300);
    expect(rows.every((r) => r.attempt === 1)).toBe(true);
    const ownerById = new Map(claims.map((c) => [c.id, c.owner]));
    expect(rows.every((r) => ownerById.get(r.id) === r.lease_owner)).toBe(true);
  });
});

describe('concurrent reclaimExpired', () => {
  const kits = (['pg', 'postgres', 'pg', 'postgres', 'pg'] as const).map((d) => makeKit(d));
  afterAll(async () => {
    await Promise.all(kits.map((k) => k.close()));
    await admin.truncate();
  });

  it('five reclaimers, 240 expired leases: every task reclaimed exactly once, with the transition outcome', async () => {
    const clock = new TestClock();
    const stores = kits.map((k) => k.store({ schema: admin.schema, clock }));
    const first = stores[0] as PostgresStore<any>;
    const scheduled = await first.scheduleMany(Array.from({ length: 240 }, (_, i) => ({ kind: 'job', maxAttempts: i % 3 === 0 ? 1 : 3 })));
    expect((await first.claim({ owner: 'w', limit: 1_000, leaseMs: 1_000 })).length).toBe(240);
    const expected = new Map<string, string>();
    for (const [i, s] of scheduled.entries()) {
      if (i % 3 === 1) expect(await first.cancel(s.id)).toBe('REQUESTED');
      expected.set(s.id, i % 3 === 0 ? 'DEAD' : i % 3 === 1 ? 'CANCELLED' : 'SCHEDULED');
    }
    // Exactly at lease_until nothing is expired yet (lease_until < now).
    clock.tick(1_000);
    expect(await first.reclaimExpired()).toEqual([]);
    clock.tick(1);

    const reclaimed: { id: string; outcome: string; attempt: number }[] = [];
    const deadline = Date.now() + DEADLINE_MS;
    await Promise.all(
      stores.map(async (store) => {
        for (let round = 0; round < 1_000 && reclaimed.length < 240 && Date.now() < deadline; round++) {
          const batch = await store.reclaimExpired({ limit: 13 });
          reclaimed.push(...batch);
          if (batch.length === 0) await new Promise((resolve) => setImmediate(resolve));
        }
      }),
    );
    expect(reclaimed.length).toBe(240);
    expect(new Set(reclaimed.map((r) => r.id)).size).toBe(240);
    for (const r of reclaimed) {
      expect(r.outcome).toBe(expected.get(r.id));
      expect(r.attempt).toBe(1);
    }
    expect(await first.countByState()).toEqual({ SCHEDULED: 80, CLAIMED: 0, DONE: 0, CANCELLED: 80, DEAD: 80 });
    const errors = await admin.query<{ last_error: string; n: number }>(`select last_error, count(*)::int as n from (select last_error from ${admin.t('task')} union all select last_error from ${admin.t('task_history')}) t group by last_error`);
    expect(errors).toEqual([{ last_error: 'lease expired', n: 240 }]);
  });
});

describe('concurrent completeMany', () => {
  const kits = (['pg', 'postgres', 'pg', 'postgres'] as const).map((d) => makeKit(d));
  afterAll(async () => {
    await Promise.all(kits.map((k) => k.close()));
    await admin.truncate();
  });

  it('four connections complete the same 200 attempts in different orders: no deadlock, each DONE once with its worker', async () => {
    const stores = kits.map((k) => k.store({ schema: admin.schema }));
    const first = stores[0] as PostgresStore<any>;
    await first.scheduleMany(Array.from({ length: 200 }, (_, i) => ({ kind: 'job', payload: { i } })));
    const claimed = await first.claim({ owner: 'w', limit: 1_000, leaseMs: 60_000 });
    expect(claimed.length).toBe(200);
    const items = claimed.map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w' }));
    // Ascending, descending, and two interleavings: row locks are taken in id order whatever the input order.
    const orders = [items, [...items].reverse(), items.filter((_, i) => i % 2 === 0).concat(items.filter((_, i) => i % 2 === 1).reverse()), [...items.slice(100), ...items.slice(0, 100)]];
    const outcomes = await Promise.all(stores.map((store, w) => store.completeMany(orders[w] as typeof items)));
    for (const list of outcomes) expect(new Set(list)).toEqual(new Set(['DONE']));
    expect(await first.countByState()).toMatchObject({ DONE: 200, CLAIMED: 0 });
    // One history row per task, each with the worker of its DONE (migration 13: no effect row any more).
    const done = await admin.query<{ n: number; ids: number }>(
      `select count(*)::int as n, count(distinct id)::int as ids from ${admin.t('task_history')} where state = 'DONE' and finished_by = 'w'`,
    );
    expect(done).toEqual([{ n: 200, ids: 200 }]);
    expect(await admin.query(`select count(*)::int as n from ${admin.t('effect')}`)).toEqual([{ n: 0 }]);
  });
});

describe('concurrent capped claims (kindLimits)', () => {
  const kits = (['pg', 'postgres', 'pg', 'postgres', 'pg', 'postgres'] as const).map((d) => makeKit(d));
  afterAll(async () => {
    await Promise.all(kits.map((k) => k.close()));
    await admin.truncate();
  });

  it('six connections claiming api (cap 3) and hot (cap 1) with other kinds: CLAIMED never above the caps, every task DONE once', async () => {
    const stores = kits.map((k) => k.store({ schema: admin.schema }));
    const first = stores[0] as PostgresStore<any>;
    const caps = { api: 3, hot: 1 } as const;
    await first.scheduleMany([
      ...Array.from({ length: 90 }, (_, i) => ({ kind: 'api', priority: i % 3 })),
      ...Array.from({ length: 30 }, () => ({ kind: 'hot' })),
      ...Array.from({ length: 60 }, () => ({ kind: 'other' })),
    ]);
    // One claim alone fills each cap and its limit with the uncapped kind.
    const opening = await first.claim({ owner: 'w0', limit: 10, leaseMs: 60_000, kindLimits: caps });
    expect(opening.filter((t) => t.kind === 'api')).toHaveLength(3);
    expect(opening.filter((t) => t.kind === 'hot')).toHaveLength(1);
    expect(opening.filter((t) => t.kind === 'other')).toHaveLength(6);
    for (const t of opening) expect(await first.complete({ id: t.id, attempt: t.attempt, owner: 'w0' })).toBe('DONE');

    let done = opening.length;
    let running = true;
    const sampled = { api: 0, hot: 0, samples: 0 };
    const sampler = (async () => {
      for (let i = 0; i < 10_000 && running; i++) {
        const rows = await admin.query<{ kind: string; n: number }>(`select kind, count(*)::int as n from ${admin.t('task')} where state = 'CLAIMED' group by kind`);
        for (const r of rows) if (r.kind === 'api' || r.kind === 'hot') sampled[r.kind] = Math.max(sampled[r.kind], r.n);
        sampled.samples += 1;
      }
    })();
    const deadline = Date.now() + DEADLINE_MS;
    await Promise.all(
      stores.map(async (store, w) => {
        for (let round = 0; round < 2_000 && done < 180 && Date.now() < deadline; round++) {
          const batch = await store.claim({ owner: `w${w}`, limit: 4, leaseMs: 60_000, kindLimits: caps });
          // Hold the tasks for a turn of the event loop, so the others claim while these are CLAIMED.
          await new Promise((resolve) => setImmediate(resolve));
          for (const t of batch) expect(await store.complete({ id: t.id, attempt: t.attempt, owner: `w${w}` })).toBe('DONE');
          done += batch.length;
        }
      }),
    );
    running = false;
    await sampler;
    expect(done).toBe(180);
    expect(sampled.samples).toBeGreaterThan(0);
    expect(sampled.api).toBeLessThanOrEqual(3);
    expect(sampled.hot).toBeLessThanOrEqual(1);
    expect(await first.countByState()).toMatchObject({ DONE: 180, CLAIMED: 0, SCHEDULED: 0 });
    const attempts = await admin.query<{ attempt: number; n: number }>(`select attempt, count(*)::int as n from (select attempt from ${admin.t('task')} union all select attempt from ${admin.t('task_history')}) t group by attempt`);
    expect(attempts).toEqual([{ attempt: 1, n: 180 }]);
    console.info(`capped claims: max CLAIMED sampled api ${sampled.api}/3, hot ${sampled.hot}/1 over ${sampled.samples} samples`);
  });
});
