/**
 * Faults on a Citus cluster (issue 25, "Faults on a cluster"): the fault workload of the plain
 * suite (`runVariant`: worker processes on the coordinator, every task's completion writing its
 * effects in the completing transaction, the whole history judged by the checker) with a node of
 * the cluster stopped, the coordinator restarted, or the schema's shard group moved mid-run.
 * Run by `vitest.citus.config.ts`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, it } from 'vitest';
import type { Store } from '@postpone/core';
import { type FaultRun, runCase, runVariant, type Variant, withCaseContext } from '../../src/index.js';
import { type CitusNode, durableCommits, moveSchema, nodeOfSchema, otherWorker, startNode, stopNode } from './cluster.js';

const PG_POLL: Variant = { driver: 'pg', discovery: 'poll' };
const POSTGRES_POLL: Variant = { driver: 'postgres', discovery: 'poll' };
/** 120 tasks due over 6 s from 300 ms, 2 workers, 100 ms of work each (the fault at 2 s). */
const WORKLOAD = { workers: 2, tasks: 120, firstDueMs: 300, spreadMs: 6_000, settleMs: 60_000, handler: { workMs: 100 } } as const;
const FAULT_AT_MS = 2_000;

/** Receive times (monotonic ms) of every claim the run's workers reported, ascending. */
function claimTimes(run: FaultRun): number[] {
  return run.children.flatMap((c) => c.eventsOf('claimed').map((e) => e.receivedAt)).sort((a, b) => a - b);
}

/** The first claim received after `at`, in ms after it (-1: none). */
function firstClaimAfter(run: FaultRun, at: number): number {
  const after = claimTimes(run).find((t) => t >= at);
  return after === undefined ? -1 : Math.round(after - at);
}

/**
 * Stops `node` `FAULT_AT_MS` after `startedAt`, keeps it down `outageMs` (and until `during`, run
 * while it is down, has settled), starts it; returns when it accepts connections again.
 */
async function outage(
  node: CitusNode,
  startedAt: number,
  outageMs: number,
  during: () => Promise<void> = async () => {},
): Promise<{ downAt: number; backAt: number; downWallMs: number; backWallMs: number }> {
  await sleep(Math.max(0, startedAt + FAULT_AT_MS - performance.now()));
  const downAt = performance.now();
  await stopNode(node);
  // From here until the start below the node is down for sure (pg_ctl stop returned; the start has not begun).
  const downWallMs = Date.now();
  await Promise.all([sleep(outageMs), during()]);
  const backWallMs = Date.now();
  await startNode(node);
  return { downAt, backAt: performance.now(), downWallMs, backWallMs };
}

/** Claims whose claim time (`claimedAt`, the coordinator's clock, this host's) lies in [fromMs, toMs) of the wall clock. */
function claimsCommittedBetween(run: FaultRun, fromMs: number, toMs: number): number {
  return run.children.flatMap((c) => c.eventsOf('claimed')).filter((e) => e.claimedAtMs >= fromMs && e.claimedAtMs < toMs).length;
}

/** The first error message a run's workers reported for `operation` (trimmed), or '' when none. */
function firstError(run: FaultRun, operation: string): string {
  const e = run.children.flatMap((c) => c.eventsOf('error')).find((x) => x.operation === operation);
  return (e?.message ?? '').replace(/\s+/g, ' ').slice(0, 160);
}

/** What the healthy group did from this process while the other group's node was down. */
interface HealthyWork {
  scheduled: number;
  scheduleErrors: number;
  completed: number;
  reclaimed: number;
  errors: string[];
}

/**
 * Schedules, claims and completes in `store`'s (healthy) group from this process, in queue
 * `outage_probe`, which the case's workers do not serve (so the checker's history stays theirs):
 * 10 keyless schedules, 5 keyed (`onConflict: 'keep'`), one `scheduleMany` of 5, then claims them and
 * completes them with `completeMany`. Then, in `spare` — a third group on the same healthy node,
 * with no workers, since the case's workers reclaim every expired lease of their own group and the
 * checker would then judge a task it never scheduled — one task scheduled, claimed with a 200 ms
 * lease, and reclaimed by `reclaimExpired` once the lease expired, then cancelled. Every failure is
 * counted, never thrown.
 */
