/**
 * Without an injected clock the database clock judges everything (docs/contract.md#promise-1): no task is claimed
 * before its due time, the lease runs from `clock_timestamp()`, and `now()` is the server's.
 */
import { describe, expect, it } from 'vitest';
import { blockStore, DRIVERS, makeKit, migratedSchema } from './support/kits.js';

const admin = migratedSchema('dbclock');

describe.each(DRIVERS)('database clock (%s)', (driver) => {
  const kit = makeKit(driver);
  const store = blockStore(kit, admin, { truncate: true });

  it('now() is the server clock', async () => {
    const [row] = await admin.query<{ ms: number }>('select floor(extract(epoch from now()) * 1000)::float8 as ms');
    const now = await store().now();
    expect(Math.abs(now.getTime() - (row?.ms as number))).toBeLessThan(5_000);
  });

  it('tasks due over 300 ms are never claimed before their due time; leases run from the claim', async () => {
    const scheduled = await store().scheduleMany(Array.from({ length: 20 }, (_, i) => ({ kind: 'timed', delayMs: i * 15 })));
    const dueById = new Map(scheduled.map((s) => [s.id, s.dueAt.getTime()]));
    const claimedAt = new Map<string, number>();
    const deadline = Date.now() + 10_000;
    for (let round = 0; round < 2_000 && claimedAt.size < 20 && Date.now() < deadline; round++) {
      for (const c of await store().claim({ owner: 'w', limit: 5, leaseMs: 30_000 })) {
        claimedAt.set(c.id, c.claimedAt.getTime());
        expect(c.claimedAt.getTime()).toBeGreaterThanOrEqual(c.dueAt.getTime());
        expect(c.leaseUntil.getTime()).toBeGreaterThanOrEqual(c.claimedAt.getTime() + 30_000);
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(claimedAt.size).toBe(20);
    const early = [...claimedAt].filter(([id, at]) => at < (dueById.get(id) as number));
    expect(early).toEqual([]);
  });

  it('a task due in an hour is not claimable now but shows up in peekDue within an hour', async () => {
    const { id, dueAt } = await store().schedule({ kind: 'later', delayMs: 3_600_000 });
    expect(await store().claim({ owner: 'w', limit: 10, leaseMs: 1_000 })).toEqual([]);
    const near = await store().peekDue({ withinMs: 60_000 });
    expect(near.tasks.map((t) => t.id)).not.toContain(id);
    const far = await store().peekDue({ withinMs: 3_700_000 });
    expect(far.tasks).toContainEqual({ id, dueAt });
    expect(Math.abs(far.now.getTime() - (dueAt.getTime() - 3_600_000))).toBeLessThan(5_000);
  });
});
