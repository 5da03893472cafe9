/**
 * DST (docs/contract.md#recurring-schedules) with the store's clock under the test's control
 * (TestClock): the scheduler passes every 20 minutes of store time across America/New_York's
 * spring-forward (2026-03-08, 02:00–03:00 does not exist) and fall-back (2026-11-01, 01:00–02:00
 * happens twice) days, on the memory store and on PostgreSQL (pg). Evidence case `cron_dst` (PostgreSQL).
 */
import { type Store, type Task, TestClock } from '@postpone/core';
import type { CronStore } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { recordCase } from '@postpone/testkit';
import { createMemoryStore } from '@postpone/memory';
import { createPgStore } from '@postpone/postgres/pg';
import { describe, expect, it } from 'vitest';
import { type CronSchedule, createCronScheduler } from '../src/index.js';

const ZONE = 'America/New_York';
const MINUTE = 60_000;
const SCHEDULES: CronSchedule[] = [
  { name: 'at-0230', cron: '30 2 * * *', timeZone: ZONE, kind: 'at-0230', missed: 'all' },
  { name: 'at-0130', cron: '30 1 * * *', timeZone: ZONE, kind: 'at-0130', missed: 'all' },
  { name: 'hourly', cron: '0 * * * *', timeZone: ZONE, kind: 'hourly', missed: 'all' },
];
/** Store-time windows around the two transitions; a store of its own for each (months between would be missed occurrences). */
const WINDOWS = [
  ['2026-03-07T05:00:00Z', '2026-03-10T04:00:00Z'],
  ['2026-10-31T04:00:00Z', '2026-11-03T05:00:00Z'],
] as const;

type CronTestStore = Store<any> & CronStore;

interface DstOutcome {
  dueAt: Record<string, string[]>;
  /** Tasks per local date, per schedule. */
  perDay: Record<string, Record<string, number>>;
  passes: number;
  stale: number;
  /** Errors the scheduler reported (none expected). */
  errors: number;
}

async function runWindows(open: (clock: TestClock) => Promise<{ store: CronTestStore; close(): Promise<void> }>): Promise<DstOutcome> {
  const day = new Intl.DateTimeFormat('en-CA', { timeZone: ZONE, year: 'numeric', month: '2-digit', day: '2-digit' });
  const tasks: Task[] = [];
  let passes = 0;
  let stale = 0;
  const errors: unknown[] = [];
  for (const [from, to] of WINDOWS) {
    const clock = new TestClock(new Date(from));
    const { store, close } = await open(clock);
    try {
      const cron = createCronScheduler({ store, schedules: SCHEDULES, horizonMs: 30 * MINUTE, intervalMs: 20 * MINUTE, onError: (e) => errors.push(e) });
      await cron.reconcile();
      for (let t = Date.parse(from); t <= Date.parse(to); t += 20 * MINUTE) {
        clock.setTime(t);
        stale += (await cron.runOnce()).stale.length;
        passes += 1;
      }
      tasks.push(...(await store.listTasks({ order: 'oldest', limit: 1_000 })).tasks);
    } finally {
      await close();
    }
  }
  const dueAt: Record<string, string[]> = {};
  const perDay: Record<string, Record<string, number>> = {};
  for (const t of tasks) {
    (dueAt[t.kind] ??= []).push(t.dueAt.toISOString());
    const d = day.format(t.dueAt);
    const counts = (perDay[t.kind] ??= {});
    counts[d] = (counts[d] ?? 0) + 1;
  }
  return { dueAt, perDay, passes, stale, errors: errors.length };
}

const EXPECTED_0230 = [
  '2026-03-07T07:30:00.000Z',
  '2026-03-08T07:00:00.000Z', // 02:30 does not exist that day: runs once, at 03:00 EDT
  '2026-03-09T06:30:00.000Z',
  '2026-10-31T06:30:00.000Z',
  '2026-11-01T07:30:00.000Z',
  '2026-11-02T07:30:00.000Z',
];
const EXPECTED_0130 = [
  '2026-03-07T06:30:00.000Z',
  '2026-03-08T06:30:00.000Z',
  '2026-03-09T05:30:00.000Z',
  '2026-10-31T05:30:00.000Z',
  '2026-11-01T05:30:00.000Z', // 01:30 happens twice that day: runs once, at the first (EDT)
  '2026-11-02T06:30:00.000Z',
];

function check(outcome: DstOutcome): void {
  expect([outcome.stale, outcome.errors]).toEqual([0, 0]);
  expect(outcome.dueAt['at-0230']).toEqual(EXPECTED_0230);
  expect(outcome.dueAt['at-0130']).toEqual(EXPECTED_0130);
  expect([outcome.perDay.hourly?.['2026-03-08'], outcome.perDay.hourly?.['2026-11-01']]).toEqual([23, 25]);
  const hourly = outcome.dueAt.hourly ?? [];
  expect(new Set(hourly).size).toBe(hourly.length);
}

describe('cron across DST (America/New_York), TestClock', () => {
  it('memory store: once on the skipped day, once on the repeated day; 23 and 25 hourly runs', async () => {
    check(await runWindows(async (clock) => ({ store: createMemoryStore({ clock }), close: async () => {} })));
  });

  it('cron_dst: the same on PostgreSQL (pg), the store clock injected', async () => {
    const url = testDatabaseUrl();
    const outcome = await runWindows(async (clock) => {
      const schema = uniqueSchemaName('cron_dst');
      const store = createPgStore({ connectionString: url, schema, clock });
      await store.migrate();
      return {
        store,
        async close() {
          await store.close();
          await dropSchema(url, schema);
        },
      };
    });
    const on = (kind: string, date: string) => outcome.perDay[kind]?.[date] ?? 0;
    const springRun = outcome.dueAt['at-0230']?.find((d) => d.startsWith('2026-03-08')) ?? 'none';
    const fallRun = outcome.dueAt['at-0130']?.find((d) => d.startsWith('2026-11-01')) ?? 'none';
    const pass =
      JSON.stringify(outcome.dueAt['at-0230']) === JSON.stringify(EXPECTED_0230) &&
      JSON.stringify(outcome.dueAt['at-0130']) === JSON.stringify(EXPECTED_0130) &&
      on('hourly', '2026-03-08') === 23 &&
      on('hourly', '2026-11-01') === 25 &&
      outcome.stale === 0 &&
      outcome.errors === 0;
    recordCase('cron_dst', pass, {
      store: 'pg',
      zone: ZONE,
      passes: outcome.passes,
      runs0230On0308: on('at-0230', '2026-03-08'),
      at0230On0308: springRun,
      runs0130On1101: on('at-0130', '2026-11-01'),
      at0130On1101: fallRun,
      hourlyOn0308: on('hourly', '2026-03-08'),
      hourlyOn1101: on('hourly', '2026-11-01'),
      stale: outcome.stale,
      errors: outcome.errors,
    });
    check(outcome);
  });
});
