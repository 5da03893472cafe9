/**
 * Evidence: retry delays stay inside their jitter band (AWS Architecture Blog, "Exponential Backoff
 * And Jitter"; docs/contract.md#retry-policy). Part 1 runs 1 000 failures across kinds and policies
 * through core `retryDelayMs` with a seeded source; part 2 runs the real worker in-process on
 * PostgreSQL with the same kind of policies and checks, per row, `due_at − updated_at` (both the fail
 * statement's now) against the delay replayed from the same seed.
 */
import { backoffMs, type Jitter, type RetryPolicy, retryDelayMs } from '@postpone/core';
import { mulberry32 } from '@postpone/testkit';
import { createWorker } from '@postpone/worker';
import { describe, it } from 'vitest';
import { runCase } from '../src/index.js';

const SEED = 14;
const FAILURES = 1_000;
const JITTERS: readonly Jitter[] = ['none', 'full', 'equal'];
/** Kinds and their policies: small and large bases, low caps that bind early, one cap above every delay. */
const POLICIES: readonly { kind: string; baseMs: number; capMs: number; jitter: Jitter }[] = JITTERS.flatMap((jitter) => [
  { kind: `small-${jitter}`, baseMs: 100, capMs: 30_000, jitter },
  { kind: `large-${jitter}`, baseMs: 5_000, capMs: 3_600_000, jitter },
  { kind: `capped-${jitter}`, baseMs: 1_000, capMs: 4_000, jitter },
]);

/** The band of a delay: [low, d] with d the capped exponential backoff. */
function band(jitter: Jitter, d: number): [number, number] {
  return jitter === 'none' ? [d, d] : jitter === 'full' ? [0, d] : [Math.ceil(d / 2), d];
}

interface BandStats {
  n: number;
  minMs: number;
  maxMs: number;
  /** delay / d: where in [0, 1] of the uncapped-by-jitter delay the draws fell. */
  minFrac: number;
  maxFrac: number;
  outside: number;
}

