/**
 * Probes of the idle or busy claim: the store's real claim statement, measured two ways.
 * - EXPLAIN: `EXPLAIN (ANALYZE, BUFFERS)` inside a rolled-back transaction (it claims nothing
 *   durable): buffers touched and server execution time.
 * - Timed claims: real `store.claim` calls timed at the client (round trip included); each claimed
 *   task is handed back at once with the fenced `store.release`, so the backlog stays as it was.
 */
import type { Store } from '@postpone/core';
import type pg from 'pg';
import { parseExplainRows, planNodes, summarizeDueScan } from './db/explain.js';
import { CLAIM_PROBE_PARAMS, claimSql } from '../seed/claim-variants.js';
import { median, percentile } from '../peers/util/stats.js';

export interface ExplainSample {
  /** Shared buffers (hit + read) of the claim statement. */
  readonly buffers: number;
  /** Shared buffers of its scan of `task_claim_idx` alone. */
  readonly scanBuffers: number;
  /** Server execution time, ms. */
  readonly executionMs: number;
  /** The plan sorts (a Sort or Incremental Sort node): its cost grows with the rows it sorts. */
  readonly sorts: boolean;
}

/** Medians of several {@link ExplainSample}s (`sorts`: any of them sorted). */
export type ExplainProbe = ExplainSample;

/** One EXPLAIN ANALYZE of the claim, rolled back. */
export async function explainOnce(client: pg.Client, schema: string): Promise<ExplainSample> {
  await client.query('begin');
  try {
    const plan = parseExplainRows((await client.query(`explain (analyze, buffers, format json) ${claimSql(schema)}`, [...CLAIM_PROBE_PARAMS])).rows);
    const scan = summarizeDueScan(plan);
    return { buffers: scan.buffers, scanBuffers: scan.scanBuffers, executionMs: scan.executionMs, sorts: planNodes(plan.Plan).some((n) => /Sort$/.test(n['Node Type'])) };
  } finally {
    await client.query('rollback');
  }
}

/** The claim's plan as EXPLAIN (ANALYZE, BUFFERS) text, rolled back. */
export async function explainText(client: pg.Client, schema: string): Promise<string> {
  await client.query('begin');
  try {
    const { rows } = await client.query(`explain (analyze, buffers) ${claimSql(schema)}`, [...CLAIM_PROBE_PARAMS]);
    return rows.map((r: Record<string, unknown>) => String(r['QUERY PLAN'])).join('\n');
  } finally {
    await client.query('rollback');
  }
}

/** Medians of samples. */
export function explainMedians(samples: readonly ExplainSample[]): ExplainProbe {
  return {
    buffers: median(samples.map((s) => s.buffers)),
    scanBuffers: median(samples.map((s) => s.scanBuffers)),
    executionMs: median(samples.map((s) => s.executionMs)),
    sorts: samples.some((s) => s.sorts),
  };
}

/** Runs the claim under EXPLAIN ANALYZE `probes` times after one warm-up, each rolled back. */
export async function explainClaim(client: pg.Client, schema: string, probes: number): Promise<ExplainProbe> {
  await explainOnce(client, schema);
  const samples: ExplainSample[] = [];
  for (let i = 0; i < probes; i++) samples.push(await explainOnce(client, schema));
  return explainMedians(samples);
}

/** One real claim of up to `limit` tasks, timed at the client; the tasks are handed back. @returns ms and tasks claimed */
export async function timeClaimOnce<Tx>(store: Store<Tx>, limit: number): Promise<{ ms: number; claimed: number }> {
  const t0 = performance.now();
  const tasks = await store.claim({ owner: 'bench-probe', limit, leaseMs: 60_000 });
  const ms = performance.now() - t0;
  for (const task of tasks) await store.release({ id: task.id, attempt: task.attempt });
  return { ms, claimed: tasks.length };
}

export interface ClaimTiming {
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Tasks the claims returned in total. */
  readonly claimed: number;
}

/** Summarises timed claims. */
export function claimTiming(samples: readonly { ms: number; claimed: number }[]): ClaimTiming {
  const times = samples.map((s) => s.ms);
  return { p50Ms: percentile(times, 50), p99Ms: percentile(times, 99), claimed: samples.reduce((n, s) => n + s.claimed, 0) };
}

/** Times `probes` real claims of up to `limit` tasks; hands every claimed task back. */
export async function timeClaims<Tx>(store: Store<Tx>, probes: number, limit: number): Promise<ClaimTiming> {
  const samples: { ms: number; claimed: number }[] = [];
  for (let i = 0; i < probes; i++) samples.push(await timeClaimOnce(store, limit));
  return claimTiming(samples);
}
