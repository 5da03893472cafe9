/**
 * The scheduler on the in-memory store with a TestClock (docs/contract.md#recurring-schedules):
 * horizon, missed policies, reconcile (added, changed, removed), two schedulers on one store, and
 * option checks. Passes are run with `runOnce`; nothing waits on real time.
 */
import { PostponeError, type Task, TestClock, ValidationError } from '@postpone/core';
import { createMemoryStore, type MemoryStore } from '@postpone/memory';
import { pollUntil } from '@postpone/testkit';
import { describe, expect, it } from 'vitest';
import { type CronSchedule, createCronScheduler, type CronSchedulerOptions } from '../src/index.js';

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const MINUTE = 60_000;

async function tasksOf(store: MemoryStore, kind: string): Promise<readonly Task[]> {
  const page = await store.listTasks({ kinds: [kind], order: 'oldest', limit: 1_000 });
  return page.tasks;
}

function setup(schedules: CronSchedule[], extra: Partial<CronSchedulerOptions> = {}) {
  const clock = new TestClock(T0);
  const store = createMemoryStore({ clock });
  const make = (s = schedules, more: Partial<CronSchedulerOptions> = {}) =>
    createCronScheduler({ store, schedules: s, horizonMs: 5 * MINUTE, intervalMs: MINUTE, onError: (e) => errors.push(e), ...extra, ...more });
  const errors: unknown[] = [];
  return { clock, store, make, errors };
}

const everyMinute: CronSchedule = { name: 'sweep', cron: '* * * * *', kind: 'sweep', payload: (occurrence) => ({ at: occurrence.toISOString() }) };

