/**
 * The worker process of the long run (`pnpm long-run-memory`, see ./long-run.ts): one real worker
 * (`@postpone/worker`) over the real PostgreSQL store (driver `pg`), whose handler does a little
 * work per task. Every `LONG_RUN_SAMPLE_MS` it writes one JSON line on stdout: heap used (as is and
 * after a full GC — run with `--expose-gc`), RSS, the event-loop delay p99 since the last sample
 * (`perf_hooks.monitorEventLoopDelay`, 10 ms resolution), statements sent (every `query` call of the
 * process's `pg` clients) and tasks completed. It stops gracefully on SIGTERM.
 *
 * Environment: `DATABASE_URL`, `LONG_RUN_SCHEMA`, `LONG_RUN_SAMPLE_MS`, `LONG_RUN_DISCOVERY`
 * (`poll` | `hybrid`), `LONG_RUN_CONCURRENCY`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createPgStore } from '@postpone/postgres/pg';
import { createWorker } from '@postpone/worker';
import pg from 'pg';

/** One sample line of the child (all sizes in bytes, times in ms). */
export interface LongRunSample {
  readonly type: 'sample';
  /** Monotonic ms since the child started. */
  readonly atMs: number;
  readonly heapUsed: number;
  readonly heapAfterGc: number;
  readonly rss: number;
  readonly eldP99Ms: number;
  readonly eldMaxMs: number;
  /** Statements sent since the child started (cumulative). */
  readonly statements: number;
  /** Handler completions since the child started (cumulative). */
  readonly completed: number;
  /** Worker `error` events since the child started (cumulative). */
  readonly errors: number;
}

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};

let statements = 0;
const query = pg.Client.prototype.query;
// Counts every statement any client of this process sends (the store's pool and its listener alike).
pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
  statements++;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

const schema = env('LONG_RUN_SCHEMA');
const sampleMs = Number(env('LONG_RUN_SAMPLE_MS', '10000'));
const discovery = env('LONG_RUN_DISCOVERY', 'hybrid') as 'poll' | 'hybrid';
const concurrency = Number(env('LONG_RUN_CONCURRENCY', '10'));
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: concurrency + 4 });
const store = createPgStore({ pool, schema });
let completed = 0;
let errors = 0;
const worker = createWorker({
  store,
  handlers: {
    steady: async (task) => {
      // A little work per task: a payload round trip and a turn of the event loop.
      JSON.parse(JSON.stringify(task.payload));
      await new Promise<void>((resolve) => setImmediate(resolve));
    },
  },
  concurrency,
  discovery,
  leaseMs: 30_000,
  pollIntervalMs: 500,
});
worker.on('completed', () => {
  completed++;
});
worker.on('error', () => {
  errors++;
});

const gc = (globalThis as { gc?: () => void }).gc;
const eld = monitorEventLoopDelay({ resolution: 10 });
eld.enable();
const started = performance.now();
const timer = setInterval(() => {
  // The delay histogram is read before the GC, and reset after it: the forced GC's pause is not counted.
  const eldP99Ms = eld.percentile(99) / 1e6;
  const eldMaxMs = eld.max / 1e6;
  const heapUsed = process.memoryUsage().heapUsed;
  gc?.();
  const after = process.memoryUsage();
  eld.reset();
  const sample: LongRunSample = {
    type: 'sample',
    atMs: Math.round(performance.now() - started),
    heapUsed,
    heapAfterGc: gc === undefined ? -1 : after.heapUsed,
    rss: after.rss,
    eldP99Ms,
    eldMaxMs,
    statements,
    completed,
    errors,
  };
  process.stdout.write(`${JSON.stringify(sample)}\n`);
}, sampleMs);

let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  clearInterval(timer);
  void (async () => {
    await worker.stop({ timeoutMs: 5_000 }).catch(() => {});
    await store.close().catch(() => {});
    await pool.end().catch(() => {});
    process.stdout.write(`${JSON.stringify({ type: 'stopped' })}\n`);
    process.exit(0);
  })();
});

await store.migrate();
void worker.start();
process.stdout.write(`${JSON.stringify({ type: 'ready' })}\n`);
