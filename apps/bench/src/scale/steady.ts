/**
 * Steady load on one schema: a producer schedules `rate` tasks/s (due at once, in batches every
 * 100 ms) and an in-process worker (poll every 50 ms, concurrency 20, no-op handler) runs them,
 * while a sampler records, every second, the backlog, the live table's live and dead tuples and
 * autovacuum count (`pg_stat_user_tables`, PostgreSQL 17 §27.2.19), the claim's server time and
 * buffers (EXPLAIN ANALYZE, rolled back) and the age of the oldest open transaction; every 250 ms it
 * checks whether a vacuum of the live table is running (`pg_stat_progress_vacuum`, §27.4.5).
 *
 * With `snapshot`, another connection holds a REPEATABLE READ transaction open over that window
 * (its snapshot holds back cleanup of every row deleted or updated after it began: §13.2.2, §24.1.5).
 */
import { explainOnce } from '../curves/claim-probe.js';
import { createPgStore } from '@postpone/postgres/pg';
import { createWorker } from '@postpone/worker';
import pg from 'pg';

export interface SteadySample {
  /** Seconds since the load began. */
  readonly atS: number;
  /** Due SCHEDULED tasks of the steady kind. */
  readonly backlog: number;
  readonly liveTuples: number;
  readonly deadTuples: number;
  readonly autovacuumCount: number;
  readonly claimExecutionMs: number;
  readonly claimBuffers: number;
  /** Age of the oldest open transaction on the database, s. */
  readonly oldestXactS: number;
}

export interface SteadyResult {
  readonly rate: number;
  readonly durationS: number;
  readonly scheduled: number;
  readonly done: number;
  readonly samples: readonly SteadySample[];
  /** Autovacuum runs on the live table during the load. */
  readonly autovacuums: number;
  /** Time a vacuum of the live table was seen running (250 ms sampling), s. */
  readonly vacuumRunningS: number;
  /** The snapshot window, s from the start, when one was held. */
  readonly snapshot?: { readonly fromS: number; readonly toS: number };
}

export interface SteadyOptions {
  readonly url: string;
  readonly schema: string;
  readonly rate: number;
  readonly durationMs: number;
  /** Hold a REPEATABLE READ snapshot from `fromMs` to `toMs` after the start. */
  readonly snapshot?: { readonly fromMs: number; readonly toMs: number };
  readonly onSample?: (sample: SteadySample) => void;
}

const KIND = 'bench_scale_steady';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function runSteady(options: SteadyOptions): Promise<SteadyResult> {
  const store = createPgStore({ connectionString: options.url, schema: options.schema });
  const sampler = new pg.Client({ connectionString: options.url, application_name: 'bench-scale-sampler' });
  const holder = new pg.Client({ connectionString: options.url, application_name: 'bench-scale-snapshot' });
  await sampler.connect();
  await holder.connect();
  let done = 0;
  const worker = createWorker({ store, concurrency: 20, discovery: 'poll', pollIntervalMs: 50, handlers: { [KIND]: async () => void done++ } });
  const table = `${pg.escapeIdentifier(options.schema)}.task`;
  const samples: SteadySample[] = [];
  let scheduled = 0;
  let vacuumTicks = 0;
  const stat = async () =>
    (await sampler.query<{ live: string; dead: string; av: string }>('select n_live_tup::text as live, n_dead_tup::text as dead, autovacuum_count::text as av from pg_stat_user_tables where schemaname = $1 and relname = $2', [options.schema, 'task'])).rows[0];
  const firstAv = Number((await stat())?.av ?? 0);
  const start = performance.now();
  const elapsed = () => performance.now() - start;
  worker.start();
  const producer = (async () => {
    const perBatch = Math.max(1, Math.round(options.rate / 10));
    for (let batch = 0; elapsed() < options.durationMs && batch < 100_000; batch++) {
      const at = start + batch * 100;
      if (at > performance.now()) await sleep(at - performance.now());
      await store.scheduleMany(Array.from({ length: perBatch }, () => ({ kind: KIND, payload: {}, delayMs: 0 })));
      scheduled += perBatch;
    }
  })();
  const holding = (async () => {
    if (!options.snapshot) return;
    await sleep(options.snapshot.fromMs);
    await holder.query('begin isolation level repeatable read');
    await holder.query(`select count(*) from ${table}`);
    await sleep(Math.max(0, options.snapshot.toMs - elapsed()));
    await holder.query('commit');
  })();
  try {
    for (let tick = 0; elapsed() < options.durationMs && tick < 1_000_000; tick++) {
      const { rows } = await sampler.query<{ n: string }>('select count(*)::text as n from pg_stat_progress_vacuum where relid = $1::regclass', [table]);
      if (Number(rows[0]?.n ?? 0) > 0) vacuumTicks++;
      if (tick % 4 === 0) {
        const s = await stat();
        const explain = await explainOnce(sampler, options.schema);
        const backlog = await sampler.query<{ n: string }>(`select count(*)::text as n from ${table} where state = 'SCHEDULED' and kind = $1 and due_at <= now()`, [KIND]);
        const oldest = await sampler.query<{ s: string | null }>(`select extract(epoch from now() - min(xact_start))::text as s from pg_stat_activity where datname = current_database() and xact_start is not null and pid <> pg_backend_pid()`);
        const sample: SteadySample = {
          atS: elapsed() / 1000,
          backlog: Number(backlog.rows[0]?.n ?? 0),
          liveTuples: Number(s?.live ?? 0),
          deadTuples: Number(s?.dead ?? 0),
          autovacuumCount: Number(s?.av ?? 0) - firstAv,
          claimExecutionMs: explain.executionMs,
          claimBuffers: explain.buffers,
          oldestXactS: Number(oldest.rows[0]?.s ?? 0),
        };
        samples.push(sample);
        options.onSample?.(sample);
      }
      await sleep(250);
    }
    await producer;
    await holding;
  } finally {
    await worker.stop();
    await store.close();
    await sampler.end();
    await holder.end().catch(() => undefined);
  }
  const last = samples[samples.length - 1];
  return {
    rate: options.rate,
    durationS: options.durationMs / 1000,
    scheduled,
    done,
    samples,
    autovacuums: last?.autovacuumCount ?? 0,
    vacuumRunningS: vacuumTicks * 0.25,
    ...(options.snapshot ? { snapshot: { fromS: options.snapshot.fromMs / 1000, toS: options.snapshot.toMs / 1000 } } : {}),
  };
}
