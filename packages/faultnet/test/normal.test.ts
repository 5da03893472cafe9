import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, claimStats, collectClaims, lateness, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const KIND = 'job';

describe('evidence: the normal path', () => {
  it('normal_three_workers: 3 worker processes, 300 tasks, each claimed and done once', async () => {
    await runCase('normal_three_workers', async (v, ctx) => {
      const workers = ['w1', 'w2', 'w3'].map((name) =>
        ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker: CASE_WORKER, handler: { kind: KIND } } }),
      );
      await allReady(workers);
      // Due over 1.5 s: every task waits, some while the workers are busy with others.
      const scheduled = await ctx.store.scheduleMany(Array.from({ length: 300 }, (_, i) => ({ kind: KIND, payload: { i }, delayMs: 100 + (i % 100) * 15 })));
      const ids = scheduled.map((s) => s.id);
      await startAll(workers);
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], ids)) === ids.length, { timeoutMs: 60_000, intervalMs: 50, what: '300 tasks DONE' });
      await stopAll(workers);

      const claims = collectClaims(workers);
      const stats = claimStats(claims);
      const late = lateness(claims);
      const completed = workers.flatMap((w) => w.eventsOf('committed')).filter((e) => e.outcome === 'DONE').length;
      const effects = await ctx.db.effects();
      const done = await ctx.db.countIn(['DONE'], ids);
      v.set('tasks', ids.length)
        .set('completed', completed)
        .set('done', done)
        .set('effects', effects.length)
        .set('claims', stats.claims)
        .set('duplicates', stats.tasksClaimedMoreThanOnce)
        .set('perWorker', workers.map((w) => `${w.name}:${w.eventsOf('claimed').length}`))
        .set('minLatenessMs', late.minMs)
        .set('p50LatenessMs', late.p50Ms)
        .set('p99LatenessMs', late.p99Ms)
        .set('maxLatenessMs', late.maxMs);
      v.equal('completed', completed, 300);
      v.equal('done', done, 300);
      v.equal('effects', effects.length, 300);
      v.equal('claims', stats.claims, 300);
      v.equal('duplicates', stats.tasksClaimedMoreThanOnce, 0);
      v.equal('effect attempts', [...new Set(effects.map((e) => e.attempt))], [1]);
      v.atLeast('min lateness', late.minMs, 0);
    });
  });
});
