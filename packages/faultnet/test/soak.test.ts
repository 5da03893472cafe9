import { describe, it } from 'vitest';
import { recordCase } from '@postpone/testkit';
import { describeViolations, runSoak } from '../src/index.js';

describe('evidence: the soak, short', () => {
  it('soak_short: 30 s of the soak: 4 worker processes, SIGKILL or SIGSTOP every 2-5 s, a database restart, a cancel storm', async () => {
    const r = await runSoak({
      tasks: 3_000,
      durationMs: 30_000,
      workers: 4,
      restarts: 1,
      restartOutageMs: 2_000,
      cancels: 300,
      chaosMinMs: 2_000,
      chaosMaxMs: 5_000,
      settleMs: 60_000,
      seed: 20_261_130,
    });
    const s = r.verdict.stats;
    const pass = r.verdict.violations.length === 0 && r.allTerminal && r.crashed.length === 0 && r.kills + r.stops >= 4 && r.restarts === 1 && (r.cancelOutcomes.CANCELLED ?? 0) > 0;
    const line = recordCase('soak_short', pass, {
      violations: r.verdict.violations.length,
      ...(r.verdict.violations.length > 0 ? { firstViolations: describeViolations(r.verdict.violations) } : {}),
      tasks: r.options.tasks,
      durationMs: r.options.durationMs,
      kills: r.kills,
      stops: r.stops,
      restarts: r.restarts,
      cancels: r.cancelsSent,
      cancelled: r.cancelOutcomes.CANCELLED ?? 0,
      cancelOutcomes: Object.entries(r.cancelOutcomes).map(([k, n]) => `${k}:${n}`),
      cancelErrors: r.cancelErrors,
      claims: s.claims,
      unobservedClaims: s.unobservedClaims,
      reclaims: s.reclaims,
      final: Object.entries(s.finalStates).map(([k, n]) => `${k}:${n}`),
      allTerminal: r.allTerminal,
      crashed: r.crashed.length,
      processes: r.processes,
      latenessP99Ms: r.latenessP99Ms,
    });
    if (!pass) throw new Error(`soak_short FAIL: ${line}\ncrashed: ${r.crashed.join('; ')}\n${r.verdict.violations.slice(0, 10).map((v) => `${v.kind} ${v.taskId}: ${v.detail}`).join('\n')}`);
  }, 150_000);
});
