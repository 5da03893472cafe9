/**
 * Due-time lateness: `tasks` tasks due evenly over `spreadMs`, the first `leadMs` after they are
 * enqueued, run by `processes` worker processes of one contender that were already running. Lateness
 * is the handler's start minus the task's due time, both wall-clock milliseconds on this machine
 * (the embedded server shares the clock); a negative value is a task run before it was due.
 */
import { distribution, type Distribution } from './util/stats.js';
import { delay, waitUntil } from './util/wait.js';
import { type Contender, contenderLabel, type RunContext, spawnContender } from './contender.js';

export interface LatenessParams {
  readonly tasks: number;
  readonly spreadMs: number;
  readonly processes: number;
  readonly concurrency: number;
  /** Time from enqueuing to the first due time, ms (covers the enqueue itself). */
  readonly leadMs: number;
  /** After the last due time, how long to wait for stragglers, ms. */
  readonly graceMs: number;
}

export interface LatenessResult {
  readonly label: string;
  readonly lateness: Distribution;
  /** Tasks that started before their due time. */
  readonly early: number;
  /** Tasks not started by the end of the grace period. */
  readonly missing: number;
  /** How long the enqueue took, ms (must be below `leadMs` for a fair start). */
  readonly enqueueMs: number;
}

/** Time the running workers get to settle into their steady loop before the load arrives, ms. */
const SETTLE_MS = 500;

export async function runLateness(ctx: RunContext, contender: Contender, params: LatenessParams): Promise<LatenessResult> {
  const { admin } = contender;
  return await ctx.databases.withFresh(admin, 'late', async (url) => {
    const { workers, route } = await spawnContender(ctx, contender, url, params.processes, params.concurrency);
    try {
      await workers.go();
      await delay(SETTLE_MS);
      const enqueueStart = Date.now();
      const firstDue = enqueueStart + params.leadMs;
      const step = params.tasks > 1 ? params.spreadMs / (params.tasks - 1) : 0;
      await admin.enqueue(
        url,
        Array.from({ length: params.tasks }, (_, i) => ({ dueMs: Math.round(firstDue + i * step) })),
      );
      const enqueueMs = Date.now() - enqueueStart;
      await waitUntil(
        () => {
          workers.throwIfFailed();
          return workers.lateness.length >= params.tasks;
        },
        { timeoutMs: params.leadMs + params.spreadMs + params.graceMs, intervalMs: 10 },
      );
      const samples = [...workers.lateness];
      return {
        label: contenderLabel(contender),
        lateness: distribution(samples),
        early: samples.filter((ms) => ms < 0).length,
        missing: Math.max(0, params.tasks - samples.length),
        enqueueMs,
      };
    } finally {
      await workers.stop();
      await route?.close();
    }
  });
}
