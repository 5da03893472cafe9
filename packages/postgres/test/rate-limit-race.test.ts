/**
 * Rate limits under concurrent claimers on real connections (docs/contract.md#rate-limits): six
 * connections (both drivers) claim at once from a kind limited to 7 per minute and a queue limited
 * to 11 per minute, database clock. Exactly 7 and 11 tasks are claimed however the claims
 * interleave: each limited claim locks its limits' rows first, so no two claimers share a window's
 * room. The rest stays SCHEDULED with no attempt used, and the logs hold one entry per claim.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { makeKit, migratedSchema } from './support/kits.js';

const admin = migratedSchema('rate_limit_race');
const DEADLINE_MS = 30_000;

describe('concurrent rate-limited claims', () => {
  const kits = (['pg', 'postgres', 'pg', 'postgres', 'pg', 'postgres'] as const).map((d) => makeKit(d));
  afterAll(async () => {
    await Promise.all(kits.map((k) => k.close()));
    await admin.truncate();
  });

  it('six connections: a kind limited to 7 per minute and a queue to 11 per minute give exactly 7 and 11 claims', async () => {
    const stores = kits.map((k) => k.store({ schema: admin.schema })) as PostgresStore<any>[];
    const first = stores[0]!;
    await first.setRateLimit({ kind: 'api', limit: 7, windowMs: 60_000 });
    await first.setRateLimit({ queue: 'mail', limit: 11, windowMs: 60_000 });
    const api = await first.scheduleMany(Array.from({ length: 60 }, (_, i) => ({ kind: 'api', payload: { i } })));
    const mail = await first.scheduleMany(Array.from({ length: 60 }, (_, i) => ({ kind: i % 2 === 0 ? 'a' : 'b', queue: 'mail', payload: { i } })));
    const claimed: { id: string; kind: string }[] = [];
    let calls = 0;
    const deadline = Date.now() + DEADLINE_MS;
    await Promise.all(
      stores.map(async (store, w) => {
        for (let round = 0; round < 25 && Date.now() < deadline; round++) {
          const queue = round % 2 === 0 ? 'default' : 'mail';
          const batch = await store.claim({ owner: `w${w}`, limit: 3, leaseMs: 60_000, queue });
          calls += 1;
          claimed.push(...batch.map((t) => ({ id: t.id, kind: t.kind })));
        }
      }),
    );
    const apiIds = new Set(api.map((t) => t.id));
    const mailIds = new Set(mail.map((t) => t.id));
    expect(calls).toBe(6 * 25);
    expect(new Set(claimed.map((c) => c.id)).size).toBe(claimed.length);
    expect(claimed.filter((c) => apiIds.has(c.id))).toHaveLength(7);
    expect(claimed.filter((c) => mailIds.has(c.id))).toHaveLength(11);
    const rows = await admin.query<{ state: string; attempt: number; n: number }>(
      `select state, attempt, count(*)::int as n from ${admin.t('task')} group by state, attempt order by state`,
    );
    expect(rows).toEqual([
      { state: 'CLAIMED', attempt: 1, n: 18 },
      { state: 'SCHEDULED', attempt: 0, n: 120 - 18 },
    ]);
    const logs = await admin.query<{ scope: string; n: number }>(`select scope, cardinality(starts) as n from ${admin.t('rate_limit')} order by scope`);
    expect(logs).toEqual([
      { scope: 'kind', n: 7 },
      { scope: 'queue', n: 11 },
    ]);
    expect((await first.listRateLimits()).map((r) => [r.name, r.used])).toEqual([
      ['api', 7],
      ['mail', 11],
    ]);
  });
});
