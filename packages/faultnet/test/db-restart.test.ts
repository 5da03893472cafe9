import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { ALL_VARIANTS, type CaseContext, PgServer, runCase, runVariant, type Variant, variantName, type Verdict } from '../src/index.js';

/**
 * db_restart_mid_run: the 200 tasks over 10 s with the stop at 3 s for 5 s and a 20 s outage,
 * shrunk to keep the suite short: 120 tasks over 6 s, stop at 2 s for `outageMs`.
 */
const SHORT_OUTAGE_MS = 3_000;
const LONG_OUTAGE_MS = 10_000;

let server: PgServer;
beforeAll(async () => {
  server = await PgServer.start();
});
afterAll(async () => {
  await server?.close();
});

/** Stops the server in immediate mode `atMs` after the start, keeps it down `outageMs`, starts it again; returns when it is back. */
async function restartDuring(startedAt: number, atMs: number, outageMs: number): Promise<{ downAt: number; backAt: number }> {
  await sleep(Math.max(0, startedAt + atMs - performance.now()));
  const downAt = performance.now();
  await server.stopImmediate();
  await sleep(outageMs);
  await server.start();
  return { downAt, backAt: performance.now() };
}

async function variantWithRestart(v: Verdict, ctx: CaseContext, variant: Variant, outageMs: number, prefix: string) {
  let backAt = 0;
  let downAt = 0;
  const { run, violations } = await runVariant(v, ctx, variant, { workers: 2, tasks: 120, firstDueMs: 300, spreadMs: 6_000, settleMs: 40_000, prefix, handler: { workMs: 350 } }, async (_run, startedAt) => {
    ({ downAt, backAt } = await restartDuring(startedAt, 2_000, outageMs));
  });
  // Recovery: the first claim any worker reports after the server is back (no worker restarted).
  const after = run.children.flatMap((c) => c.eventsOf('claimed')).filter((e) => e.receivedAt > backAt);
  const firstClaimAfterMs = after.length > 0 ? Math.round(Math.min(...after.map((e) => e.receivedAt)) - backAt) : -1;
  const claimErrors = run.errorsByOperation().claim ?? 0;
  v.set(`${prefix}outageMs`, outageMs).set(`${prefix}firstClaimAfterRecoveryMs`, firstClaimAfterMs).set(`${prefix}claimErrorsDuringOutage`, claimErrors);
  v.holds(`${prefix}claimed again within 5 s of recovery`, firstClaimAfterMs >= 0 && firstClaimAfterMs <= 5_000, `first claim ${firstClaimAfterMs} ms after recovery`);
  // Bounded retry: a tight loop fails thousands of times; allow at most one failed claim per worker per poll interval (50 ms).
  const downMs = backAt - downAt;
  v.set(`${prefix}downMs`, Math.round(downMs));
  v.atMost(`${prefix}claim errors (no tight loop)`, claimErrors, Math.ceil((2 * downMs) / 50) + 10);
  v.equal(`${prefix}processes`, run.children.length, 2);
  return violations;
}

describe('evidence: database restarts', () => {
  it('db_restart_mid_run: immediate stop mid-run, same port, 3 s and 10 s outages; both drivers, poll and hybrid', async () => {
    await runCase(
      'db_restart_mid_run',
      async (v, ctx) => {
        v.set('violations', 0);
        let total = 0;
        for (const variant of ALL_VARIANTS) total += await variantWithRestart(v, ctx, variant, SHORT_OUTAGE_MS, `${variantName(variant)}_`);
        // The long outage on two variants: one per driver, one per discovery mode.
        for (const variant of ALL_VARIANTS.filter((x) => ['pgHybrid', 'postgresPoll'].includes(variantName(x)))) total += await variantWithRestart(v, ctx, variant, LONG_OUTAGE_MS, `${variantName(variant)}Long_`);
        v.set('violations', total);
      },
      { databaseUrl: server.url },
    );
  }, 300_000);
});
