/**
 * Cron across jumps of the database host's clock (issue #26 item 7, README "Failure modes", evidence
 * `cron_clock_jump`): a PostgreSQL server of its own under libfaketime (offset read from a file at every
 * clock read), no injected clock — the scheduler's time is the database's `now()`. Two scheduler
 * instances (two processes' worth) pass after each step of the server clock: 0, −1 h, back to 0, +1 h,
 * −1 h again. Schedules every minute with each `missed` policy. Checked: no occurrence becomes two tasks
 * (one task per due time per schedule, the watermark never moves back); after the backward jump nothing
 * is scheduled until the new clock passes the watermark (occurrences already tasks are not redone);
 * after the forward jump exactly what the policy keeps of the skipped hour (docs/contract.md#recurring-schedules):
 * `all` every skipped minute, `last` the latest one, `skip` none; and every pass's report matches the
 * occurrences the policy names for the watermark before it and the pass's now.
 */
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { createPgStore } from '@postpone/postgres/pg';
import { createDbClockShift, type DbClockShift, recordCase } from '@postpone/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CronPassReport, type CronSchedule, createCronScheduler } from '../src/index.js';

const HOUR_S = 3_600;
const MINUTE = 60_000;
const HORIZON = MINUTE;
const SCHEDULES: CronSchedule[] = [
  { name: 'all', cron: '* * * * *', kind: 'all', missed: 'all' },
  { name: 'last', cron: '* * * * *', kind: 'last', missed: 'last' },
  { name: 'skip', cron: '* * * * *', kind: 'skip', missed: 'skip' },
];

let server: EmbeddedDatabase;
let clock: DbClockShift;
let admin: pg.Client;

/** The server's `clock_timestamp()` in ms. */
async function dbNowMs(): Promise<number> {
  const { rows } = await admin.query<{ ms: number }>('select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms');
  return rows[0]?.ms ?? Number.NaN;
}

async function setOffset(seconds: number): Promise<void> {
  await clock.set(seconds, dbNowMs);
}

/** Whole minutes strictly after `after` and strictly before `before`. */
function minutesBetween(after: number, before: number): number[] {
  const out: number[] = [];
  for (let m = Math.floor(after / MINUTE) * MINUTE + MINUTE; m < before && out.length < 1_000; m += MINUTE) out.push(m);
  return out;
}

beforeAll(async () => {
  clock = createDbClockShift('postpone-cronclock-');
  server = await startEmbeddedPostgres({ serverEnv: clock.serverEnv });
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
}, 240_000);

afterAll(async () => {
  await admin?.end().catch(() => {});
  await server?.stop();
  clock?.dispose();
});

describe('cron across database clock jumps (pg)', () => {
  it('no occurrence twice across −1 h and +1 h; the skipped hour per the missed policy', async () => {
    const store = createPgStore({ connectionString: server.url, schema: 'cron_clock_jump' });
    const fields: Record<string, number | string> = {};
    let pass = false;
    try {
      await store.migrate();
      const errors: unknown[] = [];
      const make = () => createCronScheduler({ store, schedules: SCHEDULES, horizonMs: HORIZON, intervalMs: 1_000, onError: (e) => errors.push(e) });
      const a = make();
      const b = make();
      await setOffset(0);
      await a.reconcile();
      await b.reconcile();
      const scheduledAt: Record<string, number[]> = { all: [], last: [], skip: [] };

      /** Both instances pass; each pass's report must be what the policy names for the watermark before it. */
      const passes = async (step: string): Promise<Record<string, number>> => {
        const counts: Record<string, number> = { all: 0, last: 0, skip: 0 };
        for (const scheduler of [a, b]) {
          const before = new Map((await store.listCronSchedules()).map((r) => [r.name, r.watermark.getTime()]));
          const report: CronPassReport = await scheduler.runOnce();
          const nowMs = report.now.getTime();
          for (const { name, missed } of SCHEDULES) {
            const w = before.get(name) as number;
            const past = minutesBetween(w, nowMs);
            const kept = missed === 'all' ? past.slice(-100) : missed === 'last' ? past.slice(-1) : [];
            const ahead = minutesBetween(Math.max(w, nowMs - 1), nowMs + HORIZON + 1);
            const got = (report.scheduled[name] ?? []).map((s) => s.occurrence.getTime());
            expect(got, `${step} ${name}`).toEqual([...kept, ...ahead]);
            scheduledAt[name]?.push(...got);
            counts[name] = (counts[name] ?? 0) + got.length;
            // The watermark never moves back.
            const after = (await store.listCronSchedules()).find((r) => r.name === name)?.watermark.getTime() as number;
            expect(after).toBeGreaterThanOrEqual(w);
          }
        }
        return counts;
      };

      const start = await passes('at 0');
      await setOffset(-HOUR_S);
      const back = await passes('at −1 h');
      // The watermark is an hour ahead of the new now: nothing is scheduled, nothing is missed.
      expect(back).toEqual({ all: 0, last: 0, skip: 0 });
      await setOffset(0);
      const again = await passes('back at 0');
      await setOffset(HOUR_S);
      const fwd = await passes('at +1 h');
      // The skipped hour: about 60 minutes missed ('all' keeps each, 'last' one, 'skip' none), plus the horizon.
      expect(fwd.all).toBeGreaterThanOrEqual(58);
      expect(fwd.last).toBeLessThanOrEqual(3);
      expect(fwd.skip).toBeLessThanOrEqual(2);
      await setOffset(0);
      const back2 = await passes('at 0 after +1 h (−1 h)');
      expect(back2).toEqual({ all: 0, last: 0, skip: 0 });

      // One task per due time per schedule, in the database too.
      const doubles = await admin.query('select kind, due_at, count(*)::int as n from cron_clock_jump.task group by kind, due_at having count(*) > 1');
      expect(doubles.rows).toEqual([]);
      for (const name of ['all', 'last', 'skip']) {
        const times = scheduledAt[name] ?? [];
        expect(new Set(times).size, name).toBe(times.length);
      }
      // 'all' lost nothing: every minute from its first occurrence to its last is a task.
      const all = [...(scheduledAt.all ?? [])].sort((x, y) => x - y);
      const first = all[0] as number;
      const last = all[all.length - 1] as number;
      expect(all).toEqual(minutesBetween(first - 1, last + 1));
      expect(errors).toEqual([]);
      Object.assign(fields, {
        steps: '0,-1h,0,+1h,0',
        all_at0: start.all ?? 0,
        all_atMinus1h: back.all ?? 0,
        all_back: again.all ?? 0,
        all_atPlus1h: fwd.all ?? 0,
        last_atPlus1h: fwd.last ?? 0,
        skip_atPlus1h: fwd.skip ?? 0,
        after_second_back: (back2.all ?? 0) + (back2.last ?? 0) + (back2.skip ?? 0),
        doubles: doubles.rows.length,
        all_contiguous_minutes: all.length,
      });
      pass = true;
    } finally {
      recordCase('cron_clock_jump', pass, fields);
      await store.close();
    }
  }, 60_000);
});
