/**
 * Throughput: `tasks` no-op tasks, all due now, enqueued before the workers start; `processes` worker
 * processes of one contender, `concurrency` handlers each. The clock runs from `go` (every process
 * loaded and connected) until the database shows every task completed, or until `capMs` (then the
 * rate is what completed within the cap). Statements are counted at the database
 * (`db/statements.ts`), minus the bench's own progress reads.
 */
import pg from 'pg';
import { type StatementStat, type StatementTotals, topBetween } from './db/statements.js';
import { delay, waitUntil } from './util/wait.js';
import { type Contender, contenderLabel, type RunContext, spawnContender } from './contender.js';

export interface ThroughputParams {
  readonly tasks: number;
  readonly processes: number;
  readonly concurrency: number;
  /** Longest timed window, ms. */
  readonly capMs: number;
}

/** The figures of one rate measurement (a throughput run, a point of the SQL-only ceiling). */
export interface RateFigures {
  readonly processes: number;
  readonly tasks: number;
  /** Tasks completed in the database when the clock stopped. */
  readonly completed: number;
  readonly seconds: number;
  readonly tasksPerSecond: number;
  /** Statements the system sent per completed task (NaN when none completed). */
  readonly statementsPerTask: number;
  /** Server execution time per completed task, ms (pg_stat_statements; NaN without it). */
  readonly serverMsPerTask: number;
  /**
   * WAL the whole server wrote per completed task while the clock ran, bytes (`pg_current_wal_lsn()`
   * before and after; the run has the server to itself, so it is the run's, full-page images and
   * autovacuum included). Absent in results saved before it was measured.
   */
  readonly walBytesPerTask?: number;
  /**
   * CPU time of every process of the PostgreSQL server per completed task while the clock ran, ms
   * (`/proc`; the bench's own reads, autovacuum and background writes included). Absent in results
   * saved before it was measured; NaN when the server is not on this host.
   */
  readonly serverCpuMsPerTask?: number;
}

/** {@link RateFigures} from the totals of a run: `statements` sent and `serverMs` executed while the clock ran. */
export function rateFigures(m: { processes: number; tasks: number; completed: number; seconds: number; statements: number; serverMs: number; walBytes?: number; serverCpuMs?: number }): RateFigures {
  const perTask = (total: number) => (m.completed > 0 ? total / m.completed : Number.NaN);
  const { processes, tasks, completed, seconds } = m;
  return {
    processes,
    tasks,
    completed,
    seconds,
    tasksPerSecond: completed / seconds,
    statementsPerTask: perTask(m.statements),
    serverMsPerTask: perTask(m.serverMs),
    ...(m.walBytes === undefined ? {} : { walBytesPerTask: perTask(m.walBytes) }),
    ...(m.serverCpuMs === undefined ? {} : { serverCpuMsPerTask: perTask(m.serverCpuMs) }),
  };
}

export interface ThroughputResult extends RateFigures {
  readonly label: string;
  /** CPU time of the worker processes per completed task, ms (from `go` to the end of their stop). */
  readonly workerCpuMsPerTask: number;
  /** Request/response turns on the workers' connections per completed task (only through a {@link RunContext.route}). */
  readonly roundTripsPerTask?: number;
  /** The system's statements during the timed window, by server time (pg_stat_statements; the bench's own reads included). */
  readonly topStatements: readonly StatementStat[];
  /** True when the cap stopped the clock before every task completed. */
  readonly capped: boolean;
}

/** Statements kept in each run's profile. */
const TOP_STATEMENTS = 6;

/** Pause between the bench's reads of what is left, ms. */
const POLL_MS = 5;

/**
 * @param afterEnqueue runs once the tasks are in, before the workers start (e.g. claim-latency
 *   probes that hand their tasks back); it must leave all `tasks` to be completed
 */
export async function runThroughput(
  ctx: RunContext,
  contender: Contender,
  params: ThroughputParams,
  afterEnqueue?: (url: string) => Promise<void>,
): Promise<ThroughputResult> {
  const { admin } = contender;
  return await ctx.databases.withFresh(admin, `tp${params.processes}`, async (url, database) => {
    await admin.enqueue(url, Array.from({ length: params.tasks }, () => ({})));
    await afterEnqueue?.(url);
    const { workers, route } = await spawnContender(ctx, contender, url, params.processes, params.concurrency);
    const client = new pg.Client({ connectionString: url, application_name: 'postpone-bench-progress' });
    await client.connect();
    let ownReads = 0;
    let left = params.tasks;
    let measured: Omit<ThroughputResult, 'workerCpuMsPerTask' | 'topStatements'>;
    let turns = Number.NaN;
    let totals: [StatementTotals, StatementTotals];
    try {
      const totalsBefore = await ctx.counter.statements(database);
      const before = await ctx.counter.snapshot(database);
      const turns0 = route?.turns() ?? Number.NaN;
      const t0 = performance.now();
      const deadline = t0 + params.capMs;
      await workers.go();
      // Cheap IPC counts first; the database only once the handlers have seen every task.
      await waitUntil(
        () => {
          workers.throwIfFailed();
          return workers.ran >= params.tasks;
        },
        { timeoutMs: Math.max(0, deadline - performance.now()), intervalMs: POLL_MS },
      );
      for (;;) {
        ownReads++;
        left = await admin.remaining(client);
        if (left === 0 || performance.now() >= deadline) break;
        workers.throwIfFailed();
        await delay(POLL_MS);
      }
      const t1 = performance.now();
      turns = (route?.turns() ?? Number.NaN) - turns0;
      const after = await ctx.counter.snapshot(database);
      totals = [totalsBefore, await ctx.counter.statements(database)];
      const completed = params.tasks - left;
      const statements = after.count - before.count - ownReads;
      const seconds = (t1 - t0) / 1000;
      measured = {
        label: contenderLabel(contender),
        ...rateFigures({ processes: params.processes, tasks: params.tasks, completed, seconds, statements, serverMs: after.execMs - before.execMs, walBytes: after.walBytes - before.walBytes, serverCpuMs: after.serverCpuMs - before.serverCpuMs }),
        capped: left > 0,
      };
    } finally {
      await client.end();
      await workers.stop();
      await route?.close();
    }
    return {
      ...measured,
      ...(route ? { roundTripsPerTask: measured.completed > 0 ? turns / measured.completed : Number.NaN } : {}),
      workerCpuMsPerTask: measured.completed > 0 ? workers.cpuMs / measured.completed : Number.NaN,
      topStatements: topBetween(totals[0], totals[1], TOP_STATEMENTS),
    };
  });
}

