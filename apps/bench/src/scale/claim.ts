/**
 * The claim at one history size: the store's real claim statement with due tasks waiting, measured
 * two ways (the probes of `apps/bench/src/curves`): `EXPLAIN (ANALYZE, BUFFERS)` rolled back (server
 * time, buffers of the statement and of its index scan), and real `claim` calls timed at the client,
 * each claimed task handed back with the fenced `release`.
 */
import { claimTiming, explainMedians, explainOnce, timeClaimOnce } from '../curves/claim-probe.js';
import type { Store } from '@postpone/core';
import type pg from 'pg';

/** One point of the claim-versus-history curve. */
export interface ClaimPoint {
  /** Finished tasks in the schema when measured. */
  readonly finished: number;
  /** Client-side claim time (round trip included), ms. */
  readonly claimP50Ms: number;
  /** The median of the rounds' p99s (see {@link CLAIM_ROUNDS}). */
  readonly claimP99Ms: number;
  /** p99 over every probe of every round (absent in runs from before the rounds). */
  readonly claimP99AllMs?: number;
  /** Each round's p99, ms. */
  readonly roundP99Ms?: readonly number[];
  /** Median shared buffers of the claim statement. */
  readonly buffers: number;
  /** Median shared buffers of its due-index scan. */
  readonly scanBuffers: number;
  /** Median server execution time, ms. */
  readonly executionMs: number;
  /** Tasks the timed claims returned (each handed back): 0 would mean nothing was due. */
  readonly claimed: number;
}

/** Kind of the tasks kept due for the claim probes. */
export const PROBE_KIND = 'bench_scale_due';

/** Makes sure `count` tasks of {@link PROBE_KIND} are due (scheduled 1 s in the past). */
export async function keepDue<Tx>(store: Store<Tx>, count: number): Promise<void> {
  await store.scheduleMany(Array.from({ length: count }, (_, i) => ({ kind: PROBE_KIND, payload: { n: i }, runAt: new Date(Date.now() - 1_000) })));
}

/**
 * Rounds the probes of one size are split into, 1 s apart. The p99 reported is the median of the
 * rounds' p99s: one background event (an autovacuum of the live table, which the probes' own
 * claim-and-release churn triggers every thousand dead rows, or a neighbour on the machine) then moves
 * one round, not the figure compared across sizes. The p99 over all probes is kept beside it.
 */
export const CLAIM_ROUNDS = 5;

/** The median of `xs` (the lower middle of an even count; NaN when empty). */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN;

/**
 * Measures the claim of up to 10 tasks `probes` times each way after one warm-up, in {@link CLAIM_ROUNDS} rounds.
 * @param finished the history size to record
 */
export async function measureClaim<Tx>(client: pg.Client, store: Store<Tx>, schema: string, finished: number, probes: number): Promise<ClaimPoint> {
  await explainOnce(client, schema);
  const explains = [];
  const claims = [];
  const roundP99Ms: number[] = [];
  const perRound = Math.max(1, Math.ceil(probes / CLAIM_ROUNDS));
  for (let round = 0; round < CLAIM_ROUNDS; round++) {
    if (round > 0) await new Promise((resolve) => setTimeout(resolve, 1_000));
    const timed = [];
    for (let i = 0; i < perRound; i++) {
      explains.push(await explainOnce(client, schema));
      timed.push(await timeClaimOnce(store, 10));
    }
    roundP99Ms.push(claimTiming(timed).p99Ms);
    claims.push(...timed);
  }
  const e = explainMedians(explains);
  const t = claimTiming(claims);
  return { finished, claimP50Ms: t.p50Ms, claimP99Ms: median(roundP99Ms), claimP99AllMs: t.p99Ms, roundP99Ms, buffers: e.buffers, scanBuffers: e.scanBuffers, executionMs: e.executionMs, claimed: t.claimed };
}