async function healthyGroupWork(store: Store<unknown>, spare: Store<unknown>): Promise<HealthyWork> {
  const work: HealthyWork = { scheduled: 0, scheduleErrors: 0, completed: 0, reclaimed: 0, errors: [] };
  const queue = 'outage_probe';
  const attempt = async <T>(what: string, fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (error) {
      work.errors.push(`${what}: ${(error as Error).message.replace(/\s+/g, ' ').slice(0, 120)}`);
      return undefined;
    }
  };
  const schedules: (() => Promise<unknown>)[] = [
    ...Array.from({ length: 10 }, (_, i) => () => store.schedule({ kind: 'probe', queue, payload: { i } })),
    ...Array.from({ length: 5 }, (_, i) => () => store.schedule({ kind: 'probe', queue, key: `probe-${i}`, payload: { i } }, { onConflict: 'keep' })),
    () => store.scheduleMany(Array.from({ length: 5 }, (_, i) => ({ kind: 'probe', queue, payload: { batch: i } }))),
  ];
  for (const schedule of schedules) {
    const result = await attempt('schedule', schedule);
    if (result === undefined) work.scheduleErrors += 1;
    else work.scheduled += Array.isArray(result) ? result.length : 1;
  }
  const claimed = (await attempt('claim', () => store.claim({ owner: 'outage-probe', limit: 100, leaseMs: 60_000, queue }))) ?? [];
  const outcomes = (await attempt('completeMany', () => store.completeMany(claimed.map((t) => ({ id: t.id, attempt: t.attempt, owner: 'outage-probe' }))))) ?? [];
  work.completed = outcomes.filter((o) => o === 'DONE').length;
  const expiring = await attempt('schedule', () => spare.schedule({ kind: 'probe', queue, payload: 'expiring' }));
  if (expiring === undefined) work.scheduleErrors += 1;
  else work.scheduled += 1;
  const [leased] = (await attempt('claim', () => spare.claim({ owner: 'outage-probe', limit: 1, leaseMs: 200, queue }))) ?? [];
  if (expiring !== undefined && leased?.id === expiring.id) {
    await sleep(500);
    const reclaimed = (await attempt('reclaim', () => spare.reclaimExpired({ limit: 100 }))) ?? [];
    const task = await attempt('getTask', () => spare.getTask(expiring.id));
    if (reclaimed.some((r) => r.id === expiring.id) && task?.state === 'SCHEDULED' && task.failures === 1 && task.lastError === 'lease expired') work.reclaimed = 1;
    await attempt('cancel', () => spare.cancel(expiring.id));
  }
  return work;
}

/** Claims received in [from, to). */
function claimsBetween(run: FaultRun, from: number, to: number): number {
  return claimTimes(run).filter((t) => t >= from && t < to).length;
}

