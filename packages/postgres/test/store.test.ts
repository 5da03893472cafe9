/**
 * PostgreSQL-side details of the store on both drivers: batch results in input order while other
 * sessions insert, values that round-trip exactly through jsonb and timestamptz.
 */
import { MAX_DELAY_MS, TestClock } from '@postpone/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { DRIVERS, makeKit, migratedSchema } from './support/kits.js';

const admin = migratedSchema('store');

describe.each(DRIVERS)('store details (%s)', (driver) => {
  const kit = makeKit(driver);
  const clock = new TestClock();
  let store: PostgresStore<any>;
  beforeAll(() => {
    store = kit.store({ schema: admin.schema, clock });
  });
  afterEach(() => admin.truncate());
  afterAll(async () => {
    await store.close();
    await kit.close();
  });

  it('scheduleMany returns ids in input order while three other sessions schedule at the same time', async () => {
    const others = [makeKit('pg'), makeKit('postgres'), makeKit('pg')];
    try {
      const noise = others.map((k) =>
        (async () => {
          const s = k.store({ schema: admin.schema });
          for (let i = 0; i < 20; i++) await s.scheduleMany(Array.from({ length: 10 }, () => ({ kind: 'noise' })));
        })(),
      );
      const batches = await Promise.all(
        [0, 1, 2, 3, 4].map((b) => store.scheduleMany(Array.from({ length: 200 }, (_, i) => ({ kind: `b${b}`, payload: { i }, delayMs: (i * 7919) % 1_000 })))),
      );
      await Promise.all(noise);
      for (const [b, batch] of batches.entries()) {
        expect(batch).toHaveLength(200);
        const rows = await admin.query<{ id: string; kind: string; i: number; due: number }>(
          `select id::text, kind, (payload->>'i')::int as i, floor(extract(epoch from due_at) * 1000)::float8 as due from ${admin.t('task')} where kind = $1`,
          [`b${b}`],
        );
        const byId = new Map(rows.map((r) => [r.id, r]));
        batch.forEach((s, i) => {
          expect(byId.get(s.id)?.i).toBe(i);
          expect(byId.get(s.id)?.due).toBe(s.dueAt.getTime());
          expect(s.dueAt.getTime()).toBe(clock.now() + ((i * 7919) % 1_000));
        });
      }
      expect(await admin.count()).toBe(5 * 200 + 3 * 20 * 10);
    } finally {
      await Promise.all(others.map((k) => k.close()));
    }
  });

  it('payloads and results round-trip exactly through jsonb', async () => {
    const payloads = [
      null,
      true,
      0,
      -1.5e-300,
      0.1,
      -9007199254740991,
      9007199254740991,
      'plain',
      'quotes " \\ \' and \n newlines, emoji 🎉, CJK 预约',
      [1, 'two', [3], { four: 4 }],
      { nested: { deep: { list: [null, false, { x: '' }] } }, 'key with space': 1, '': 'empty key' },
    ];
    const scheduled = await store.scheduleMany(payloads.map((payload) => ({ kind: 'json', payload })));
    const claimed = await store.claim({ owner: 'w', limit: 100, leaseMs: 1_000 });
    expect(claimed.map((c) => c.payload)).toEqual(payloads);
    for (const [i, s] of scheduled.entries()) {
      expect((await store.getTask(s.id))?.payload).toEqual(payloads[i]);
      expect(await store.complete({ id: s.id, attempt: 1, owner: 'w', result: payloads[i] })).toBe('DONE');
      expect((await store.getTask(s.id))?.result).toEqual(payloads[i]);
    }
    // Magnitudes beyond 2^53 - 1 are refused, not stored: RFC 8259 §6 calls only integers within
    // ±(2^53 - 1) interoperable, and a reader's JSON.parse rounds larger ones (UNSAFE_INTEGER).
    await expect(store.schedule({ kind: 'json', payload: { amount: -1.5e300 } })).rejects.toMatchObject({ code: 'UNSAFE_INTEGER' });
  });

  it('runAt at the edges of the accepted range (year 1, 100 years after now) round-trips to the millisecond', async () => {
    const first = new Date(0);
    first.setUTCFullYear(1, 0, 1);
    const edges = [first, new Date(clock.now() + MAX_DELAY_MS), new Date(Date.UTC(2030, 5, 1, 12, 0, 0, 123))];
    const scheduled = await store.scheduleMany(edges.map((runAt) => ({ kind: 'edge', runAt })));
    expect(scheduled.map((s) => s.dueAt)).toEqual(edges);
    for (const [i, s] of scheduled.entries()) expect((await store.getTask(s.id))?.dueAt).toEqual(edges[i]);
    // Year 1 is long past: due now. A century ahead is not.
    expect((await store.claim({ owner: 'w', limit: 10, leaseMs: 1_000 })).map((c) => c.id)).toEqual([scheduled[0]?.id]);
  });
});
