/**
 * Evidence for issue #26 item 8 (`backlog_million`): a backlog of tasks all due at once, as after an
 * outage, drained by four real worker processes (pg and postgres.js, poll and hybrid discovery).
 * Claim cost per claimed task flat from full depth to the tail, no claim storm, hybrid workers
 * without a timer per task, a drain rate that does not depend on the depth, and the history
 * checker's verdict: 0 lost, 0 duplicate effects. The test drains `POSTPONE_BACKLOG_TASKS`
 * (default 50 000: on the shared 2-core machine the drain runs at a few hundred tasks/s); `pnpm
 * backlog-million` drains a million (evidence/backlog-million.md).
 */
import { describe, it } from 'vitest';
import { ALL_VARIANTS, backlogChecks, runBacklog, runCase } from '../src/index.js';

const TASKS = Number(process.env.POSTPONE_BACKLOG_TASKS ?? 50_000);

describe('evidence: a backlog due at once', () => {
  it(`backlog_million: ${TASKS} tasks due at once after an outage drain at a flat claim cost, without a claim storm or a timer per task`, { timeout: 900_000 }, async () => {
    await runCase('backlog_million', async (v, ctx) => {
      const r = await runBacklog(ctx, { tasks: TASKS, variants: ALL_VARIANTS, concurrency: 20, drainTimeoutMs: 600_000, log: (line) => console.log(`[backlog] ${line}`) });
      v.set('tasks', TASKS)
        .set('workers', ALL_VARIANTS.length)
        .set('drainS', Number((r.drainMs / 1000).toFixed(1)))
        .set('drainRatePerS', Math.round(r.drainRatePerS))
        .set('probeDepths', r.probes.map((p) => p.depth))
        .set('claimBuffersPerTask', r.probes.map((p) => Number(p.buffersPerTask.toFixed(2))))
        .set('claimBuffersPerTaskVacuumed', r.probes.map((p) => Number(p.vacuumedBuffersPerTask.toFixed(2))))
        .set('claimServerMsPerTask', r.probes.map((p) => Number(p.msPerTask.toFixed(4))))
        .set('deadRowsAtProbes', r.probes.map((p) => p.deadRows))
        .set('decileRatesPerS', r.deciles.map((d) => Math.round(d.ratePerS)))
        .set('decileClaimClientMsPerTask', r.deciles.map((d) => Number(d.claimMsPerTask.toFixed(3))))
        .set('claimCalls', r.claimCalls)
        .set('emptyClaims', r.emptyClaims)
        .set('hybridMaxWheel', r.hybrid.map((h) => h.maxWheel))
        .set('hybridLoadsPerS', r.hybrid.map((h) => Number(h.loadsPerS.toFixed(2))))
        .set('violations', r.verdict.violations.length)
        .set('final', Object.entries(r.verdict.stats.finalStates).map(([k, n]) => `${k}:${n}`))
        .set('errors', Object.entries(r.errors).map(([k, n]) => `${k}:${n}`));
      for (const c of backlogChecks(r)) v.holds(c.name, c.ok, c.detail);
      v.equal('lost', r.verdict.counts.lost, 0);
      v.equal('duplicate effects', r.verdict.counts['duplicate-effect'], 0);
      v.equal('DONE', r.verdict.stats.finalStates.DONE ?? 0, TASKS);
    });
  });
});
