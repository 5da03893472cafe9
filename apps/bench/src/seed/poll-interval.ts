/**
 * `poll_interval_tradeoff` (docs/contract.md#evidence; seed chapter "到期发现：轮询与时间轮"): the same small load
 * run by a polling worker at two intervals. Lateness is `claimedAt − dueAt`, both from the database
 * clock (the claim's `now()` and the task's `due_at`), so no local clock enters it. Claim statements
 * are counted at the store, empty ones included.
 *
 * Expected shape (seed: 50 ms → max ≈ 75 ms, 134 claims; 500 ms → max ≈ 504 ms, 20 claims): the
 * lateness bound follows the interval, the claim count falls roughly inversely with it.
 */
import { createPgStore } from '@postpone/postgres/pg';
import { createWorker } from '@postpone/worker';
import { delay, waitFor } from '../peers/util/wait.js';
import { type Distribution, distribution } from '../peers/util/stats.js';
import { countClaims } from './counting-store.js';

export interface PollLoad {
  /** Tasks scheduled (default 30). */
  readonly tasks?: number;
  /** Their due times spread evenly over this many ms (default 2 000). */
  readonly spreadMs?: number;
  /** The first is due this many ms after scheduling (default 200). */
  readonly leadMs?: number;
}

export interface PollRunOptions extends PollLoad {
  readonly url: string;
  /** A schema of its own (created and migrated here). */
  readonly schema: string;
  readonly pollIntervalMs: number;
}

export interface PollRunResult {
  readonly pollIntervalMs: number;
  readonly tasks: number;
  /** Lateness (ms, database clock) of every claim. */
  readonly lateness: Distribution;
  /** Claims before their due time (must be 0). */
  readonly early: number;
  /** Claim statements over the window, empty ones included. */
  readonly claimQueries: number;
  readonly emptyClaims: number;
  /** Length of the observed window, ms. */
  readonly windowMs: number;
}

/**
 * Starts one polling worker, schedules the load, and observes until every task is claimed and the
 * window (lead + spread + 600 ms, so the 500 ms poller gets its last round) has passed.
 * @throws WaitTimeoutError when the tasks are not all claimed within the window + 15 s
 */
export async function runPollInterval(options: PollRunOptions): Promise<PollRunResult> {
  const tasks = options.tasks ?? 30;
  const spreadMs = options.spreadMs ?? 2_000;
  const leadMs = options.leadMs ?? 200;
  const windowMs = leadMs + spreadMs + 600;
  const base = createPgStore({ connectionString: options.url, schema: options.schema });
  await base.migrate();
  const { store, counts } = countClaims(base);
  const lateness: number[] = [];
  const worker = createWorker({
    store,
    id: `poll-${options.pollIntervalMs}ms`,
    concurrency: 10,
    leaseMs: 30_000,
    discovery: 'poll',
    pollIntervalMs: options.pollIntervalMs,
    handlers: { poll_probe: async () => {} },
  });
  worker.on('claimed', ({ task }) => lateness.push(task.claimedAt.getTime() - task.dueAt.getTime()));
  try {
    worker.start();
    const startedAt = performance.now();
    const step = tasks > 1 ? spreadMs / (tasks - 1) : 0;
    await base.scheduleMany(Array.from({ length: tasks }, (_, i) => ({ kind: 'poll_probe', payload: { n: i }, delayMs: Math.round(leadMs + i * step) })));
    await waitFor(() => lateness.length >= tasks, { timeoutMs: windowMs + 15_000, intervalMs: 10, what: `${tasks} claims at poll ${options.pollIntervalMs} ms` });
    const left = windowMs - (performance.now() - startedAt);
    if (left > 0) await delay(left);
    const observedMs = performance.now() - startedAt;
    await worker.stop({ timeoutMs: 2_000 });
    return {
      pollIntervalMs: options.pollIntervalMs,
      tasks,
      lateness: distribution(lateness),
      early: lateness.filter((ms) => ms < 0).length,
      claimQueries: counts.claims,
      emptyClaims: counts.empty,
      windowMs: Math.round(observedMs),
    };
  } finally {
    await worker.stop({ timeoutMs: 0 }).catch(() => undefined);
    await base.close();
  }
}

/** The seed's comparison: the same load at a fast and a slow interval, one after the other. */
export interface PollTradeoff {
  readonly fast: PollRunResult;
  readonly slow: PollRunResult;
}

export async function measurePollTradeoff(options: {
  readonly url: string;
  readonly schemaPrefix: string;
  readonly fastMs?: number;
  readonly slowMs?: number;
  readonly load?: PollLoad;
}): Promise<PollTradeoff> {
  const fastMs = options.fastMs ?? 50;
  const slowMs = options.slowMs ?? 500;
  const fast = await runPollInterval({ url: options.url, schema: `${options.schemaPrefix}_fast`, pollIntervalMs: fastMs, ...options.load });
  const slow = await runPollInterval({ url: options.url, schema: `${options.schemaPrefix}_slow`, pollIntervalMs: slowMs, ...options.load });
  return { fast, slow };
}

/** The shape the seed shows: slower polling → later max lateness, fewer claim queries; never early. */
export function pollShapeHolds(t: PollTradeoff): boolean {
  return (
    t.slow.lateness.max > t.fast.lateness.max &&
    t.fast.claimQueries > t.slow.claimQueries &&
    t.fast.early === 0 &&
    t.slow.early === 0 &&
    t.fast.lateness.count === t.fast.tasks &&
    t.slow.lateness.count === t.slow.tasks
  );
}
