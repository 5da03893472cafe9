/**
 * Per-key concurrency under concurrent claimers on real connections
 * (docs/contract.md#per-key-concurrency): six connections (both drivers) claim at once from a kind
 * limited to 3 CLAIMED per limit key, 5 keys × 160 due tasks, and complete some of what they took
 * between claims. A seventh connection samples the CLAIMED count per key all along. No sample and
 * no final count shows more than 3 CLAIMED of a key, and after a last claim every key holds
 * exactly 3: each keyed claim takes the kind's advisory lock first, so no two claimers count a key's
 * room from the same snapshot. The rest stays SCHEDULED with no attempt used.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { makeKit, migratedSchema } from './support/kits.js';

const admin = migratedSchema('key_limit_race');
const DEADLINE_MS = 30_000;
const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4'];
const LIMIT = 3;
/** More than the 150 claims could finish for one key, so every key still has due work at the end. */
const TASKS_PER_KEY = 160;

describe('concurrent key-limited claims', () => {
  const kits = (['pg', 'postgres', 'pg', 'postgres', 'pg', 'postgres'] as const).map((d) => makeKit(d));
  afterAll(async () => {
    await Promise.all(kits.map((k) => k.close()));
    await admin.truncate();
  });

  it(`six connections, ${KEYS.length} keys × ${TASKS_PER_KEY} tasks, ${LIMIT} per key: never more than ${LIMIT} CLAIMED of a key in any sample, exactly ${LIMIT} each at the end`, async () => {
    const stores = kits.map((k) => k.store({ schema: admin.schema })) as PostgresStore<any>[];
    const first = stores[0]!;
    await first.setKeyConcurrency({ kind: 'tenant', limit: LIMIT });
    await first.scheduleMany(Array.from({ length: KEYS.length * TASKS_PER_KEY }, (_, i) => ({ kind: 'tenant', limitKey: KEYS[i % KEYS.length]!, payload: { i } })));
    const perKey = async () =>
      await admin.query<{ key: string; n: number }>(`select limit_key as key, count(*)::int as n from ${admin.t('task')} where state = 'CLAIMED' group by limit_key order by limit_key`);
    let maxSeen = 0;
    let samples = 0;
    let running = true;
    const sampler = (async () => {
      while (running && samples < 5_000) {
        for (const row of await perKey()) maxSeen = Math.max(maxSeen, row.n);
        samples += 1;
      }
    })();
    const deadline = Date.now() + DEADLINE_MS;
    let claims = 0;
    let taken = 0;
    await Promise.all(
      stores.map(async (store, w) => {
        // Rounds 0..14 complete every other task they took; rounds 15..24 only claim.
        for (let round = 0; round < 25 && Date.now() < deadline; round++) {
          const batch = await store.claim({ owner: `w${w}`, limit: 4, leaseMs: 60_000 });
          claims += 1;
          taken += batch.length;
          if (round < 15) for (const t of batch.filter((_, i) => i % 2 === 0)) await store.complete({ id: t.id, attempt: t.attempt, owner: `w${w}` });
        }
      }),
    );
    // A worker may still complete after the others' last claims: one more claim fills every key to the limit.
    taken += (await first.claim({ owner: 'last', limit: 20, leaseMs: 60_000 })).length;
    running = false;
    await sampler;
    for (const row of await perKey()) maxSeen = Math.max(maxSeen, row.n);
    console.log(`key_limit_race claims=${claims} taken=${taken} samples=${samples} max_claimed_per_key=${maxSeen}`);
    expect(claims).toBe(6 * 25);
    expect(samples).toBeGreaterThan(0);
    expect(maxSeen).toBe(LIMIT);
    expect(await perKey()).toEqual(KEYS.map((key) => ({ key, n: LIMIT })));
    const rows = await admin.query<{ state: string; attempt: number }>(`select state, attempt from ${admin.t('task')} where state = 'SCHEDULED' and attempt <> 0`);
    expect(rows).toEqual([]);
  });
});
