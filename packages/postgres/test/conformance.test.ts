/**
 * The shared Store conformance suite (`@postpone/conformance`) against both drivers. One schema for
 * the file; each test gets a fresh store with its own TestClock on emptied tables.
 */
import { describeStoreConformance, type ConformanceHarness } from '@postpone/conformance';
import { TestClock, ValidationError } from '@postpone/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { translateError } from '../src/index.js';
import { Admin, DRIVERS, type DriverName, makeKit } from './support/kits.js';

const admin = Admin.create('conformance');
const kits = Object.fromEntries(DRIVERS.map((d) => [d, makeKit(d)])) as Record<DriverName, ReturnType<typeof makeKit>>;
const marker = admin.t('conformance_marker');

beforeAll(async () => {
  await kits.pg.store({ schema: admin.schema }).migrate();
  await admin.query(`create table ${marker} (task_id bigint primary key)`);
});
afterAll(async () => {
  await Promise.all(DRIVERS.map((d) => kits[d].close()));
  await admin.drop();
});

async function makeHarness(driver: DriverName): Promise<ConformanceHarness<any>> {
  const kit = kits[driver];
  const clock = new TestClock();
  const store = kit.store({ schema: admin.schema, clock });
  await store.migrate();
  return {
    store,
    clock,
    async forceRow(id, patch) {
      try {
        await kit.query(`update ${admin.t('task')} set state = $2::text, lease_owner = $3::text, lease_until = $4::timestamptz where id = $1::bigint`, [
          id,
          patch.state,
          patch.leaseOwner,
          patch.leaseUntil?.toISOString() ?? null,
        ]);
      } catch (error) {
        throw translateError(error);
      }
    },
    inTransaction: (fn, end) => kit.inTransaction(fn, end),
    async writeMarker(tx, taskId) {
      await kit.queryIn(tx, `insert into ${marker} (task_id) values ($1::bigint)`, [taskId]);
    },
    async readMarker(taskId) {
      return (await kit.query(`select 1 from ${marker} where task_id = $1::bigint`, [taskId])).length === 1;
    },
    async cleanup() {
      await store.close();
      await admin.truncate(['conformance_marker']);
    },
  };
}

// On a Citus coordinator (the Citus suite) the store refuses dependencies and batches with a typed
// error (no trigger on a distributed table), and per-key rate limits (the claim's log upsert is a form
// Citus refuses): those groups are not registered there; the refusal itself is checked below.
const onCitus = (await admin.query(`select 1 from pg_extension where extname = 'citus'`)).length > 0;
const without = onCitus ? ['dependencyCases', 'batchCases', 'keyRateLimitCases'] : [];
for (const driver of DRIVERS) describeStoreConformance(`postgres (${driver})`, () => makeHarness(driver), { without });

if (onCitus) {
  describe('per-key rate limits on Citus (docs/contract.md#per-key-rate-limits)', () => {
    it('setKeyRateLimit is refused with ValidationError KEY_RATE_LIMITS_UNSUPPORTED and nothing is written; list and delete work', async () => {
      const h = await makeHarness('pg');
      try {
        const store = h.store as import('../src/index.js').PostgresStore<unknown>;
        const error = await store.setKeyRateLimit({ kind: 'k', limit: 1, windowMs: 1_000 }).catch((e: unknown) => e);
        expect(ValidationError.isInstance(error) && error.code).toBe('KEY_RATE_LIMITS_UNSUPPORTED');
        expect(await store.listKeyRateLimits()).toEqual([]);
        expect(await store.deleteKeyRateLimit({ kind: 'k' })).toBe(false);
        await store.schedule({ kind: 'k', limitKey: 'a' });
        expect(await store.claim({ owner: 'w', limit: 5, leaseMs: 60_000, kinds: ['k'] })).toHaveLength(1);
      } finally {
        await h.cleanup();
      }
    });
  });
}
