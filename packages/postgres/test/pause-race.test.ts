/**
 * A pause against concurrent claimers (docs/contract.md#pause-and-resume): six connections claim a
 * backlog of the queue in a loop while the queue is paused through a seventh. Every claim sent after
 * `pause()` returned (its commit) comes back empty — the claim statement itself reads the pause — and
 * every task is claimed at most once; after the resume the rest is claimed. Both drivers.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

const TASKS = 2_000;
const CLAIMERS = 6;

describe.each(DRIVERS)('pause against concurrent claimers (%s)', (driver) => {
  const admin = Admin.create(`pause_race_${driver}`);
  const kit = makeKit(driver);
  afterAll(async () => {
    await kit.close();
    await admin.drop();
  });

  it(`${CLAIMERS} claim loops, the queue paused mid-way: no claim sent after the pause committed takes a task`, async () => {
    const store = kit.store({ schema: admin.schema });
    await store.migrate();
    const claimers = Array.from({ length: CLAIMERS }, () => kit.store({ schema: admin.schema }));
    await store.scheduleMany(Array.from({ length: TASKS }, (_, i) => ({ kind: 'job', payload: { i } })));
    let pausedAt = Number.POSITIVE_INFINITY;
    let stop = false;
    const claims: { sentAt: number; ids: string[] }[] = [];
    const loops = claimers.map(async (c, n) => {
      for (let i = 0; i < 10_000 && !stop; i++) {
        const sentAt = performance.now();
        const got = await c.claim({ owner: `c${n}`, limit: 5, leaseMs: 60_000 });
        claims.push({ sentAt, ids: got.map((t) => t.id) });
      }
    });
    // Pause once some hundreds are claimed, then let the loops run on for a while.
    for (let i = 0; i < 2_000 && claims.reduce((n, c) => n + c.ids.length, 0) < 300; i++) await new Promise((r) => setTimeout(r, 5));
    expect(await store.pause({ queue: 'default' })).toBe(true);
    pausedAt = performance.now();
    for (let i = 0; i < 2_000 && claims.filter((c) => c.sentAt > pausedAt).length < 200; i++) await new Promise((r) => setTimeout(r, 5));
    stop = true;
    await Promise.all(loops);

    const after = claims.filter((c) => c.sentAt > pausedAt);
    const taken = claims.flatMap((c) => c.ids);
    console.log(`pause race (${driver}): ${claims.length} claims, ${taken.length} tasks before the pause, ${after.length} claims sent after it`);
    expect(after.length).toBeGreaterThanOrEqual(200);
    expect(after.flatMap((c) => c.ids)).toEqual([]);
    expect(taken.length).toBeGreaterThanOrEqual(300);
    expect(taken.length).toBeLessThan(TASKS);
    expect(new Set(taken).size).toBe(taken.length);
    const [row] = await admin.query<{ scheduled: number; used: number }>(
      `select count(*)::int as scheduled, count(*) filter (where attempt > 0)::int as used from ${admin.t('task')} where state = 'SCHEDULED'`,
    );
    expect(row).toEqual({ scheduled: TASKS - taken.length, used: 0 });
    expect(await store.resume({ queue: 'default' })).toBe(true);
    expect(await claimers[0]!.claim({ owner: 'c0', limit: 10_000, leaseMs: 60_000 })).toHaveLength(TASKS - taken.length);
    for (const c of claimers) await c.close();
    await store.close();
  }, 60_000);
});
