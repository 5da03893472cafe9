/**
 * The bodies of the seed's four main evidence cases, shared by the plain suite (normal.test.ts,
 * lease.test.ts, cancel.test.ts) and the Citus suite (citus/seed.citus-test.ts, `citus_*` lines):
 * each takes the verdict and the case context, whose `databaseUrl` (the embedded server, or the
 * Citus coordinator, where the store detects its dialect) says where the case runs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  allReady,
  CASE_WORKER,
  type CaseContext,
  claimStats,
  collectClaims,
  effectSummary,
  lateness,
  pollUntil,
  shellExitStatus,
  STEADY_WORKER,
  startAll,
  stopAll,
  taskSummary,
  type VariantPlan,
  type Verdict,
} from '../../src/index.js';

const KIND = 'job';
const TERMINAL = ['DONE', 'CANCELLED', 'DEAD'];
/** Parks attempt 1 after its claim (the case releases it with `proceed`). */
export const PARK_FIRST_ATTEMPT = [{ point: 'afterClaim', attempts: [1] }] as const;

/** normal_three_workers: 3 worker processes, 300 tasks, each claimed and done once. */
export async function normalThreeWorkers(v: Verdict, ctx: CaseContext): Promise<void> {
  const workers = ['w1', 'w2', 'w3'].map((name) =>
    // STEADY_WORKER (a 5 s lease): nothing faults a worker here, so a reclaim would only mean a renewal
    // landed late; with CASE_WORKER's 1 s lease one worker's 10 leases expired once on a loaded CI
    // machine on Citus (p50 lateness 1.9 s), and a correct reclaim failed the case.
    ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker: STEADY_WORKER, handler: { kind: KIND } } }),
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
}

/** crash_kill9_lease_retry: kill -9 mid-task; no steal while renewing; reclaimed after the lease; done at attempt 2. */
export async function crashKill9LeaseRetry(v: Verdict, ctx: CaseContext): Promise<void> {
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
}

/**
 * A claims and parks; SIGSTOP past its lease; B reclaims, claims attempt 2 and completes; SIGCONT;
 * A sees its lease lost, is let go, and commits late. Records what it measured.
 */
export async function lateCommit(v: Verdict, ctx: CaseContext, variant?: VariantPlan) {
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


/** sigstop_late_commit_rejected: a worker stopped past its lease commits late and is rejected. */
export async function sigstopLateCommitRejected(v: Verdict, ctx: CaseContext): Promise<void> {
  const { late, afterB, final, effects } = await lateCommit(v, ctx);
  v.set('effect', effectSummary(effects));
  v.equal('late commit outcome', late.outcome, 'REJECTED_STALE');
  v.equal('final equals after B', taskSummary(final), taskSummary(afterB));
  v.equal('effect', effectSummary(effects), ['2:sB']);
}

/** race_due_vs_cancel: 200 rounds of cancel near the due time end only in allowed combinations. */
export async function raceDueVsCancel(v: Verdict, ctx: CaseContext): Promise<void> {
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
}
