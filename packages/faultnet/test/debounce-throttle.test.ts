/**
 * Evidence for the dedup key modes (docs/contract.md#dedup-keys) under a real race: 4 scheduler
 * processes (2 on `pg`, 2 on postgres.js), released at once, hammer one (kind, key) in each mode, and
 * the tasks made are exactly what the mode defines:
 * - debounce, holder SCHEDULED: 1 task; every other call replaced it.
 * - debounce, holder CLAIMED: exactly 1 task queued behind it; the holder keeps running without the key.
 * - queueBehind, holder CLAIMED: exactly 1 task queued behind it; every other call returns it.
 * - throttle (60 s): 1 task; after it is DONE, a second race makes 0 (every call throttled, returning it).
 * - throttle (250 ms) while the test completes each task as soon as it appears: the tasks made are
 *   spaced at least 250 ms apart on the database clock (`created_at`), and every one was reported created once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import { allReady, type CaseContext, type HarnessChild, runCase, startAll, stopAll } from '../src/index.js';

/** One key; each round its own kind, so a round's leftovers never meet the next one's claim. */
const KEY = 'cart-7';
const PROCESSES = ['pg', 'postgres', 'pg', 'postgres'] as const;
const PER_PROCESS = 250;

interface Totals {
  readonly calls: number;
  readonly created: number;
  readonly replaced: number;
  readonly throttled: number;
  readonly errors: number;
  readonly ids: ReadonlySet<string>;
  readonly createdIds: readonly string[];
}

/** Runs the 4 scheduler processes on `key` with `onConflict` (and `throttleMs`), released at once; sums what they report. */
async function race(ctx: CaseContext, kind: string, onConflict: string, extra: { throttleMs?: number; pauseMs?: number; count?: number } = {}): Promise<Totals> {
  const loop = { kind, key: KEY, count: extra.count ?? PER_PROCESS, parallel: 4, onConflict, ...extra };
  const children: HarnessChild[] = PROCESSES.map((driver, i) =>
    ctx.spawn({ name: `s${i + 1}`, waitForStart: true, connection: { driver }, run: { mode: 'scheduleLoop', loop } }),
  );
  await allReady(children);
  await startAll(children);
  const reports = await Promise.all(children.map((c) => c.waitFor('scheduleDone', () => true, 120_000)));
  await stopAll(children);
  const sum = (f: (r: (typeof reports)[number]) => number) => reports.reduce((n, r) => n + f(r), 0);
  return {
    calls: sum((r) => r.calls),
    created: sum((r) => r.created),
    replaced: sum((r) => r.replaced),
    throttled: sum((r) => r.throttled),
    errors: sum((r) => r.errors),
    ids: new Set(reports.flatMap((r) => r.ids)),
    createdIds: reports.flatMap((r) => r.createdIds),
  };
}

/** Every task ever made of `kind` (live and history), with its state, key column and creation time on the database clock. */
async function tasksOf(ctx: CaseContext, kind: string): Promise<{ id: string; state: string; key: string | null; createdMs: number }[]> {
  const { rows } = await ctx.pool.query<{ id: string; state: string; key: string | null; createdms: number }>(
    `select id::text as id, state, key, floor(extract(epoch from created_at) * 1000)::float8 as createdms
       from (select id, kind, state, key, created_at from "${ctx.schema}".task
             union all select id, kind, state, key, created_at from "${ctx.schema}".task_history) t
      where kind = $1 order by id`,
    [kind],
  );
  return rows.map((r) => ({ id: r.id, state: r.state, key: r.key, createdMs: Number(r.createdms) }));
}

/** Claims the one due task of `kind` from the test side (the running holder of a round). */
async function claimHolder(ctx: CaseContext, kind: string, id: string): Promise<number> {
  const claimed = await ctx.store.claim({ owner: 'holder', limit: 10, leaseMs: 120_000, kinds: [kind] });
  if (claimed.length !== 1 || claimed[0]?.id !== id) throw new Error(`expected to claim task ${id}, got ${claimed.map((t) => t.id).join(',')}`);
  return claimed[0].attempt;
}

