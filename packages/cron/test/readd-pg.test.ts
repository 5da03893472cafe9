/**
 * A schedule deleted by another process, on PostgreSQL (docs/contract.md#recurring-schedules): two
 * scheduler instances on one schema and one TestClock (the clock enters every statement as `$1`);
 * the second declares nothing and removes the schedule (`removeUndeclared` default); the first's next
 * pass re-adds it (`readded`, not `stale`) and schedules its occurrences from then on, none twice.
 * Also: an occurrence's task carries the schedule's queue, priority and retry.
 */
import { TestClock } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCronScheduler } from '../src/index.js';

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const MINUTE = 60_000;

describe('cron scheduler on PostgreSQL: re-adding a deleted schedule', () => {
  const url = testDatabaseUrl();
  const schema = uniqueSchemaName('cron_readd');
  const clock = new TestClock(T0);
  let store: ReturnType<typeof createPgStore>;

  beforeAll(async () => {
    store = createPgStore({ connectionString: url, schema, clock });
    await store.migrate();
  });

  afterAll(async () => {
    await store?.close();
    await dropSchema(url, schema);
  });

  const dues = async (kind: string) => (await store.listTasks({ kinds: [kind], order: 'oldest', limit: 100 })).tasks.map((t) => (t.dueAt.getTime() - T0) / MINUTE);

  it('the first instance re-adds what the second removed, and schedules from then on; no occurrence twice', async () => {
    const errors: unknown[] = [];
    const opts = { store, horizonMs: 5 * MINUTE, intervalMs: MINUTE, onError: (e: unknown) => errors.push(e) };
    const a = createCronScheduler({ ...opts, schedules: [{ name: 'sweep', cron: '* * * * *', kind: 'sweep' }] });
    await a.reconcile();
    expect((await a.runOnce()).scheduled.sweep).toHaveLength(5);
    const old = createCronScheduler({ ...opts, schedules: [] });
    expect(await old.reconcile()).toMatchObject({ removed: ['sweep'] });
    expect(await store.listCronSchedules()).toEqual([]);
    clock.tick(2 * MINUTE);
    const pass = await a.runOnce();
    expect(pass).toMatchObject({ readded: ['sweep'], stale: [] });
    expect(pass.scheduled.sweep?.map((s) => (s.occurrence.getTime() - T0) / MINUTE)).toEqual([6, 7]);
    expect((await store.listCronSchedules()).map((s) => [s.name, s.watermark])).toEqual([['sweep', new Date(T0 + 7 * MINUTE)]]);
    clock.tick(MINUTE);
    expect(await a.runOnce()).toMatchObject({ readded: [], stale: [] });
    expect(await dues('sweep')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(errors).toEqual([]);
  });

  it("an occurrence's task has the schedule's queue, priority and retry", async () => {
    const cron = createCronScheduler({
      store,
      horizonMs: 5 * MINUTE,
      intervalMs: MINUTE,
      removeUndeclared: false,
      schedules: [{ name: 'q', cron: '*/2 * * * *', kind: 'q', queue: 'reports', priority: -3, retry: { maxAttempts: 4, baseMs: 2_000 } }],
    });
    await cron.reconcile();
    const pass = await cron.runOnce();
    expect(pass.scheduled.q?.map((s) => (s.occurrence.getTime() - T0) / MINUTE)).toEqual([4, 6, 8]);
    const tasks = (await store.listTasks({ kinds: ['q'], limit: 10 })).tasks;
    expect(tasks).toHaveLength(3);
    for (const t of tasks) expect(t).toMatchObject({ queue: 'reports', priority: -3, maxAttempts: 4, retry: { maxAttempts: 4, baseMs: 2_000 } });
  });
});
