/**
 * Idle claim cost as finished history grows (10 k → 1 M DONE rows). One schema per size, each with
 * the same 1 000 not-yet-due tasks, nothing due, and that many finished rows (bulk insert, then
 * `VACUUM (ANALYZE)` as autovacuum would). The probes then visit the sizes in turn, A B C A B C, so
 * the noise of a busy machine spreads over every size instead of landing on one. The partial index
 * `task_claim_idx` holds only SCHEDULED rows (PostgreSQL 17 §11.8), so the idle claim should cost the
 * same at every size.
 */
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import { insertFinishedHistory, vacuumAnalyze } from './db/history.js';
import { claimTiming, type ExplainSample, explainMedians, explainOnce, explainText, timeClaimOnce } from './claim-probe.js';

export interface HistoryPoint {
  readonly history: number;
  /** Median shared buffers of the claim statement. */
  readonly buffers: number;
  /** Median shared buffers of its scan of `task_claim_idx` (the part history could make grow). */
  readonly scanBuffers: number;
  /** Median server execution time, ms. */
  readonly executionMs: number;
  /** Client-side claim time (round trip), ms. */
  readonly claimP50Ms: number;
  readonly claimP99Ms: number;
  /** The plan of the last probe, as text. */
  readonly plan: string;
}

export interface HistoryOptions {
  readonly url: string;
  /** Schemas are named `<schemaPrefix>_<size>`. */
  readonly schemaPrefix: string;
  readonly sizes: readonly number[];
  /** Not-yet-due tasks in each schema (default 1 000). */
  readonly notDue?: number;
  /** EXPLAIN ANALYZE probes per size (server time and buffers; cheap, so many). */
  readonly explainProbes: number;
  /** Real claims timed at the client per size. */
  readonly claimProbes: number;
  /** Called after each size is built. */
  readonly onBuilt?: (size: number) => void;
}

interface Subject {
  readonly size: number;
  readonly schema: string;
  readonly store: ReturnType<typeof createPgStore>;
  readonly explains: ExplainSample[];
  readonly claims: { ms: number; claimed: number }[];
}

export async function measureHistoryCurve(options: HistoryOptions): Promise<HistoryPoint[]> {
  const client = new pg.Client({ connectionString: options.url, application_name: 'postpone-bench-history' });
  await client.connect();
  const subjects: Subject[] = [];
  try {
    for (const size of options.sizes) {
      const schema = `${options.schemaPrefix}_${size}`;
      const store = createPgStore({ connectionString: options.url, schema });
      subjects.push({ size, schema, store, explains: [], claims: [] });
      await store.migrate();
      const notDue = options.notDue ?? 1_000;
      await store.scheduleMany(Array.from({ length: notDue }, (_, i) => ({ kind: 'bench_not_due', payload: { n: i }, delayMs: 3_600_000 })));
      await insertFinishedHistory(client, schema, size);
      await vacuumAnalyze(client, schema);
      await explainOnce(client, schema); // warm-up
      options.onBuilt?.(size);
    }
    const rounds = Math.max(options.explainProbes, options.claimProbes);
    for (let i = 0; i < rounds; i++) {
      for (const s of subjects) {
        if (i < options.explainProbes) s.explains.push(await explainOnce(client, s.schema));
        if (i < options.claimProbes) s.claims.push(await timeClaimOnce(s.store, 10));
      }
    }
    const points: HistoryPoint[] = [];
    for (const s of subjects) {
      const explain = explainMedians(s.explains);
      const timing = claimTiming(s.claims);
      if (timing.claimed !== 0) throw new Error(`idle claim found ${timing.claimed} due tasks at ${s.size} rows`);
      const plan = await explainText(client, s.schema);
      points.push({ history: s.size, buffers: explain.buffers, scanBuffers: explain.scanBuffers, executionMs: explain.executionMs, claimP50Ms: timing.p50Ms, claimP99Ms: timing.p99Ms, plan });
    }
    return points;
  } finally {
    await client.end();
    for (const s of subjects) await s.store.close();
  }
}