describe('evidence: dedup key modes under a race', () => {
  it('debounce_throttle: 4 processes × 250 schedules of one key in each mode make exactly the tasks the mode defines', async () => {
    await runCase('debounce_throttle', async (v, ctx) => {
      const calls = PROCESSES.length * PER_PROCESS;
      v.set('processes', PROCESSES.length).set('drivers', '[pg,postgres,pg,postgres]').set('schedulesEach', PER_PROCESS);

      // 1. debounce on a SCHEDULED holder: one task, every other call replaced it.
      const d1 = await race(ctx, 'debounce-scheduled', 'debounce');
      const d1Tasks = await tasksOf(ctx, 'debounce-scheduled');
      v.set('debounceScheduledCreated', d1.created).set('debounceScheduledReplaced', d1.replaced).set('debounceScheduledTasks', d1Tasks.length);
      v.equal('debounce (scheduled holder): calls', d1.calls, calls);
      v.equal('debounce (scheduled holder): tasks made', d1Tasks.length, 1);
      v.equal('debounce (scheduled holder): created', d1.created, 1);
      v.equal('debounce (scheduled holder): replaced', d1.replaced, calls - 1);
      v.equal('debounce (scheduled holder): distinct ids returned', d1.ids.size, 1);

      // 2. debounce on a CLAIMED holder: exactly one task queued behind it.
      const h2 = await ctx.store.schedule({ kind: 'debounce-claimed', key: KEY });
      await claimHolder(ctx, 'debounce-claimed', h2.id);
      const d2 = await race(ctx, 'debounce-claimed', 'debounce');
      const d2Tasks = await tasksOf(ctx, 'debounce-claimed');
      const d2Holder = await ctx.db.task(h2.id);
      const d2Keyed = d2Tasks.filter((t) => t.key === KEY);
      v.set('debounceClaimedCreated', d2.created).set('debounceClaimedReplaced', d2.replaced);
      v.equal('debounce (claimed holder): created behind it', d2.created, 1);
      v.equal('debounce (claimed holder): replaced', d2.replaced, calls - 1);
      v.equal('debounce (claimed holder): tasks holding the key', d2Keyed.length, 1);
      v.equal('debounce (claimed holder): the queued task is SCHEDULED', d2Keyed[0]?.state, 'SCHEDULED');
      v.equal('debounce (claimed holder): the holder still CLAIMED', d2Holder.state, 'CLAIMED');

      // 3. queueBehind on a CLAIMED holder: exactly one task queued, every call returns it.
      const h3 = await ctx.store.schedule({ kind: 'queue-behind', key: KEY });
      await claimHolder(ctx, 'queue-behind', h3.id);
      const q3 = await race(ctx, 'queue-behind', 'queueBehind');
      const q3Keyed = (await tasksOf(ctx, 'queue-behind')).filter((t) => t.key === KEY);
      v.set('queueBehindCreated', q3.created).set('queueBehindDistinctIds', q3.ids.size);
      v.equal('queueBehind: created behind the running holder', q3.created, 1);
      v.equal('queueBehind: distinct ids returned', q3.ids.size, 1);
      v.equal('queueBehind: tasks holding the key', q3Keyed.length, 1);

      // 4. throttle 60 s: one task; after it is DONE, a second race makes none.
      const t4 = await race(ctx, 'throttle-long', 'throttle', { throttleMs: 60_000 });
      const first = [...t4.ids][0] as string;
      await ctx.store.complete({ id: first, attempt: await claimHolder(ctx, 'throttle-long', first), owner: 'holder' });
      const t4b = await race(ctx, 'throttle-long', 'throttle', { throttleMs: 60_000 });
      const t4Tasks = await tasksOf(ctx, 'throttle-long');
      v.set('throttleCreated', t4.created).set('throttleAfterDoneCreated', t4b.created).set('throttleAfterDoneThrottled', t4b.throttled).set('throttleTasks', t4Tasks.length);
      v.equal('throttle 60 s: created', t4.created, 1);
      v.equal('throttle 60 s: tasks made over both races', t4Tasks.length, 1);
      v.equal('throttle 60 s: after DONE, created', t4b.created, 0);
      v.equal('throttle 60 s: after DONE, every call throttled', t4b.throttled, calls);
      v.equal('throttle 60 s: after DONE, the id returned', [...t4b.ids], [first]);

      // 5. throttle 250 ms while every task is completed as soon as it appears: spacing on the database clock.
      const PERIOD = 250;
      let draining = true;
      let drained = 0;
      const drainer = (async () => {
        for (let i = 0; i < 5_000 && draining; i++) {
          for (const t of await ctx.store.claim({ owner: 'drainer', limit: 10, leaseMs: 60_000, kinds: ['throttle-short'] })) {
            await ctx.store.complete({ id: t.id, attempt: t.attempt, owner: 'drainer' });
            drained += 1;
          }
          await sleep(10);
        }
      })();
      const t5 = await race(ctx, 'throttle-short', 'throttle', { throttleMs: PERIOD, pauseMs: 20, count: 60 });
      draining = false;
      await drainer;
      const t5Tasks = await tasksOf(ctx, 'throttle-short');
      const gaps = t5Tasks.slice(1).map((t, i) => t.createdMs - (t5Tasks[i] as { createdMs: number }).createdMs);
      const minGap = gaps.length === 0 ? -1 : Math.min(...gaps);
      const spanMs = t5Tasks.length === 0 ? 0 : (t5Tasks.at(-1) as { createdMs: number }).createdMs - (t5Tasks[0] as { createdMs: number }).createdMs;
      v.set('shortPeriodMs', PERIOD).set('shortCalls', t5.calls).set('shortCreated', t5.created).set('shortTasks', t5Tasks.length).set('shortMinGapMs', minGap).set('shortSpanMs', spanMs).set('drained', drained);
      v.equal('throttle 250 ms: tasks made = created reports', t5Tasks.length, t5.created);
      v.equal('throttle 250 ms: created ids = tasks', [...t5.createdIds].sort(), t5Tasks.map((t) => t.id).sort());
      v.atLeast('throttle 250 ms: more than one window', t5Tasks.length, 2);
      v.atLeast('throttle 250 ms: smallest gap between tasks made (ms, database clock)', minGap, PERIOD);
      v.atMost('throttle 250 ms: tasks made at most one per period', t5Tasks.length, Math.floor(spanMs / PERIOD) + 1);
      v.equal('errors in every race', d1.errors + d2.errors + q3.errors + t4.errors + t4b.errors + t5.errors, 0);
    });
  }, 600_000);
});
