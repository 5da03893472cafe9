import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, claimStats, collectClaims, lateness, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const KIND = 'job';
const HOUR_MS = 3_600_000;

describe('evidence: boundaries', () => {
  it('boundary_not_before_due: no task is claimed before its due time', async () => {
    await runCase('boundary_not_before_due', async (v, ctx) => {
      // Polling every 10 ms: a worker asks far more often than tasks fall due.
      const worker = { ...CASE_WORKER, pollIntervalMs: 10 };
      const workers = ['b1', 'b2'].map((name) => ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker, handler: { kind: KIND } } }));
      await allReady(workers);
      const due = await ctx.store.scheduleMany(Array.from({ length: 100 }, (_, i) => ({ kind: KIND, payload: { i }, delayMs: 300 + i * 10 })));
      const notDue = await ctx.store.scheduleMany(Array.from({ length: 10 }, (_, i) => ({ kind: KIND, payload: { i }, delayMs: HOUR_MS })));
      const dueIds = due.map((t) => t.id);
      const notDueIds = notDue.map((t) => t.id);
      await startAll(workers);
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], dueIds)) === dueIds.length, { timeoutMs: 30_000, what: '100 due tasks DONE' });
      await stopAll(workers);

      const claims = collectClaims(workers);
      const early = claims.filter((c) => c.claimedAtMs < c.dueAtMs).length;
      const notDueClaimed = claims.filter((c) => notDueIds.includes(c.id)).length;
      const stillScheduled = await ctx.db.countIn(['SCHEDULED'], notDueIds);
      const effectsBeforeDue = await ctx.db.effectsBeforeDue();
      const late = lateness(claims);
      v.set('tasks', dueIds.length)
        .set('claims', claims.length)
        .set('earlyClaims', early)
        .set('effectsBeforeDue', effectsBeforeDue)
        .set('minLatenessMs', late.minMs)
        .set('maxLatenessMs', late.maxMs)
        .set('notDue', notDueIds.length)
        .set('notDueClaimed', notDueClaimed)
        .set('notDueStillScheduled', stillScheduled);
      v.equal('claims', claimStats(claims).claims, 100);
      v.equal('early claims', early, 0);
      v.equal('effects before due', effectsBeforeDue, 0);
      v.atLeast('min lateness', late.minMs, 0);
      v.equal('not-due tasks claimed', notDueClaimed, 0);
      v.equal('not-due tasks still SCHEDULED', stillScheduled, 10);
    });
  });

  it('boundary_claim_limit: with 25 due and limit 10, claims return 10, 10, 5, 0', async () => {
    await runCase('boundary_claim_limit', async (v, ctx) => {
      const due = await ctx.store.scheduleMany(Array.from({ length: 25 }, (_, i) => ({ kind: KIND, payload: { i } })));
      const notDue = await ctx.store.scheduleMany(Array.from({ length: 5 }, (_, i) => ({ kind: KIND, payload: { i }, delayMs: HOUR_MS })));
      const batches: string[][] = [];
      for (let i = 0; i < 4; i++) {
        const claimed = await ctx.store.claim({ owner: 'limit', limit: 10, leaseMs: CASE_WORKER.leaseMs });
        batches.push(claimed.map((t) => t.id));
      }
      const sizes = batches.map((b) => b.length);
      const claimedIds = batches.flat();
      const dueIds = new Set(due.map((t) => t.id));
      v.set('due', dueIds.size).set('notDue', notDue.length).set('limit', 10).set('batches', sizes).set('distinct', new Set(claimedIds).size);
      v.equal('batch sizes', sizes, [10, 10, 5, 0]);
      v.equal('distinct ids claimed', new Set(claimedIds).size, 25);
      v.holds('only due tasks claimed', claimedIds.every((id) => dueIds.has(id)), 'a not-due task was claimed');
    });
  });
});
