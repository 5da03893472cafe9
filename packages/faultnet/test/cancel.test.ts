import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, pollUntil, runCase, startAll, stopAll } from '../src/index.js';
import { raceDueVsCancel } from './cases/seed.js';

const KIND = 'job';
const HOUR_MS = 3_600_000;

describe('evidence: cancel', () => {
  it('cancel_semantics: each cancel outcome names the phase the task was in', async () => {
    await runCase('cancel_semantics', async (v, ctx) => {
      // claimKinds 'any': this worker also claims the kind it has no handler for, to make a DEAD task below.
      const worker = { ...CASE_WORKER, concurrency: 1, abandonGraceMs: 10_000, claimKinds: 'any' as const };
      const w = ctx.spawn({ name: 'cW', waitForStart: true, run: { mode: 'worker', worker, handler: { kind: KIND, park: [{ point: 'afterClaim' }] } } });
      await allReady([w]);

      const waiting = await ctx.store.schedule({ kind: KIND, payload: {}, delayMs: HOUR_MS });
      const onWaiting = await ctx.store.cancel(waiting.id);
      const onCancelled = await ctx.store.cancel(waiting.id);

      const running = await ctx.store.schedule({ kind: KIND, payload: {} });
      await startAll([w]);
      const parked = await w.waitFor('parked', (e) => e.id === running.id);
      const onRunning = await ctx.store.cancel(running.id);
      const refused = await w.waitFor('extended', (e) => e.id === running.id && !e.ok);
      const lost = await w.waitFor('leaseLost', (e) => e.id === running.id);
      const extendAfterCancel = await ctx.store.extend({ id: running.id, attempt: parked.attempt, leaseMs: worker.leaseMs });
      await w.send({ type: 'proceed', id: running.id });
      const commit = await w.waitFor('committed', (e) => e.id === running.id);
      const runningFinal = await ctx.db.task(running.id);
      const runningEffects = await ctx.db.effects(running.id);
      const afterRun = await ctx.store.cancel(running.id);

      const done = await ctx.store.schedule({ kind: KIND, payload: {} });
      await w.waitFor('parked', (e) => e.id === done.id);
      await w.send({ type: 'proceed', id: done.id });
      const doneCommit = await w.waitFor('committed', (e) => e.id === done.id);
      const onDone = await ctx.store.cancel(done.id);

      // No handler for this kind: the worker (claiming any kind) fails it, and with one attempt it is DEAD.
      const dead = await ctx.store.schedule({ kind: 'no-handler', payload: {}, maxAttempts: 1 });
      await pollUntil(async () => (await ctx.db.task(dead.id)).state === 'DEAD', { timeoutMs: 10_000, what: 'task DEAD' });
      const onDead = await ctx.store.cancel(dead.id);
      const onMissing = await ctx.store.cancel('999999999');
      await stopAll([w]);
      const doneEffects = await ctx.db.effects(done.id);
      const deadEffects = await ctx.db.effects(dead.id);

      v.set('waiting', onWaiting)
        .set('repeat', onCancelled)
        .set('running', onRunning)
        .set('workerRenewal', refused.ok)
        .set('leaseLostReason', lost.reason)
        .set('extendAfterCancel', extendAfterCancel)
        .set('complete', commit.outcome)
        .set('final', runningFinal.state)
        .set('effects', runningEffects.length)
        .set('repeatAfterRun', afterRun)
        .set('done', onDone)
        .set('doneEffects', doneEffects.length)
        .set('dead', onDead)
        .set('deadEffects', deadEffects.length)
        .set('missing', onMissing);
      v.equal('cancel while waiting', onWaiting, 'CANCELLED');
      v.equal('cancel again', onCancelled, 'ALREADY_CANCELLED');
      v.equal('cancel while running', onRunning, 'REQUESTED');
      v.equal('worker renewal after cancel', refused.ok, false);
      v.equal('lease lost reason', lost.reason, 'cancel-requested');
      v.equal('extend after cancel', extendAfterCancel, false);
      v.equal('complete after cancel', commit.outcome, 'CANCELLED_BEFORE_COMMIT');
      v.equal('final state', runningFinal.state, 'CANCELLED');
      v.equal('effects of the cancelled task', runningEffects.length, 0);
      v.equal('cancel after it ended', afterRun, 'ALREADY_CANCELLED');
      v.equal('done task committed', doneCommit.outcome, 'DONE');
      v.equal('cancel when DONE', onDone, 'TOO_LATE');
      v.equal('effects of the done task', doneEffects.length, 1);
      v.equal('cancel when DEAD', onDead, 'TOO_LATE');
      v.equal('effects of the dead task', deadEffects.length, 0);
      v.equal('cancel of a missing id', onMissing, 'NOT_FOUND');
    });
  });

  it('race_due_vs_cancel: 200 rounds of cancel near the due time end only in allowed combinations', async () => {
    await runCase('race_due_vs_cancel', raceDueVsCancel);
  });
});
