/**
 * Evidence `pause_resume` (docs/contract.md#pause-and-resume), with real worker processes: three
 * workers (two polling every 50 ms, one hybrid) run a stream of tasks of the default queue; the queue
 * is paused mid-run. From the database clock: no claim (`claimedAt`, the claim statement's `now()`)
 * later than one poll interval after the pause committed (bounded by the store's now read once
 * `pause()` returned; `lastStartAfterPauseMs` reports the last start against the pause statement's own now()); the tasks running at the pause finish
 * (CLAIMED drains to 0); the waiting ones stay SCHEDULED with no attempt used. Then the queue is
 * resumed: every task DONE, none lost, none claimed twice, no attempt above 1.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import { allReady, STEADY_WORKER, collectClaims, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const TASKS = 600;
/** Tasks fall due 10 ms apart: a 6 s stream, so the pause lands mid-run. */
const SPACING_MS = 10;
/** How long the queue stays paused. */
const PAUSED_MS = 2_000;

describe('evidence: pause and resume a queue', () => {
  it(`pause_resume: 3 worker processes (2 polling, 1 hybrid), ${TASKS} tasks; the queue paused mid-run starts nothing new after one poll interval; resumed, all DONE once at attempt 1`, async () => {
    await runCase('pause_resume', async (v, ctx) => {
      const poll = { ...STEADY_WORKER, concurrency: 5 };
      const hybrid = { ...poll, discovery: 'hybrid' as const, fallbackPollMs: 1_000 };
      const handler = { kind: 'job', workMs: 100, reportEnd: true };
      const workers = [
        ctx.spawn({ name: 'w1', waitForStart: true, run: { mode: 'worker', worker: poll, handler } }),
        ctx.spawn({ name: 'w2', waitForStart: true, run: { mode: 'worker', worker: poll, handler } }),
        ctx.spawn({ name: 'w3', waitForStart: true, run: { mode: 'worker', worker: hybrid, handler } }),
      ];
      await allReady(workers);
      const tasks = await ctx.store.scheduleMany(Array.from({ length: TASKS }, (_, i) => ({ kind: 'job', payload: { i }, delayMs: 200 + i * SPACING_MS })));
      const ids = tasks.map((t) => t.id);
      await startAll(workers);

      // Mid-run: pause once a quarter of the tasks is DONE.
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], ids)) >= TASKS / 4, { timeoutMs: 60_000, intervalMs: 20, what: 'a quarter DONE' });
      if (!(await ctx.store.pause({ queue: 'default' }, { reason: 'evidence', by: 'pause_resume' }))) throw new Error('the queue was already paused');
      const afterPause = (await ctx.store.now()).getTime(); // the database clock after the pause committed
      const [row] = await ctx.store.listPaused();
      const pausedAt = row!.pausedAt.getTime(); // the pause statement's now(): before its commit
      const runningAtPause = await ctx.db.countIn(['CLAIMED'], ids);
      const doneAtPause = await ctx.db.countIn(['DONE'], ids);
      // Running tasks finish; nothing new starts.
      await pollUntil(async () => (await ctx.db.countIn(['CLAIMED'], ids)) === 0, { timeoutMs: 30_000, intervalMs: 20, what: 'the running tasks finished' });
      await sleep(PAUSED_MS);
      const { rows: waiting } = await ctx.pool.query<{ n: number; used: number; due: number }>(
        `select count(*)::int as n, count(*) filter (where attempt > 0)::int as used, count(*) filter (where due_at <= now())::int as due
           from "${ctx.schema}".task where state = 'SCHEDULED' and id = any($1::bigint[])`,
        [ids],
      );
      const claimedWhilePaused = await ctx.db.countIn(['CLAIMED'], ids);
      const resumedAt = (await ctx.store.now()).getTime();
      if (!(await ctx.store.resume({ queue: 'default' }))) throw new Error('the queue was not paused');

      await pollUntil(async () => (await ctx.db.countIn(['DONE'], ids)) === TASKS, { timeoutMs: 90_000, intervalMs: 50, what: `${TASKS} tasks DONE` });
      await stopAll(workers);

      const claims = collectClaims(workers);
      const beforeResume = claims.filter((c) => c.claimedAtMs < resumedAt);
      const afterResume = claims.filter((c) => c.claimedAtMs >= resumedAt);
      const lastStartBeforeResume = Math.max(...beforeResume.map((c) => c.claimedAtMs));
      // The pause committed between its statement's now() (pausedAt) and the store's now read after it returned (afterPause).
      const startsAfterPauseWindow = beforeResume.filter((c) => c.claimedAtMs > afterPause + poll.pollIntervalMs).length;
      const firstStartAfterResume = Math.min(...afterResume.map((c) => c.claimedAtMs));
      const done = await ctx.db.countIn(['DONE'], ids);
      const attempts = [...new Set(claims.map((c) => c.attempt))].sort();
      v.set('workers', workers.length)
        .set('tasks', TASKS)
        .set('pollIntervalMs', poll.pollIntervalMs)
        .set('doneAtPause', doneAtPause)
        .set('runningAtPause', runningAtPause)
        .set('pauseCommitWindowMs', afterPause - pausedAt)
        .set('lastStartAfterPauseMs', lastStartBeforeResume - pausedAt)
        .set('startsLaterThanOnePoll', startsAfterPauseWindow)
        .set('waitingWhilePaused', waiting[0]?.n ?? -1)
        .set('dueWhilePaused', waiting[0]?.due ?? -1)
        .set('attemptsUsedWhilePaused', waiting[0]?.used ?? -1)
        .set('pausedForMs', resumedAt - pausedAt)
        .set('firstStartAfterResumeMs', firstStartAfterResume - resumedAt)
        .set('claimsByWorker', workers.map((w) => w.eventsOf('claimed').length))
        .set('claims', claims.length)
        .set('done', done);
      v.equal('no claim later than one poll interval after the pause (database clock)', startsAfterPauseWindow, 0);
      v.atMost('last start after the pause committed (ms, database clock)', lastStartBeforeResume - afterPause, poll.pollIntervalMs);
      v.atLeast('tasks running at the pause', runningAtPause, 1);
      v.equal('CLAIMED while paused (the running ones finished)', claimedWhilePaused, 0);
      v.atLeast('tasks due and waiting while paused', waiting[0]?.due ?? 0, 1);
      v.equal('attempts used by waiting tasks', waiting[0]?.used, 0);
      v.atLeast('claims after the resume', afterResume.length, 1);
      v.equal('claims', claims.length, TASKS);
      v.equal('distinct tasks claimed', new Set(claims.map((c) => c.id)).size, TASKS);
      v.equal('attempts', attempts, [1]);
      v.equal('DONE (0 lost)', done, TASKS);
    });
  }, 180_000);
});