describe('evidence: retry jitter', () => {
  it('retry_jitter_bounds: 1 000 seeded failures inside their jitter bands, capped, never negative; PostgreSQL due_at = fail time + delay', async () => {
    await runCase('retry_jitter_bounds', async (v, ctx) => {
      // Part 1 — the real delay function, 1 000 failures (failure numbers 1..12) over 9 kind policies.
      const random = mulberry32(SEED);
      const stats = new Map<Jitter, BandStats>(JITTERS.map((j) => [j, { n: 0, minMs: Infinity, maxMs: -Infinity, minFrac: Infinity, maxFrac: -Infinity, outside: 0 }]));
      let negative = 0;
      let overCap = 0;
      for (let i = 0; i < FAILURES; i++) {
        const p = POLICIES[i % POLICIES.length] as (typeof POLICIES)[number];
        const n = 1 + ((i * 7) % 12);
        const d = backoffMs(p.baseMs, n, p.capMs);
        const delay = retryDelayMs(p.baseMs, n, p.capMs, p.jitter, random);
        const [low, high] = band(p.jitter, d);
        const s = stats.get(p.jitter) as BandStats;
        s.n += 1;
        s.minMs = Math.min(s.minMs, delay);
        s.maxMs = Math.max(s.maxMs, delay);
        s.minFrac = Math.min(s.minFrac, delay / d);
        s.maxFrac = Math.max(s.maxFrac, delay / d);
        if (delay < low || delay > high || !Number.isInteger(delay)) s.outside += 1;
        if (delay < 0) negative += 1;
        if (delay > p.capMs) overCap += 1;
      }
      v.set('seed', SEED).set('failures', FAILURES);
      for (const [jitter, s] of stats) {
        v.set(`${jitter}_n`, s.n)
          .set(`${jitter}_minMs`, s.minMs)
          .set(`${jitter}_maxMs`, s.maxMs)
          .set(`${jitter}_frac`, [s.minFrac.toFixed(3), s.maxFrac.toFixed(3)])
          .set(`${jitter}_outside`, s.outside);
        v.equal(`${jitter}: every delay inside its band`, s.outside, 0);
      }
      v.set('negative', negative).set('overCap', overCap);
      v.equal('no negative delay', negative, 0);
      v.equal('no delay above its cap', overCap, 0);
      v.equal('failures counted', [...stats.values()].reduce((a, s) => a + s.n, 0), FAILURES);
      // The draws spread over the band (a stuck source would pass the bounds alone).
      v.holds('full jitter spans its band', (stats.get('full')?.minFrac ?? 1) < 0.05 && (stats.get('full')?.maxFrac ?? 0) > 0.95, JSON.stringify(stats.get('full')));
      v.holds('equal jitter spans its band', (stats.get('equal')?.minFrac ?? 1) < 0.55 && (stats.get('equal')?.maxFrac ?? 0) > 0.95, JSON.stringify(stats.get('equal')));

      // Part 2 — the real worker on PostgreSQL: one failure per task, in claim order (concurrency 1),
      // kind policies plus tasks with their own; each row's due_at − updated_at must be the replayed delay.
      const retryByKind: Record<string, RetryPolicy> = Object.fromEntries(POLICIES.map((p) => [p.kind, { baseMs: p.baseMs, capMs: p.capMs, jitter: p.jitter }]));
      const fail = async () => {
        throw new Error('injected');
      };
      const handlers = Object.fromEntries(POLICIES.map((p) => [p.kind, fail]));
      const worker = createWorker({ store: ctx.store, concurrency: 1, random: mulberry32(SEED + 1), retryByKind, handlers });
      const TASKS = 45;
      const planned: { id: string; baseMs: number; capMs: number; jitter: Jitter }[] = [];
      for (let i = 0; i < TASKS; i++) {
        const p = POLICIES[i % POLICIES.length] as (typeof POLICIES)[number];
        // Every fifth task brings its own policy, which wins over its kind's.
        const own = i % 5 === 4 ? { baseMs: 700, capMs: 2_000, jitter: JITTERS[i % 3] as Jitter } : null;
        const { id } = await ctx.store.schedule({ kind: p.kind, runAt: new Date(Date.UTC(2000, 0, 1, 0, 0, i)), ...(own ? { retry: own } : {}) });
        planned.push({ id, ...(own ?? { baseMs: p.baseMs, capMs: p.capMs, jitter: p.jitter }) });
      }
      let claimed = 0;
      for (let i = 0; i < TASKS * 2 && claimed < TASKS; i++) {
        claimed += (await worker.runOnce()).length;
        await worker.idle();
      }
      await worker.stop({ timeoutMs: 0 });
      const { rows } = await ctx.pool.query<{ id: string; state: string; failures: number; gapms: string }>(
        `select id::text as id, state, failures, (extract(epoch from (due_at - updated_at)) * 1000)::text as gapms from (select id, state, failures, due_at, updated_at from ${ctx.schema}.task union all select id, state, failures, due_at, updated_at from ${ctx.schema}.task_history) t order by id`,
      );
      const replay = mulberry32(SEED + 1);
      let matched = 0;
      let outOfBand = 0;
      const mismatches: string[] = [];
      for (const plan of planned) {
        const expected = retryDelayMs(plan.baseMs, 1, plan.capMs, plan.jitter, replay);
        const row = rows.find((r) => r.id === plan.id);
        const gap = Number(row?.gapms);
        const [low, high] = band(plan.jitter, backoffMs(plan.baseMs, 1, plan.capMs));
        if (row?.state === 'SCHEDULED' && row.failures === 1 && gap === expected) matched += 1;
        else mismatches.push(`${plan.id}:${row?.state}/${gap}!=${expected}`);
        if (!(gap >= low && gap <= high)) outOfBand += 1;
      }
      v.set('pgTasks', TASKS).set('pgClaimed', claimed).set('pgDueEqualsFailPlusDelay', matched).set('pgOutOfBand', outOfBand);
      v.equal('PostgreSQL: every task claimed once', claimed, TASKS);
      v.equal('PostgreSQL: due_at = fail time + computed delay for every task', matched, TASKS);
      v.equal('PostgreSQL: no row outside its band', outOfBand, 0);
      if (mismatches.length > 0) v.set('pgMismatches', mismatches.slice(0, 5));
    });
  });
});
