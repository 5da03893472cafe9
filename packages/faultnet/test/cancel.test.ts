import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const KIND = 'job';
const HOUR_MS = 3_600_000;
const TERMINAL = ['DONE', 'CANCELLED', 'DEAD'];

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
    await runCase('race_due_vs_cancel', async (v, ctx) => {
      const rounds = 200;
      const batch = 20;
      const dueMs = 150;
      const worker = { ...CASE_WORKER, concurrency: 20, pollIntervalMs: 10 };
      const workers = ['r1', 'r2'].map((name) => ctx.spawn({ name, run: { mode: 'worker', worker, handler: { kind: KIND, workMs: 40 } } }));
      await allReady(workers);
      const allowed = new Set(['CANCELLED/CANCELLED/effects=0', 'REQUESTED/CANCELLED/effects=0', 'TOO_LATE/DONE/effects=1']);
      const outcomes = new Map<string, number>();
      let violations = 0;
      for (let first = 0; first < rounds; first += batch) {
        // Cancel from 100 ms before to 150 ms after the due time: before the claim, while running, after the end.
        const sent = await Promise.all(
          Array.from({ length: Math.min(batch, rounds - first) }, async (_, i) => {
            const { id } = await ctx.store.schedule({ kind: KIND, payload: { round: first + i }, delayMs: dueMs });
            await sleep(dueMs - 100 + Math.floor(Math.random() * 250));
            return { id, cancel: await ctx.store.cancel(id) };
          }),
        );
        const ids = sent.map((s) => s.id);
        await pollUntil(async () => (await ctx.db.countIn(TERMINAL, ids)) === ids.length, { timeoutMs: 20_000, what: 'round tasks terminal' });
        for (const { id, cancel } of sent) {
          const [task, effects] = await Promise.all([ctx.db.task(id), ctx.db.effects(id)]);
          const key = `${cancel}/${task.state}/effects=${effects.length}`;
          outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
          if (!allowed.has(key)) violations++;
        }
      }
      await stopAll(workers);
      const counted = [...outcomes.values()].reduce((a, b) => a + b, 0);
      v.set('rounds', counted)
        .set('violations', violations)
        .set('outcomes', [...outcomes].sort().map(([k, n]) => `${k}=${n}`));
      v.equal('rounds', counted, rounds);
      v.equal('violations', violations, 0);
    });
  });
});
