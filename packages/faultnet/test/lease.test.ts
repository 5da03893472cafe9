import { describe, it } from 'vitest';
import {
  allReady,
  type CaseContext,
  effectSummary,
  pollUntil,
  runCase,
  STALL_WORKER,
  startAll,
  taskSummary,
} from '../src/index.js';
import { crashKill9LeaseRetry, lateCommit, sigstopLateCommitRejected } from './cases/seed.js';

const KIND = 'job';

/** Waits (polling the database) until `owner` holds the task. */
async function claimedBy(ctx: CaseContext, id: string, owner: string): Promise<void> {
  await pollUntil(async () => {
    const task = await ctx.db.task(id);
    return task.state === 'CLAIMED' && task.leaseOwner === owner;
  }, { timeoutMs: 15_000, intervalMs: 10, what: `task ${id} claimed by ${owner}` });
}

describe('evidence: leases and fencing', () => {
  it('crash_kill9_lease_retry: kill -9 mid-task; no steal while renewing; reclaimed after the lease; done at attempt 2', async () => {
    await runCase('crash_kill9_lease_retry', crashKill9LeaseRetry);
  });

  it('sigstop_late_commit_rejected: a worker stopped past its lease commits late and is rejected', async () => {
    await runCase('sigstop_late_commit_rejected', sigstopLateCommitRejected);
  });

  it('negative_unfenced_late_commit: without the fence the late commit overwrites and duplicates (control)', async () => {
    await runCase('negative_unfenced_late_commit', async (v, ctx) => {
      v.set('expect', 'overwriteAndDuplicate');
      await ctx.negative.createEffectNoUnique();
      const { late, final } = await lateCommit(v, ctx, { complete: 'unfenced' });
      const { effects } = await ctx.negative.countEffectsNoUnique();
      v.set('effectsNoUnique', effects);
      // A control that does not show the overwrite and the duplicate proves nothing: FAIL.
      v.equal('late commit accepted (control must show the defect)', late.outcome, 'DONE');
      v.equal('final overwritten by the old attempt', taskSummary(final), ['DONE', 2, 'sA/a1']);
      v.equal('effects without unique key', effects, 2);
    });
  });

  it('stall_event_loop_fenced: a handler blocking its event loop past the lease is fenced off', async () => {
    await runCase('stall_event_loop_fenced', async (v, ctx) => {
      const blockMs = 2_000;
      const worker = { ...STALL_WORKER, abandonGraceMs: 5_000 };
      const a = ctx.spawn({ name: 'tA', run: { mode: 'worker', worker, handler: { kind: KIND, blockMs, awaitAbortMs: 5_000 } } });
      const b = ctx.spawn({ name: 'tB', waitForStart: true, run: { mode: 'worker', worker, handler: { kind: KIND } } });
      await allReady([a, b]);
      const { id } = await ctx.store.schedule({ kind: KIND, payload: {} });
      await claimedBy(ctx, id, 'tA');
      await startAll([b]);
      const bCommit = await b.waitFor('committed', (e) => e.id === id, 15_000);
      const aCommit = await a.waitFor('committed', (e) => e.id === id, 15_000);
      const aLost = await a.waitFor('leaseLost', (e) => e.id === id, 5_000);
      const aRefused = await a.waitFor('extended', (e) => e.id === id && !e.ok, 5_000);
      const aClaim = await a.waitFor('claimed', (e) => e.id === id);
      const bClaim = await b.waitFor('claimed', (e) => e.id === id);
      const final = await ctx.db.task(id);
      const effects = await ctx.db.effects(id);
      const runs = [a, b].flatMap((w) => w.eventsOf('handlerStarted')).filter((e) => e.id === id).length;
      const done = [a, b].flatMap((w) => w.eventsOf('committed')).filter((e) => e.id === id && e.outcome === 'DONE').length;
      const renewals = a.eventsOf('renewed').length;
      const leaseStart = aClaim.leaseUntilMs - worker.leaseMs;
      v.set('leaseMs', worker.leaseMs)
        .set('renewEveryMs', worker.renewEveryMs)
        .set('blockMs', blockMs)
        .set('renewalsOfA', renewals)
        .set('leaseStartToBClaimMs', bClaim.claimedAtMs - leaseStart)
        .set('bClaimAfterLeaseEndMs', bClaim.claimedAtMs - aClaim.leaseUntilMs)
        .set('bCommit', bCommit.outcome)
        .set('aRenewal', aRefused.ok)
        .set('aComplete', aCommit.outcome)
        .set('final', taskSummary(final))
        .set('effect', effectSummary(effects))
        .set('handlerRuns', runs)
        .set('completesDone', done);
      v.equal('A never renewed before the stall', renewals, 0);
      v.atLeast('B claims only after A lease end (database clock)', bClaim.claimedAtMs - aClaim.leaseUntilMs, 0);
      v.equal('B claims attempt 2', bClaim.attempt, 2);
      v.equal('B commit', bCommit.outcome, 'DONE');
      v.equal('A renewal after waking', aRefused.ok, false);
      v.holds('A saw its lease lost before committing', aLost.seq < aCommit.seq, `leaseLost #${aLost.seq}, commit #${aCommit.seq}`);
      v.equal('A complete', aCommit.outcome, 'REJECTED_STALE');
      v.equal('final', taskSummary(final), ['DONE', 2, 'tB/a2']);
      v.equal('effect', effectSummary(effects), ['2:tB']);
      v.equal('handler runs', runs, 2);
      v.equal('completes that succeeded', done, 1);
    });
  });
});
