/**
 * Per-key rate limits under concurrent claimers on real connections
 * (docs/contract.md#per-key-rate-limits): six connections (both drivers) claim at once, database clock.
 *
 * - A kind limited to 4 starts per minute per limit key, 5 keys × 40 due tasks, claims interleaved
 *   with completions (which free nothing: the window counts starts): exactly 4 claims per key
 *   however the claims interleave, the rest SCHEDULED with no attempt used, each key's log 4 entries.
 * - A kind limited to 2 starts per 300 ms per key, 3 keys, claiming for about 3 s: in every interval
 *   `[t, t + 300 ms)` of the claims' `claimedAt` (the database's `now()`), at most 2 claims of a key.
 *
 * Exact because every claim that may take the kind takes its advisory lock first (`keyLimitLock`), so
 * no two claimers read a key's log from the same snapshot.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { makeKit, migratedSchema } from './support/kits.js';

const admin = migratedSchema('key_rate_race');
const DEADLINE_MS = 30_000;
const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4'];

/** The most claims of one key in any interval [t, t + windowMs) of `times` (ms). */
function maxInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while ((sorted[i] as number) - (sorted[j] as number) >= windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('concurrent key-rate-limited claims', () => {
  const kits = (['pg', 'postgres', 'pg', 'postgres', 'pg', 'postgres'] as const).map((d) => makeKit(d));
  afterAll(async () => {
    await Promise.all(kits.map((k) => k.close()));
    await admin.truncate();
  });

  it('six connections, 5 keys × 40 tasks, 4 starts per minute per key: exactly 4 claims of each key', async () => {
    const stores = kits.map((k) => k.store({ schema: admin.schema })) as PostgresStore<any>[];
    const first = stores[0]!;
    await first.setKeyRateLimit({ kind: 'api', limit: 4, windowMs: 60_000 });
    await first.scheduleMany(Array.from({ length: KEYS.length * 40 }, (_, i) => ({ kind: 'api', limitKey: KEYS[i % KEYS.length]!, payload: { i } })));
    const claimed: string[] = [];
    let calls = 0;
    const deadline = Date.now() + DEADLINE_MS;
    await Promise.all(
      stores.map(async (store, w) => {
        for (let round = 0; round < 20 && Date.now() < deadline; round++) {
          const batch = await store.claim({ owner: `w${w}`, limit: 3, leaseMs: 60_000, kinds: ['api'] });
          calls += 1;
          claimed.push(...batch.map((t) => t.id));
          for (const t of batch) await store.complete({ id: t.id, attempt: t.attempt, owner: `w${w}` });
        }
      }),
    );
    expect(calls).toBe(6 * 20);
    expect(new Set(claimed).size).toBe(claimed.length);
    const perKey = await admin.query<{ key: string; state: string; attempt: number; n: number }>(
      `select limit_key as key, state, attempt, count(*)::int as n from ${admin.t('task')} group by limit_key, state, attempt order by limit_key, state`,
    );
    // DONE tasks have left the live table: each key keeps 36 SCHEDULED with no attempt used.
    expect(perKey).toEqual(KEYS.map((key) => ({ key, state: 'SCHEDULED', attempt: 0, n: 36 })));
    const done = await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task_history')} where state = 'DONE'`);
    expect(done[0]?.n).toBe(KEYS.length * 4);
    const logs = await admin.query<{ key: string; n: number }>(`select limit_key as key, cardinality(starts) as n from ${admin.t('key_rate_log')} order by limit_key`);
    expect(logs).toEqual(KEYS.map((key) => ({ key, n: 4 })));
    expect(await first.listKeyRateLimits()).toEqual([{ kind: 'api', limit: 4, windowMs: 60_000, heldKeys: 5 }]);
  });

  it('six connections, 3 keys, 2 starts per 300 ms per key for about 3 s: at most 2 claims of a key in every 300 ms of database claim times', async () => {
    const stores = kits.map((k) => k.store({ schema: admin.schema })) as PostgresStore<any>[];
    const first = stores[0]!;
    await first.setKeyRateLimit({ kind: 'burst', limit: 2, windowMs: 300 });
    const keys = ['a', 'b', 'c'];
    await first.scheduleMany(Array.from({ length: keys.length * 60 }, (_, i) => ({ kind: 'burst', limitKey: keys[i % keys.length]!, payload: { i } })));
    const byId = new Map((await admin.query<{ id: string; key: string }>(`select id::text as id, limit_key as key from ${admin.t('task')} where kind = 'burst'`)).map((r) => [r.id, r.key]));
    const times = new Map<string, number[]>(keys.map((k) => [k, []]));
    const deadline = Date.now() + 3_000;
    await Promise.all(
      stores.map(async (store, w) => {
        for (let round = 0; round < 2_000 && Date.now() < deadline; round++) {
          const batch = await store.claim({ owner: `w${w}`, limit: 3, leaseMs: 60_000, kinds: ['burst'] });
          for (const t of batch) times.get(byId.get(t.id)!)!.push(t.claimedAt.getTime());
        }
      }),
    );
    for (const key of keys) {
      const list = times.get(key)!;
      // About 3 s at 2 per 300 ms: well over 2 claims per key (the load of the machine aside), never 3 in a window.
      expect(list.length).toBeGreaterThan(4);
      expect(maxInWindow(list, 300)).toBeLessThanOrEqual(2);
    }
  });
});
