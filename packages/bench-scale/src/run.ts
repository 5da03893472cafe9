/**
 * The scale run: one schema grown from 0 to the largest size in steps, the claim measured at each
 * step, then the retention comparison, the steady load and the long-snapshot test on the grown schema.
 */
import { createPgStore } from '@postpone/postgres/pg';
import { loadavg } from 'node:os';
import pg from 'pg';
import { type ClaimPoint, keepDue, measureClaim } from './claim.js';
import { measureRetention, type RetentionResult } from './retention.js';
import { addFinished, historyTable, type RelationSize, relationSizes, vacuumAnalyze } from './seed.js';
import { runSteady, type SteadyResult } from './steady.js';

export interface ScaleOptions {
  readonly url: string;
  /** Finished-task counts to measure at, ascending (e.g. 0, 1 M, 10 M, 100 M). */
  readonly sizes: readonly number[];
  readonly claimProbes: number;
  readonly retentionRows: number;
  readonly steadyRate: number;
  readonly steadyMs: number;
  /** How long the long-snapshot test holds its transaction open, ms. */
  readonly snapshotHoldMs: number;
  readonly log: (line: string) => void;
}

/** One step of the growing schema. */
export interface SizePoint extends ClaimPoint {
  readonly relations: readonly RelationSize[];
  /** Time to add this step's rows and VACUUM (ANALYZE), ms. */
  readonly loadMs: number;
}

/** Everything one run measured, for one table layout. */
export interface ScaleRun {
  /** `single table` before the live/history split, `live/history split` after. */
  readonly layout: string;
  readonly at: string;
  readonly commit: string;
  readonly node: string;
  /** 1-minute load average at the start and the end (above 2 on 2 cores: other work shared them). */
  readonly load?: { readonly start: number; readonly end: number };
  /** A remark about the conditions of the run, added by hand to the saved results. */
  readonly note?: string;
  readonly points: readonly SizePoint[];
  readonly retention: RetentionResult;
  readonly steady: SteadyResult;
  readonly snapshot: SteadyResult;
}

export async function runScale(options: ScaleOptions, commit: string): Promise<ScaleRun> {
  const schema = 'bench_scale';
  const loadStart = loadavg()[0] ?? 0;
  const client = new pg.Client({ connectionString: options.url, application_name: 'bench-scale' });
  await client.connect();
  const store = createPgStore({ connectionString: options.url, schema });
  try {
    await client.query(`drop schema if exists ${schema} cascade`);
    await store.migrate();
    const layout = (await historyTable(client, schema)).split ? 'live/history split' : 'single table';
    await keepDue(store, 50);
    const points: SizePoint[] = [];
    let have = 0;
    for (const size of options.sizes) {
      const t0 = performance.now();
      await addFinished(client, schema, size - have, 1_000_000, (n) => options.log(`  ${(have + n).toLocaleString('en')} finished rows`));
      have = size;
      await vacuumAnalyze(client, schema);
      const loadMs = performance.now() - t0;
      const claim = await measureClaim(client, store, schema, size, options.claimProbes);
      points.push({ ...claim, relations: await relationSizes(client, schema), loadMs });
      options.log(`size ${size.toLocaleString('en')}: claim p99 ${claim.claimP99Ms.toFixed(2)} ms, ${claim.buffers} buffers`);
    }
    options.log(`retention: ${options.retentionRows.toLocaleString('en')} rows`);
    const retention = await measureRetention(client, schema, options.retentionRows);
    options.log(`steady load: ${options.steadyRate} tasks/s for ${options.steadyMs / 1000} s`);
    const steady = await runSteady({ url: options.url, schema, rate: options.steadyRate, durationMs: options.steadyMs });
    const lead = Math.min(60_000, options.steadyMs);
    options.log(`long snapshot: held ${options.snapshotHoldMs / 1000} s under ${options.steadyRate} tasks/s`);
    const snapshot = await runSteady({ url: options.url, schema, rate: options.steadyRate, durationMs: lead * 2 + options.snapshotHoldMs, snapshot: { fromMs: lead, toMs: lead + options.snapshotHoldMs } });
    return { layout, at: new Date().toISOString(), commit, node: process.version, load: { start: loadStart, end: loadavg()[0] ?? 0 }, points, retention, steady, snapshot };
  } finally {
    await store.close();
    await client.end();
  }
}
