import { describe, it } from 'vitest';
import {
  allReady,
  CASE_WORKER,
  type CaseContext,
  effectSummary,
  pollUntil,
  runCase,
  shellExitStatus,
  startAll,
  STALL_WORKER,
  taskSummary,
  type Verdict,
  type VariantPlan,
} from '../src/index.js';

const KIND = 'job';
const PARK_FIRST_ATTEMPT = [{ point: 'afterClaim', attempts: [1] }] as const;

/** Waits (polling the database) until `owner` holds the task. */
async function claimedBy(ctx: CaseContext, id: string, owner: string): Promise<void> {
  await pollUntil(async () => {
    const task = await ctx.db.task(id);
    return task.state === 'CLAIMED' && task.leaseOwner === owner;
  }, { timeoutMs: 15_000, intervalMs: 10, what: `task ${id} claimed by ${owner}` });
}

/**
 * A claims and parks; SIGSTOP past its lease; B reclaims, claims attempt 2 and completes; SIGCONT;
 * A sees its lease lost, is let go, and commits late. Records what it measured.
 */
async function lateCommit(v: Verdict, ctx: CaseContext, variant?: VariantPlan) {
  const worker = { ...CASE_WORKER, abandonGraceMs: 10_000 };
  const run = (park: boolean) => ({ mode: 'worker' as const, worker, handler: { kind: KIND, ...(park ? { park: PARK_FIRST_ATTEMPT } : {}) }, ...(variant ? { variant } : {}) });
  const a = ctx.spawn({ name: 'sA', run: run(true) });
  const b = ctx.spawn({ name: 'sB', waitForStart: true, run: run(false) });
  await allReady([a, b]);
  const { id } = await ctx.store.schedule({ kind: KIND, payload: {} });
  await a.waitFor('parked', (e) => e.id === id);
  await startAll([b]);
  a.sigstop();
  const stoppedAt = performance.now();
  await b.waitFor('committed', (e) => e.id === id, 15_000);
  const afterB = await ctx.db.task(id);
  const resumeMark = a.events.mark();
  a.sigcont();
  const stoppedMs = performance.now() - stoppedAt;
  const lost = await a.waitFor('leaseLost', (e) => e.id === id, 10_000, resumeMark);
  const refused = await a.waitFor('extended', (e) => e.id === id && !e.ok, 10_000, resumeMark);
  await a.send({ type: 'proceed', id, point: 'afterClaim' });
  const late = await a.waitFor('committed', (e) => e.id === id, 10_000);
  const final = await ctx.db.task(id);
  const effects = await ctx.db.effects(id);
  v.set('leaseMs', worker.leaseMs)
    .set('stoppedMs', Math.round(stoppedMs))
    .set('afterB', taskSummary(afterB))
    .set('final', taskSummary(final))
    .set('oldWorkerAttempt', late.attempt)
    .set('oldWorkerRenewal', refused.ok)
    .set('leaseLostSeen', lost.seq < late.seq)
    .set('oldWorkerCommit', late.outcome);
  v.equal('after B', taskSummary(afterB), ['DONE', 2, 'sB/a2']);
  v.equal('old worker attempt', late.attempt, 1);
  v.holds('lease loss seen before the late commit', lost.seq < late.seq, `leaseLost #${lost.seq}, commit #${late.seq}`);
  return { late, afterB, final, effects };
}

describe('evidence: leases and fencing', () => {
  it('crash_kill9_lease_retry: kill -9 mid-task; no steal while renewing; reclaimed after the lease; done at attempt 2', async () => {
    await runCase('crash_kill9_lease_retry', async (v, ctx) => {
      const a = ctx.spawn({ name: 'kA', run: { mode: 'worker', worker: CASE_WORKER, handler: { kind: KIND, park: PARK_FIRST_ATTEMPT } } });
      const b = ctx.spawn({ name: 'kB', waitForStart: true, run: { mode: 'worker', worker: CASE_WORKER, handler: { kind: KIND } } });
      await allReady([a, b]);
      const { id } = await ctx.store.schedule({ kind: KIND, payload: {} });
      await a.waitFor('parked', (e) => e.id === id);
      await startAll([b]);
      // A alive and renewing for three renewals (about a lease) while B polls and reclaims.
      const mark = a.events.mark();
      await a.waitForNth('renewed', 3, (e) => e.id === id, 10_000, mark);
      const stolen = b.eventsOf('claimed').filter((e) => e.id === id).length;
      const beforeKill = await ctx.db.task(id);
      const killedAt = performance.now();
      const exit = await a.kill9();
      const leaseEnd = (await ctx.db.task(id)).leaseUntilMs ?? Number.NaN;
      const reclaimed = await b.waitFor('reclaimed', (e) => e.id === id, 15_000);
      const killToReclaimMs = reclaimed.receivedAt - killedAt;
      const bClaim = await b.waitFor('claimed', (e) => e.id === id, 10_000);
      await b.waitFor('committed', (e) => e.id === id, 10_000);
      const final = await ctx.db.task(id);
      const effects = await ctx.db.effects(id);
      const claims = [...a.eventsOf('claimed'), ...b.eventsOf('claimed')]
        .filter((e) => e.id === id)
        .map((e) => `${e.attempt}:${e.attempt === 1 ? 'kA' : 'kB'}`);
      v.set('exitA', shellExitStatus(exit))
        .set('renewalsBeforeKill', a.eventsOf('renewed').length)
        .set('stolenWhileAliveAndRenewing', stolen)
        .set('leaseMs', CASE_WORKER.leaseMs)
        .set('killToReclaimMs', Math.round(killToReclaimMs))
        .set('claimAfterLeaseEndMs', bClaim.claimedAtMs - leaseEnd)
        .set('task', taskSummary(final).slice(0, 2))
        .set('claims', claims)
        .set('effect', effectSummary(effects));
      v.equal('exit status of A', shellExitStatus(exit), 137);
      v.equal('stolen while alive and renewing', stolen, 0);
      v.equal('held by A before the kill', [beforeKill.state, beforeKill.attempt, beforeKill.leaseOwner], ['CLAIMED', 1, 'kA']);
      v.equal('reclaim outcome', [reclaimed.attempt, reclaimed.outcome], [1, 'SCHEDULED']);
      v.atLeast('B claims only after A lease end (database clock)', bClaim.claimedAtMs - leaseEnd, 0);
      v.equal('task', taskSummary(final), ['DONE', 2, 'kB/a2']);
      v.equal('claims', claims, ['1:kA', '2:kB']);
      v.equal('effect', effectSummary(effects), ['2:kB']);
    });
  });

  it('sigstop_late_commit_rejected: a worker stopped past its lease commits late and is rejected', async () => {
    await runCase('sigstop_late_commit_rejected', async (v, ctx) => {
      const { late, afterB, final, effects } = await lateCommit(v, ctx);
      v.set('effect', effectSummary(effects));
      v.equal('late commit outcome', late.outcome, 'REJECTED_STALE');
      v.equal('final equals after B', taskSummary(final), taskSummary(afterB));
      v.equal('effect', effectSummary(effects), ['2:sB']);
    });
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
