import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, effectSummary, runCase, stopAll, taskSummary } from '../src/index.js';

const KIND = 'job';

describe('evidence: failure and retry', () => {
  it('retry_backoff_then_done: two injected failures, backoff 200 ms doubling, done at attempt 3', async () => {
    await runCase('retry_backoff_then_done', async (v, ctx) => {
      const worker = { ...CASE_WORKER, pollIntervalMs: 20, backoffBaseMs: 200 };
      const w = ctx.spawn({ name: 'rW', run: { mode: 'worker', worker, handler: { kind: KIND, failAttempts: 2 } } });
      await allReady([w]);
      const { id } = await ctx.store.schedule({ kind: KIND, payload: {}, maxAttempts: 5 });
      await w.waitFor('committed', (e) => e.id === id, 15_000);
      await stopAll([w]);
      const claims = w.eventsOf('claimed').filter((e) => e.id === id);
      const gaps = claims.slice(1).map((c, i) => c.claimedAtMs - claims[i]!.claimedAtMs);
      // When each retry fell due, counted from the claim of the attempt that failed (database clock).
      const dueGaps = claims.slice(1).map((c, i) => c.dueAtMs - claims[i]!.claimedAtMs);
      const failures = w.eventsOf('failed').filter((e) => e.id === id).map((e) => e.outcome);
      const final = await ctx.db.task(id);
      const effects = await ctx.db.effects(id);
      v.set('task', taskSummary(final).slice(0, 2))
        .set('failures', failures)
        .set('backoffBaseMs', worker.backoffBaseMs)
        .set('dueGapsMs', dueGaps)
        .set('claimGapsMs', gaps)
        .set('effect', effectSummary(effects));
      v.equal('claims by attempt', claims.map((c) => c.attempt), [1, 2, 3]);
      v.equal('failures', failures, ['SCHEDULED', 'SCHEDULED']);
      v.atLeast('due gap after attempt 1', dueGaps[0] ?? Number.NaN, 200);
      v.atLeast('due gap after attempt 2', dueGaps[1] ?? Number.NaN, 400);
      v.atLeast('claim gap after attempt 1', gaps[0] ?? Number.NaN, 200);
      v.atLeast('claim gap after attempt 2', gaps[1] ?? Number.NaN, 400);
      v.equal('task', taskSummary(final), ['DONE', 3, 'rW/a3']);
      v.equal('effect', effectSummary(effects), ['3:rW']);
    });
  });

  it('retry_exhausted_dead: a task that always fails is DEAD after its 3 attempts, with no effect', async () => {
    await runCase('retry_exhausted_dead', async (v, ctx) => {
      const worker = { ...CASE_WORKER, pollIntervalMs: 20, backoffBaseMs: 50 };
      const w = ctx.spawn({ name: 'dW', run: { mode: 'worker', worker, handler: { kind: KIND, failAttempts: Number.MAX_SAFE_INTEGER } } });
      await allReady([w]);
      const { id } = await ctx.store.schedule({ kind: KIND, payload: {}, maxAttempts: 3 });
      await w.waitFor('failed', (e) => e.id === id && e.outcome === 'DEAD', 15_000);
      await stopAll([w]);
      const final = await ctx.db.task(id);
      const effects = await ctx.db.effects(id);
      const runs = w.eventsOf('handlerStarted').filter((e) => e.id === id).length;
      const failures = w.eventsOf('failed').filter((e) => e.id === id).map((e) => e.outcome);
      v.set('task', [final.state, final.attempt])
        .set('handlerRuns', runs)
        .set('failures', failures)
        .set('effects', effects.length)
        .set('lastError', final.lastError ?? 'none');
      v.equal('task', [final.state, final.attempt], ['DEAD', 3]);
      v.equal('handler runs', runs, 3);
      v.equal('failures', failures, ['SCHEDULED', 'SCHEDULED', 'DEAD']);
      v.equal('effects', effects.length, 0);
      v.holds('last error names attempt 3', (final.lastError ?? '').includes('injected failure on attempt 3'), `got ${final.lastError}`);
    });
  });
});