describe('cron scheduler (memory store, TestClock)', () => {
  it('schedules the occurrences within the horizon as SCHEDULED tasks due at each; a second pass adds none', async () => {
    const { store, make, errors } = setup([everyMinute]);
    const cron = make();
    expect(await cron.reconcile()).toEqual({ added: ['sweep'], changed: [], unchanged: [], removed: [] });
    const first = await cron.runOnce();
    const due = [1, 2, 3, 4, 5].map((m) => new Date(T0 + m * MINUTE));
    expect(first.scheduled.sweep?.map((s) => s.occurrence)).toEqual(due);
    const tasks = await tasksOf(store, 'sweep');
    expect(tasks.map((t) => [t.dueAt, t.payload, t.state])).toEqual(due.map((d) => [d, { at: d.toISOString() }, 'SCHEDULED']));
    expect(await cron.runOnce()).toMatchObject({ scheduled: { sweep: [] }, passed: 0, stale: [] });
    expect((await store.listCronSchedules())[0]?.watermark).toEqual(due[4]);
    expect(errors).toEqual([]);
  });

  it('two schedulers on one store, passes interleaved: every occurrence exactly one task', async () => {
    const { clock, store, make } = setup([everyMinute]);
    const a = make();
    const b = make();
    await Promise.all([a.reconcile(), b.reconcile()]);
    let total = 0;
    for (let i = 0; i < 30; i++) {
      const [ra, rb] = await Promise.all([a.runOnce(), b.runOnce()]);
      total += (ra.scheduled.sweep?.length ?? 0) + (rb.scheduled.sweep?.length ?? 0);
      clock.tick(37_000);
    }
    const dues = (await tasksOf(store, 'sweep')).map((t) => t.dueAt.getTime());
    expect(total).toBe(dues.length);
    expect(new Set(dues).size).toBe(dues.length);
    // Every minute from T0+1 min to the last one within the horizon of the last pass, none missing.
    const last = T0 + 29 * 37_000 + 5 * MINUTE;
    const expected = Array.from({ length: Math.floor((last - T0) / MINUTE) }, (_, i) => T0 + (i + 1) * MINUTE);
    expect(dues).toEqual(expected);
  });

  it("missed occurrences after a gap: 'last' schedules the latest one, 'all' the latest maxMissed, 'skip' none", async () => {
    const policies = ['last', 'all', 'skip'] as const;
    const { clock, store, make } = setup(policies.map((missed) => ({ name: missed, cron: '*/10 * * * *', kind: missed, missed })), { maxMissed: 4 });
    const cron = make();
    await cron.reconcile();
    clock.tick(3 * 60 * MINUTE + 5 * MINUTE); // 3 h 5 min without a pass: 18 occurrences missed
    const now = clock.now();
    const report = await cron.runOnce();
    const past = (kind: string) => tasksOf(store, kind).then((ts) => ts.filter((t) => t.dueAt.getTime() < now).map((t) => t.dueAt.getTime()));
    const latest = T0 + 3 * 60 * MINUTE;
    expect(await past('last')).toEqual([latest]);
    expect(await past('all')).toEqual([latest - 30 * MINUTE, latest - 20 * MINUTE, latest - 10 * MINUTE, latest]);
    expect(await past('skip')).toEqual([]);
    // Beside the missed ones, each policy schedules the next occurrence (T0 + 3 h 10 min, within the 5 min horizon).
    for (const p of policies) expect((await tasksOf(store, p)).filter((t) => t.dueAt.getTime() >= now).map((t) => t.dueAt.getTime())).toEqual([latest + 10 * MINUTE]);
    expect(Object.fromEntries(policies.map((p) => [p, report.scheduled[p]?.length]))).toEqual({ last: 2, all: 5, skip: 1 });
    // The missed tasks are due at once (claimable now).
    expect((await store.claim({ owner: 'w', limit: 100, leaseMs: 1_000 })).length).toBe(5);
  });

  it('a changed expression is re-based; the old declaration goes stale; a removed schedule is deleted, its tasks stay', async () => {
    const { clock, store, make } = setup([everyMinute]);
    const old = make();
    await old.reconcile();
    await old.runOnce();
    clock.tick(MINUTE);
    const every5 = { ...everyMinute, cron: '*/5 * * * *' };
    const next = make([every5, { name: 'other', cron: '0 0 * * *', kind: 'other' }]);
    expect(await next.reconcile()).toEqual({ added: ['other'], changed: ['sweep'], unchanged: [], removed: [] });
    expect(await old.runOnce()).toMatchObject({ stale: ['sweep'], scheduled: {} });
    clock.tick(5 * MINUTE);
    await next.runOnce();
    // Watermark was T0+5min (scheduled ahead by the old expression); the new one continues after it.
    const dues = (await tasksOf(store, 'sweep')).map((t) => (t.dueAt.getTime() - T0) / MINUTE);
    expect(dues).toEqual([1, 2, 3, 4, 5, 10]);
    const last = make([every5]);
    expect(await last.reconcile()).toEqual({ added: [], changed: [], unchanged: ['sweep'], removed: ['other'] });
    expect((await store.listCronSchedules()).map((s) => s.name)).toEqual(['sweep']);
  });

  it('a schedule deleted by another process (removeUndeclared) is re-added by the next pass and scheduled from then on; no occurrence twice', async () => {
    const { clock, store, make, errors } = setup([everyMinute]);
    const a = make();
    await a.reconcile();
    expect((await a.runOnce()).scheduled.sweep).toHaveLength(5); // T0+1..5 min, watermark T0+5 min
    const old = make([]); // an old deploy that declares nothing, removeUndeclared default
    expect(await old.reconcile()).toMatchObject({ removed: ['sweep'] });
    expect(await store.listCronSchedules()).toEqual([]);
    clock.tick(2 * MINUTE);
    const pass = await a.runOnce();
    expect(pass.readded).toEqual(['sweep']);
    expect(pass.stale).toEqual([]);
    // Re-added with watermark = now (T0+2 min); T0+3..5 min are tasks already: only T0+6, 7 are new.
    expect(pass.scheduled.sweep?.map((s) => (s.occurrence.getTime() - T0) / MINUTE)).toEqual([6, 7]);
    expect(await store.listCronSchedules()).toMatchObject([{ name: 'sweep', watermark: new Date(T0 + 7 * MINUTE) }]);
    clock.tick(MINUTE);
    expect(await a.runOnce()).toMatchObject({ readded: [], stale: [] });
    const dues = (await tasksOf(store, 'sweep')).map((t) => (t.dueAt.getTime() - T0) / MINUTE);
    expect(dues).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // A fresh process (nothing seen) re-adding it after the gap makes up no occurrence of the gap.
    await old.reconcile();
    clock.tick(10 * MINUTE);
    const fresh = make();
    const again = await fresh.runOnce();
    expect(again.readded).toEqual(['sweep']);
    expect(again.scheduled.sweep?.map((s) => (s.occurrence.getTime() - T0) / MINUTE)).toEqual([14, 15, 16, 17, 18]);
    expect(errors).toEqual([]);
  });

  it('carries queue, priority and retry into each occurrence task; refuses bad ones naming the field', async () => {
    const { clock, store, make } = setup([
      { ...everyMinute, queue: 'reports', priority: 7, retry: { maxAttempts: 4, baseMs: 2_000 } },
    ]);
    const cron = make();
    await cron.reconcile();
    await cron.runOnce();
    const tasks = await tasksOf(store, 'sweep');
    expect(tasks).toHaveLength(5);
    for (const t of tasks) expect(t).toMatchObject({ queue: 'reports', priority: 7, maxAttempts: 4, retry: { maxAttempts: 4, baseMs: 2_000 } });
    clock.tick(2 * MINUTE);
    expect(await store.claim({ owner: 'w', leaseMs: 1_000, limit: 10 })).toHaveLength(0); // the default queue never sees them
    expect((await store.claim({ owner: 'w', leaseMs: 1_000, limit: 10, queue: 'reports' })).map((t) => (t.dueAt.getTime() - T0) / MINUTE)).toEqual([1, 2]);
  });

  it('refuses bad options with a ValidationError naming the field', () => {
    const store = createMemoryStore();
    const bad = (options: unknown, field: string) => {
      let error: unknown;
      try {
        createCronScheduler(options as CronSchedulerOptions);
      } catch (e) {
        error = e;
      }
      expect(ValidationError.isInstance(error), String(error)).toBe(true);
      expect((error as ValidationError).field).toBe(field);
    };
    const ok = { name: 'n', cron: '* * * * *', kind: 'k' };
    bad({ store, schedules: [{ ...ok, cron: '61 * * * *' }] }, 'schedules[0].cron');
    bad({ store, schedules: [{ ...ok, timeZone: 'Mars/Olympus' }] }, 'schedules[0].timeZone');
    bad({ store, schedules: [ok, ok] }, 'schedules[1].name');
    bad({ store, schedules: [{ ...ok, missed: 'some' }] }, 'schedules[0].missed');
    bad({ store, schedules: [{ ...ok, cron: '* * * * * * *' }] }, 'schedules[0].cron');
    bad({ store, schedules: [{ ...ok, cron: '* * * *' }] }, 'schedules[0].cron');
    bad({ store, schedules: [{ ...ok, cron: '0 0 30 2 *' }] }, 'schedules[0].cron');
    bad({ store, schedules: [{ ...ok, cron: '0 0 31 4 *' }] }, 'schedules[0].cron');
    bad({ store, schedules: [{ ...ok, queue: '' }] }, 'schedules[0].queue');
    bad({ store, schedules: [{ ...ok, priority: 1.5 }] }, 'schedules[0].priority');
    bad({ store, schedules: [{ ...ok, retry: { baseMs: -1 } }] }, 'schedules[0].retry.baseMs');
    bad({ store, schedules: [{ ...ok, maxAttempts: 2, retry: { maxAttempts: 3 } }] }, 'schedules[0].retry.maxAttempts');
    bad({ store, schedules: [{ ...ok, kind: '' }] }, 'schedules[0].kind');
    bad({ store, schedules: [{ ...ok, every: 5 }] }, 'schedules[0].every');
    bad({ store, schedules: [{ ...ok, payload: { bad: 'a\u0000' } }] }, 'schedules[0].payload.bad');
    bad({ store, schedules: [], intervalMs: 60_000, horizonMs: 60_000 }, 'intervalMs');
    bad({ store: {}, schedules: [] }, 'store');
  });

  it('a payload function that throws goes to onError; the other schedules still run, the failing one is retried next pass', async () => {
    let fail = true;
    const { store, make, errors } = setup([
      { name: 'a', cron: '* * * * *', kind: 'a', payload: () => {
        if (fail) throw new Error('payload boom');
        return 1;
      } },
      { name: 'b', cron: '* * * * *', kind: 'b' },
    ]);
    const cron = make();
    await cron.reconcile();
    await cron.runOnce();
    expect(errors.map(String)).toEqual(['Error: payload boom']);
    expect((await tasksOf(store, 'a')).length).toBe(0);
    expect((await tasksOf(store, 'b')).length).toBe(5);
    fail = false;
    await cron.runOnce();
    expect((await tasksOf(store, 'a')).length).toBe(5);
  });

  it('start() reconciles and runs the loop; a second start() is refused; stop() ends it', async () => {
    const { store, make } = setup([everyMinute]);
    const cron = make();
    expect(await cron.start()).toMatchObject({ added: ['sweep'] });
    await expect(cron.start()).rejects.toMatchObject({ code: 'INVALID_OPTION', field: 'start' });
    await cron.stop();
    expect((await tasksOf(store, 'sweep')).length).toBe(5);
    await cron.stop();
    await expect(cron.start()).rejects.toMatchObject({ code: 'INVALID_OPTION', field: 'start' });
  });

  it('a store fault in the loop goes to onError, never an unhandled rejection; a failed start() can be retried', async () => {
    const { store, make, errors } = setup([everyMinute]);
    const cron = make(undefined, { horizonMs: 100, intervalMs: 10 });
    await cron.start();
    await store.close();
    await pollUntil(() => errors.length >= 2, { timeoutMs: 5_000, what: 'two failed passes reported' });
    await cron.stop();
    expect(errors.every((e) => PostponeError.isInstance(e) && e.code === 'STORE_CLOSED')).toBe(true);
    const closed = setup([everyMinute]);
    await closed.store.close();
    const again = closed.make();
    await expect(again.start()).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    await expect(again.start()).rejects.toMatchObject({ code: 'STORE_CLOSED' });
  });
});
