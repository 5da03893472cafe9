/**
 * The database host's clock jumps (issue #26 item 7, README "Failure modes"): a PostgreSQL server of
 * its own runs under libfaketime, its offset read from a file at every clock read, and the test steps
 * it +1 h and −1 h while tasks wait and leases are held. The database clock is the only clock
 * (docs/contract.md#promise-1), so what is checked is what it judges:
 * - no claim before due by the database clock at the claim (`claimedAt ≥ dueAt`, both the server's);
 * - forward: tasks due in 10 min become due at the jump and run (the documented policy); a lease with
 *   less left than the jump has run out at the jump — extend returns false, as for any expired lease —
 *   and is reclaimed early by at most the jump (real time since its last renewal + jump ≥ leaseMs); until
 *   reclaim the holder's complete still commits; a lease with more left than the jump is untouched;
 * - backward: nothing due before the jump is claimed twice (those not yet claimed wait one more hour of
 *   real time, then run once), a lease taken just before the jump now looks one hour longer and is not
 *   reclaimed early (the holder's next renewal brings it back to now + leaseMs), new schedules are due
 *   by the new clock.
 * Both drivers, one after the other (the clock is the server's, shared).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { createDbClockShift, type DbClockShift, recordCase } from '@postpone/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { DRIVERS, type Kit, makeKit } from './support/kits.js';

const HOUR_S = 3_600;
const JUMP_MS = HOUR_S * 1_000;
const LEASE_MS = 3_000;

let server: EmbeddedDatabase;
let clock: DbClockShift;
let admin: pg.Client;
/** Evidence `db_clock_jump`: figures per driver; PASS when every test of the file passed. */
const fields: Record<string, number | string> = { jumps: '+1h,-1h', leaseMs: LEASE_MS };
let passed = 0;

async function dbNowMs(): Promise<number> {
  const { rows } = await admin.query<{ ms: number }>('select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms');
  return rows[0]?.ms ?? Number.NaN;
}

/** Sets the server's offset (seconds) and waits, bounded, until a new session's clock shows it. */
async function setOffset(seconds: number): Promise<void> {
  await clock.set(seconds, dbNowMs);
}

beforeAll(async () => {
  clock = createDbClockShift('postpone-dbclock-');
  server = await startEmbeddedPostgres({ serverEnv: clock.serverEnv });
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
}, 240_000);

afterAll(async () => {
  recordCase('db_clock_jump', passed === 3 * DRIVERS.length, fields);
  await admin?.end().catch(() => {});
  await server?.stop();
  clock?.dispose();
});