describe('evidence on Citus: faults on the cluster', () => {
  beforeAll(durableCommits);

  it('citus_worker_node_down: the node holding a shard group stopped 10 s; its tasks wait, the other group goes on (claims, schedules, completes, reclaims), nothing lost or run twice', async () => {
    await runCase('citus_worker_node_down', async (v, ctx) => {
      // A second Postpone schema (shard group) on the other worker node, with its own workers: the "others".
      await withCaseContext(ctx.databaseUrl, 'citus_other', async (other) => {
       await withCaseContext(ctx.databaseUrl, 'citus_spare', async (spare) => {
        const downNode = await nodeOfSchema(ctx.pool, ctx.schema);
        if ((await nodeOfSchema(ctx.pool, other.schema)) === downNode) await moveSchema(ctx.pool, other.schema, otherWorker(downNode));
        if ((await nodeOfSchema(ctx.pool, spare.schema)) === downNode) await moveSchema(ctx.pool, spare.schema, otherWorker(downNode));
        const otherNode = await nodeOfSchema(ctx.pool, other.schema);
        v.equal('the spare group on the healthy node', await nodeOfSchema(ctx.pool, spare.schema), otherNode);
        v.set('downNode', downNode).set('otherNode', otherNode);
        v.equal('the two groups on different nodes', otherNode, otherWorker(downNode));
        const outageMs = 10_000;
        let window = { downAt: 0, backAt: 0, downWallMs: 0, backWallMs: 0 };
        // The other group's tasks are due over the whole outage (2 s to 12 s after the start).
        const others = runVariant(v, other, POSTGRES_POLL, { ...WORKLOAD, tasks: 160, spreadMs: 16_000, prefix: 'other_' }, async () => {});
        // While the node is down, this process also schedules, completes and reclaims in the other group.
        let healthy: HealthyWork = { scheduled: 0, scheduleErrors: 0, completed: 0, reclaimed: 0, errors: [] };
        const down = await runVariant(v, ctx, PG_POLL, { ...WORKLOAD, prefix: 'down_' }, async (_run, startedAt) => {
          window = await outage(downNode, startedAt, outageMs, async () => {
            healthy = await healthyGroupWork(other.store as Store<unknown>, spare.store as Store<unknown>);
          });
        });
        const { run: otherRun } = await others;
        const { downAt, backAt, downWallMs, backWallMs } = window;
        // Claims of the stopped group made while its node was down for sure, by the claim's own time
        // (the coordinator's clock): none can commit. Receive times would count answers delayed on a loaded machine.
        const downClaims = claimsCommittedBetween(down.run, downWallMs, backWallMs);
        const otherClaims = claimsBetween(otherRun, downAt, backAt);
        const firstAfterMs = firstClaimAfter(down.run, backAt);
        v.set('outageMs', Math.round(backAt - downAt))
          .set('down_claimsDuringOutage', downClaims)
          .set('other_claimsDuringOutage', otherClaims)
          .set('down_firstClaimAfterRecoveryMs', firstAfterMs)
          .set('other_reclaimError', firstError(otherRun, 'reclaim'))
          .set('other_schedulesDuringOutage', healthy.scheduled)
          .set('other_scheduleErrorsDuringOutage', healthy.scheduleErrors)
          .set('other_completedDuringOutage', healthy.completed)
          .set('spare_reclaimedDuringOutage', healthy.reclaimed);
        v.equal('the stopped group claimed nothing during the outage', downClaims, 0);
        v.atLeast('the other group claimed during the outage', otherClaims, 1);
        v.equal('the healthy node scheduled during the outage (10 keyless, 5 keyed, a batch of 5; 1 to expire in the spare group)', healthy.scheduled, 21);
        v.equal("the other group's calls during the outage that failed", healthy.errors, []);
        v.equal('the other group completed what it scheduled during the outage', healthy.completed, 20);
        v.equal('the spare group on the healthy node reclaimed an expired lease during the outage', healthy.reclaimed, 1);
        v.holds('the stopped group claimed again within 10 s of its node returning', firstAfterMs >= 0 && firstAfterMs <= 10_000, `first claim ${firstAfterMs} ms after`);
       });
      });
    });
  }, 240_000);

  it('citus_coordinator_restart: the coordinator stopped (immediate) for 5 s mid-run and started; the workers absorb it, nothing lost or run twice', async () => {
    await runCase('citus_coordinator_restart', async (v, ctx) => {
      let window = { downAt: 0, backAt: 0 };
      const { run } = await runVariant(v, ctx, POSTGRES_POLL, { ...WORKLOAD, prefix: '' }, async (_run, startedAt) => {
        window = await outage('coordinator', startedAt, 5_000);
      });
      const firstAfterMs = firstClaimAfter(run, window.backAt);
      v.set('outageMs', Math.round(window.backAt - window.downAt)).set('firstClaimAfterRecoveryMs', firstAfterMs);
      v.holds('claimed again within 10 s of the coordinator returning', firstAfterMs >= 0 && firstAfterMs <= 10_000, `first claim ${firstAfterMs} ms after`);
    });
  }, 180_000);

  it('citus_shard_move: the shard group moved to the other worker node under load; 0 lost, 0 duplicates, the claim gap reported', async () => {
    await runCase('citus_shard_move', async (v, ctx) => {
      const from = await nodeOfSchema(ctx.pool, ctx.schema);
      let move = { start: 0, end: 0 };
      const { run } = await runVariant(v, ctx, PG_POLL, { ...WORKLOAD, prefix: '' }, async (_run, startedAt) => {
        await sleep(Math.max(0, startedAt + FAULT_AT_MS - performance.now()));
        const start = performance.now();
        await moveSchema(ctx.pool, ctx.schema, otherWorker(from));
        move = { start, end: performance.now() };
      });
      const to = await nodeOfSchema(ctx.pool, ctx.schema);
      // The claim gap: the longest time without a claim around the move (from the last claim before it to the first after it ended).
      const times = claimTimes(run);
      const before = times.filter((t) => t < move.start).at(-1) ?? move.start;
      const after = times.find((t) => t >= move.end) ?? Number.NaN;
      let gap = 0;
      for (let i = 1; i < times.length; i += 1) {
        const [a, b] = [times[i - 1] ?? 0, times[i] ?? 0];
        if (b >= move.start && a <= move.end) gap = Math.max(gap, b - a);
      }
      v.set('from', from)
        .set('to', to)
        .set('moveMs', Math.round(move.end - move.start))
        .set('claimGapMs', Math.round(gap))
        .set('lastClaimBeforeMoveToFirstAfterMs', Math.round(after - before))
        .set('claimsDuringMove', claimsBetween(run, move.start, move.end));
      v.equal('group now on the other node', to, otherWorker(from));
      v.holds('claims resumed after the move', Number.isFinite(after), 'no claim after the move ended');
    });
  }, 180_000);
});
