/**
 * The scale run: one schema grown from 0 to the largest size in steps, the claim measured at each
 * step, then the retention comparison, the steady load and the long-snapshot test on the grown schema.
 */
import { createPgStore } from '@postpone/postgres/pg';
import { readFileSync } from 'node:fs';
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
  /** Time the load's write-back took to settle before the claims were measured, ms (see {@link settle}). */
  readonly settleMs?: number;
}

/** Dirty page cache at most this large counts as settled. */
const SETTLED_DIRTY_BYTES = 256 * 1_048_576;
const SETTLE_LIMIT_MS = 180_000;

/** Dirty + Writeback bytes of the page cache (`/proc/meminfo`, Linux), or 0 where it cannot be read. */
function dirtyBytes(): number {
  try {
    const info = readFileSync('/proc/meminfo', 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(info)?.[1] ?? 0);
    return (kb('Dirty') + kb('Writeback')) * 1024;
  } catch {
    return 0;
  }
}

/**
 * Lets the bulk load's writes leave the machine before the claims are timed: a CHECKPOINT (PostgreSQL
 * 17 §19.5.3: the load's dirty buffers go to the OS), then waiting — at most 3 minutes — until the
 * kernel holds at most 256 MB of dirty or in-flight pages. Without it, the claims at 100 M rows were
 * timed while the kernel wrote back the gigabytes the load and its VACUUM dirtied, and a commit's WAL
 * write waited behind them (p99 4.65 ms against 1.24 ms at 10 M with the same 149 buffers). A table
 * that grows at production rates never has that backlog of writes. Returns the ms waited.
 */
async function settle(client: pg.Client): Promise<number> {
  const t0 = performance.now();
  await client.query('checkpoint');
  for (let i = 0; i < SETTLE_LIMIT_MS / 500 && dirtyBytes() > SETTLED_DIRTY_BYTES; i++) await new Promise((r) => setTimeout(r, 500));
  return performance.now() - t0;
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
      const settleMs = await settle(client);
      const claim = await measureClaim(client, store, schema, size, options.claimProbes);
      points.push({ ...claim, relations: await relationSizes(client, schema), loadMs, settleMs });
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