describe.each(DRIVERS)('the database clock jumps (%s)', (driver) => {
  let kit: Kit<any>;
  let store: PostgresStore<any>;
  beforeAll(async () => {
    await setOffset(0);
    kit = makeKit(driver, server.url);
    store = kit.store({ schema: `clock_jump_${driver}` });
    await store.migrate();
  });
  afterAll(async () => {
    await setOffset(0);
    await store?.close();
    await kit?.close();
  });

  it('libfaketime moves the server clock: +1 h, −1 h', async () => {
    const real = Date.now();
    await setOffset(HOUR_S);
    expect((await store.now()).getTime() - real).toBeGreaterThan(JUMP_MS - 60_000);
    await setOffset(-HOUR_S);
    expect(real - (await store.now()).getTime()).toBeGreaterThan(JUMP_MS - 60_000);
    await setOffset(0);
    passed++;
  });

  it('forward +1 h: due tasks run by the new clock, never before due; short leases run out at the jump (early by at most the jump), long ones stay', async () => {
    await setOffset(0);
    const soon = await store.scheduleMany(Array.from({ length: 10 }, () => ({ kind: 'soon', delayMs: 600_000 })));
    const far = await store.scheduleMany(Array.from({ length: 5 }, () => ({ kind: 'far', delayMs: 2 * JUMP_MS })));
    await store.scheduleMany([{ kind: 'short-a' }, { kind: 'short-b' }, { kind: 'long' }]);
    const [a] = await store.claim({ owner: 'holder', limit: 1, leaseMs: LEASE_MS, kinds: ['short-a'] });
    const [b] = await store.claim({ owner: 'holder', limit: 1, leaseMs: LEASE_MS, kinds: ['short-b'] });
    const [long] = await store.claim({ owner: 'holder', limit: 1, leaseMs: 2 * JUMP_MS, kinds: ['long'] });
    if (!a || !b || !long) throw new Error('setup claims failed');
    expect(await store.claim({ owner: 'w', limit: 100, leaseMs: LEASE_MS, kinds: ['soon', 'far'] })).toEqual([]);
    // The short leases' holder renews right before the jump (as a holder renewing every leaseMs/3 does).
    expect(await store.extend({ id: b.id, attempt: b.attempt, leaseMs: LEASE_MS })).toBe(true);
    const renewedAt = performance.now();

    await setOffset(HOUR_S);
    // The lease of b ran out at the jump: extend refuses an expired lease (docs/contract.md#transitions).
    expect(await store.extend({ id: b.id, attempt: b.attempt, leaseMs: LEASE_MS })).toBe(false);
    // Until reclaim, the attempt is not revoked: a's holder completes it.
    expect(await store.complete({ id: a.id, attempt: a.attempt, owner: 'holder' })).toBe('DONE');
    const reclaimed = await store.reclaimExpired();
    const reclaimedAfterMs = performance.now() - renewedAt;
    expect(reclaimed.map((r) => r.id)).toEqual([b.id]);
    // Early by at most the jump: real time since the last renewal plus the jump covers the lease.
    expect(reclaimedAfterMs + JUMP_MS).toBeGreaterThanOrEqual(LEASE_MS);
    expect(await store.complete({ id: b.id, attempt: b.attempt, owner: 'holder' })).toBe('REJECTED_STALE');
    // The long lease (2 h) still has an hour: renewed, never reclaimed.
    expect(await store.extend({ id: long.id, attempt: long.attempt, leaseMs: 2 * JUMP_MS })).toBe(true);

    // Claim everything due: the 10-min tasks (due by the new clock) and b's next attempt; never the 2-h ones.
    const claimed = new Map<string, number>();
    const deadline = performance.now() + 5_000;
    for (let round = 0; round < 100 && performance.now() < deadline && claimed.size < soon.length + 1; round++) {
      for (const c of await store.claim({ owner: 'w', limit: 100, leaseMs: 60_000 })) {
        expect(c.claimedAt.getTime()).toBeGreaterThanOrEqual(c.dueAt.getTime());
        claimed.set(c.id, (claimed.get(c.id) ?? 0) + 1);
      }
      await sleep(20);
    }
    expect([...claimed.keys()].sort()).toEqual([...soon.map((s) => s.id), b.id].sort());
    expect([...claimed.values()].every((n) => n === 1)).toBe(true);
    expect(far.some((f) => claimed.has(f.id))).toBe(false);
    expect((await store.reclaimExpired()).map((r) => r.id)).not.toContain(long.id);
    const [row] = await kit.query(`select failures, attempt, state from clock_jump_${driver}.task where id = $1`, [b.id]);
    // The lease run out by the jump counts as a failure, as any expired lease does (what is not done: see README).
    expect(row).toMatchObject({ failures: 1, attempt: 2, state: 'CLAIMED' });
    Object.assign(fields, {
      [`${driver}_fwd_claimedAfterJump`]: claimed.size,
      [`${driver}_fwd_claimedTwice`]: [...claimed.values()].filter((n) => n > 1).length,
      [`${driver}_fwd_farClaimed`]: far.filter((f) => claimed.has(f.id)).length,
      [`${driver}_fwd_shortLeaseReclaimedAfterRealMs`]: Math.round(reclaimedAfterMs),
      [`${driver}_fwd_failuresOfReclaimed`]: Number((row as { failures: number }).failures),
    });
    await kit.query(`delete from clock_jump_${driver}.task`);
    await setOffset(0);
    passed++;
  });

  it('backward −1 h: nothing claimed twice, a lease taken before the jump is not reclaimed early, new schedules are due by the new clock', async () => {
    await setOffset(0);
    const due = await store.scheduleMany(Array.from({ length: 10 }, () => ({ kind: 'due' })));
    await sleep(5);
    const first = await store.claim({ owner: 'w', limit: 5, leaseMs: 60_000, kinds: ['due'] });
    expect(first).toHaveLength(5);
    for (const c of first) expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w' })).toBe('DONE');
    await store.schedule({ kind: 'held' });
    const [held] = await store.claim({ owner: 'holder', limit: 1, leaseMs: LEASE_MS, kinds: ['held'] });
    if (!held) throw new Error('setup claim failed');
    const heldAt = performance.now();

    await setOffset(-HOUR_S);
    // The lease now looks an hour longer (its end was dated by the old clock).
    const [{ leftms } = { leftms: 0 }] = await kit.query(`select (extract(epoch from lease_until - clock_timestamp()) * 1000)::float8 as leftms from clock_jump_${driver}.task where id = $1`, [held.id]);
    expect(Number(leftms)).toBeGreaterThan(JUMP_MS);
    // New schedules are due by the new clock.
    const fresh = await store.schedule({ kind: 'fresh', delayMs: 500 });
    const now = (await store.now()).getTime();
    expect(Math.abs(fresh.dueAt.getTime() - 500 - now)).toBeLessThan(5_000);
    // For longer than the lease: the held lease is not reclaimed, the five tasks due before the jump (now an
    // hour ahead) and the completed ones are not claimed; the fresh task is claimed once, not before due.
    const claimed = new Map<string, number>();
    const until = heldAt + LEASE_MS + 1_500;
    for (let round = 0; round < 200 && performance.now() < until; round++) {
      expect((await store.reclaimExpired()).map((r) => r.id)).not.toContain(held.id);
      for (const c of await store.claim({ owner: 'w', limit: 100, leaseMs: 60_000 })) {
        expect(c.claimedAt.getTime()).toBeGreaterThanOrEqual(c.dueAt.getTime());
        claimed.set(c.id, (claimed.get(c.id) ?? 0) + 1);
      }
      await sleep(50);
    }
    expect([...claimed.entries()]).toEqual([[fresh.id, 1]]);
    // The holder's renewal dates the lease by the new clock again.
    expect(await store.extend({ id: held.id, attempt: held.attempt, leaseMs: LEASE_MS })).toBe(true);
    const [{ leftms: after } = { leftms: 0 }] = await kit.query(`select (extract(epoch from lease_until - clock_timestamp()) * 1000)::float8 as leftms from clock_jump_${driver}.task where id = $1`, [held.id]);
    expect(Number(after)).toBeLessThanOrEqual(LEASE_MS);

    // The clock comes back (+1 h): the five not claimed run, each once; the completed five never again.
    await setOffset(0);
    for (let round = 0; round < 50 && claimed.size < 6; round++) {
      for (const c of await store.claim({ owner: 'w', limit: 100, leaseMs: 60_000, kinds: ['due'] })) {
        expect(c.claimedAt.getTime()).toBeGreaterThanOrEqual(c.dueAt.getTime());
        claimed.set(c.id, (claimed.get(c.id) ?? 0) + 1);
      }
      await sleep(20);
    }
    const rest = due.map((d) => d.id).filter((id) => !first.some((c) => c.id === id));
    expect([...claimed.keys()].sort()).toEqual([fresh.id, ...rest].sort());
    expect([...claimed.values()].every((n) => n === 1)).toBe(true);
    Object.assign(fields, {
      [`${driver}_back_heldLeaseLeftMs`]: Math.round(Number(leftms)),
      [`${driver}_back_heldReclaimed`]: 0,
      [`${driver}_back_leftAfterRenewalMs`]: Math.round(Number(after)),
      [`${driver}_back_claimedTwice`]: [...claimed.values()].filter((n) => n > 1).length,
      [`${driver}_back_claimedAfterReturn`]: claimed.size - 1,
    });
    await kit.query(`delete from clock_jump_${driver}.task`);
    passed++;
  });
});
