/**
 * Evidence for bulk operations (docs/contract.md#bulk-operations): 100 000 due SCHEDULED tasks of one
 * kind cancelled by filter (`cancelMany({ kinds })`, batches of 1 000, each its own transaction) while
 * three worker processes claim and run two other kinds fed at a steady rate. The counts are exact, no
 * task of the cancelled kind is claimed, every task of the other kinds is DONE once. Reported, not
 * asserted (a loaded 2-core machine): the time of a claim statement of another kind (this process
 * claims a probe kind every 20 ms, p50/p99) and the workers' claim lateness (database clock,
 * `claimedAt − dueAt`) of the other kinds, before and during the cancel.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { TaskId } from '@postpone/core';
import { describe, it } from 'vitest';
import { allReady, STEADY_WORKER, collectClaims, lateness, pollUntil, quantile, runCase, startAll, stopAll } from '../src/index.js';

const TARGET = 'bulk-target';
const OTHERS = ['other-a', 'other-b'];
/** A kind only this process claims, one at a time, to time the claim statement. */
const PROBE = 'probe';
const BACKLOG = 100_000;
/** Other-kind tasks scheduled per feeder tick, and the tick. */
const PER_TICK = 10;
const TICK_MS = 50;

describe('evidence: bulk cancel by filter', () => {
  it(`bulk_cancel_filter: ${BACKLOG} SCHEDULED tasks of one kind cancelled by filter while 3 worker processes claim other kinds`, async () => {
    await runCase('bulk_cancel_filter', async (v, ctx) => {
      const handler = { kind: OTHERS[0] as string, alsoKinds: OTHERS.slice(1), workMs: 5 };
      const workers = ['w1', 'w2', 'w3'].map((name) => ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker: STEADY_WORKER, handler } }));
      await allReady(workers);

      // The backlog: due now, of a kind no worker handles (a worker claims only its kinds).
      for (let i = 0; i < BACKLOG; i += 5_000) {
        await ctx.store.scheduleMany(Array.from({ length: Math.min(5_000, BACKLOG - i) }, (_, j) => ({ kind: TARGET, payload: { i: i + j } })));
      }
      const counted = await ctx.pool.query<{ n: number }>(`select count(*)::int as n from "${ctx.schema}".task where kind = $1 and state = 'SCHEDULED'`, [TARGET]);
      const backlog = counted.rows[0]?.n ?? 0;
      await startAll(workers);

      // The feeder: PER_TICK other-kind tasks every TICK_MS, tagged by phase, until `stop` (bounded).
      const fed: Record<'before' | 'during', TaskId[]> = { before: [], during: [] };
      const feed = async (phase: 'before' | 'during', until: () => boolean, maxTicks: number) => {
        for (let tick = 0; tick < maxTicks && !until(); tick++) {
          const made = await ctx.store.scheduleMany(Array.from({ length: PER_TICK }, (_, j) => ({ kind: OTHERS[(tick + j) % OTHERS.length] as string, payload: { phase, tick } })));
          fed[phase].push(...made.map((t) => t.id));
          await sleep(TICK_MS);
        }
      };
      // The probe: this process claims one task of a kind of its own every 20 ms and times the claim
      // statement (a round trip of the store's claim, wall clock), then completes it.
      const probeMs: Record<'before' | 'during', number[]> = { before: [], during: [] };
      const probe = async (phase: 'before' | 'during', until: () => boolean, maxRounds: number) => {
        for (let round = 0; round < maxRounds && !until(); round++) {
          await ctx.store.schedule({ kind: PROBE, payload: { phase, round } });
          const t0 = performance.now();
          const [task] = await ctx.store.claim({ owner: 'probe', limit: 1, leaseMs: 10_000, kinds: [PROBE] });
          probeMs[phase].push(performance.now() - t0);
          if (task !== undefined) await ctx.store.complete({ id: task.id, attempt: task.attempt, owner: 'probe' });
          await sleep(20);
        }
      };
      let fedBefore = false;
      await Promise.all([
        feed('before', () => false, 40).finally(() => {
          fedBefore = true;
        }), // about 2 s of steady load without the cancel
        probe('before', () => fedBefore, 500),
      ]);

      let cancelDone = false;
      const started = performance.now();
      const cancelling = ctx.store.cancelMany({ kinds: [TARGET] }, { batchSize: 1_000 }).finally(() => {
        cancelDone = true;
      });
      // Until the cancel returns (at most ~150 s).
      await Promise.all([feed('during', () => cancelDone, 3_000), probe('during', () => cancelDone, 10_000)]);
      const result = await cancelling;
      const cancelMs = Math.round(performance.now() - started);
      const probeStats = (values: number[]) => {
        const sorted = [...values].sort((a, b) => a - b);
        return { n: sorted.length, p50: Math.round(quantile(sorted, 0.5) * 10) / 10, p99: Math.round(quantile(sorted, 0.99) * 10) / 10 };
      };
      const claimBefore = probeStats(probeMs.before);
      const claimDuring = probeStats(probeMs.during);

      const allOther = [...fed.before, ...fed.during];
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], allOther)) === allOther.length, { timeoutMs: 120_000, intervalMs: 100, what: 'every other-kind task DONE' });
      await stopAll(workers);

      const claims = collectClaims(workers);
      const byPhase = (ids: readonly TaskId[]) => {
        const set = new Set(ids);
        return claims.filter((c) => set.has(c.id));
      };
      const before = lateness(byPhase(fed.before));
      const during = lateness(byPhase(fed.during));
      const otherIds = new Set(allOther);
      const targetClaims = claims.filter((c) => !otherIds.has(c.id)).length;
      const { rows } = await ctx.pool.query<{ where: string; state: string; n: number }>(
        `select 'live' as where, state, count(*)::int as n from "${ctx.schema}".task where kind = $1 group by state
         union all
         select 'history', state, count(*)::int from "${ctx.schema}".task_history where kind = $1 group by state`,
        [TARGET],
      );
      const targetRows = Object.fromEntries(rows.map((r) => [`${r.where}:${r.state}`, r.n]));
      const done = await ctx.db.countIn(['DONE'], allOther);

      v.set('workers', workers.length)
        .set('backlog', backlog)
        .set('batchSize', 1_000)
        .set('batches', result.batches)
        .set('cancelled', result.counts.CANCELLED)
        .set('requested', result.counts.REQUESTED)
        .set('cancelMs', cancelMs)
        .set('otherBefore', fed.before.length)
        .set('otherDuring', fed.during.length)
        .set('claimCallsBefore', claimBefore.n)
        .set('claimCallP50BeforeMs', claimBefore.p50)
        .set('claimCallP99BeforeMs', claimBefore.p99)
        .set('claimCallsDuring', claimDuring.n)
        .set('claimCallP50DuringMs', claimDuring.p50)
        .set('claimCallP99DuringMs', claimDuring.p99)
        .set('claimLatenessP50BeforeMs', before.p50Ms)
        .set('claimLatenessP99BeforeMs', before.p99Ms)
        .set('claimLatenessP50DuringMs', during.p50Ms)
        .set('claimLatenessP99DuringMs', during.p99Ms)
        .set('claimLatenessMaxDuringMs', during.maxMs)
        .set('claims', claims.length)
        .set('done', done);
      v.equal('backlog scheduled', backlog, BACKLOG);
      v.equal('counts', result.counts, { CANCELLED: BACKLOG, REQUESTED: 0, TOO_LATE: 0, ALREADY_CANCELLED: 0, NOT_FOUND: 0 });
      v.equal('batches', result.batches, BACKLOG / 1_000);
      v.equal('the kind in the database: all CANCELLED in history, none live', targetRows, { 'history:CANCELLED': BACKLOG });
      v.equal('claims of the cancelled kind', targetClaims, 0);
      v.atLeast('other-kind tasks fed during the cancel', fed.during.length, 1);
      v.atLeast('probe claims during the cancel', claimDuring.n, 1);
      const probeLive = await ctx.pool.query<{ n: number }>(`select count(*)::int as n from "${ctx.schema}".task where kind = $1`, [PROBE]);
      v.equal('probe tasks left live (each claimed and completed by the probe)', probeLive.rows[0]?.n, 0);
      v.equal('other kinds DONE', done, allOther.length);
      v.equal('claims of other kinds (each once)', claims.length, allOther.length);
      v.equal('distinct tasks claimed', new Set(claims.map((c) => c.id)).size, allOther.length);
      v.equal('attempts', [...new Set(claims.map((c) => c.attempt))], [1]);
    });
  }, 600_000);
});
