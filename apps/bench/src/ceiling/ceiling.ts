/**
 * The SQL-only ceiling of Postpone's schema: `processes` worker processes (on the workers' Node.js),
 * one `pg` connection each, drive the store's own claim (`taskClaim`, limit = batch) and batched
 * fenced completion (`taskCompleteManyFenced`, the move to history) as named prepared statements in a
 * tight loop until the queue is empty — no handler, no lease renewal, no IPC per task, no worker
 * logic. Statements are imported from `@postpone/postgres`, never copied. The clock runs from "go"
 * (every process connected) to the last process finding the queue empty; fork start-up is outside
 * it. Every guarantee of a completion is kept: the claim's row lock and lease, the attempt fence,
 * the history row in the completing statement (no effect row since migration 13). Each round also
 * measures DONE not kept: the completion is `taskCompleteManyDrop`, the fenced delete alone, no
 * history (docs/contract.md#done-not-kept); `--done-not-kept` (`POSTPONE_BENCH_DONE=not-kept`)
 * measures only that.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BENCH_TASK } from '../peers/protocol.js';
import { benchKeepsDone, POSTPONE_SCHEMA, postponeAdmin } from '../peers/systems/postpone.js';
import { type RateFigures, rateFigures } from '../peers/throughput.js';
import type { RunContext } from '../peers/contender.js';
import { waitFor } from '../peers/util/wait.js';
import { workerNode } from '../peers/node24.js';
import type { CeilingChildConfig, CeilingChildMessage } from './protocol.js';

const CHILD_SCRIPT = fileURLToPath(new URL('./child.js', import.meta.url));

export interface CeilingParams {
  /** Tasks due now per batch size measured. */
  readonly tasks: number;
  readonly processes: number;
  /** Batch sizes (claim limit = completion batch), each measured on a fresh database. */
  readonly batches: readonly number[];
}

/** One batch size measured; its `statementsPerTask` counts claims, completions and the final empty claims. */
export interface CeilingPoint extends RateFigures {
  readonly batch: number;
  /** CPU of the loops per completed task, ms. */
  readonly cpuMsPerTask: number;
}

export interface CeilingResult {
  /** DONE moved to history (`taskCompleteManyFenced`) or not kept (`taskCompleteManyDrop`); absent in results saved before both were measured (kept). */
  readonly keepDone?: boolean;
  readonly points: readonly CeilingPoint[];
}

/** The batch size the report compares the worker against. */
export const CEILING_REFERENCE_BATCH = 50;

async function measure(ctx: RunContext, url: string, database: string, params: CeilingParams, batch: number, keepDone: boolean): Promise<CeilingPoint> {
  const config: CeilingChildConfig = { url, schema: POSTPONE_SCHEMA, kind: BENCH_TASK, batch, owner: 'bench-ceiling', leaseMs: 600_000, keepDone };
  const procs: ChildProcess[] = [];
  const state = { ready: 0, done: 0, completed: 0, statements: 0, cpuMs: 0, error: '' };
  try {
    for (let i = 0; i < params.processes; i++) {
      const proc = fork(CHILD_SCRIPT, [], {
        execPath: workerNode(),
        env: { ...process.env, POSTPONE_CEILING_CHILD: JSON.stringify({ ...config, owner: `${config.owner}-${i + 1}` }) },
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      proc.on('message', (m: CeilingChildMessage) => {
        if (m.type === 'ready') state.ready++;
        else if (m.type === 'error') state.error ||= m.message;
        else {
          state.done++;
          state.completed += m.completed;
          state.statements += m.statements;
          state.cpuMs += m.cpuMs;
        }
      });
      proc.on('exit', (code) => {
        if (code !== 0 && code !== null && state.done < params.processes) state.error ||= `ceiling process exited with code ${code}`;
      });
      procs.push(proc);
    }
    const check = (n: () => number) => () => {
      if (state.error) throw new Error(state.error);
      return n() >= params.processes;
    };
    await waitFor(check(() => state.ready), { timeoutMs: 60_000, intervalMs: 5, what: 'ceiling processes ready' });
    const before = await ctx.counter.snapshot(database);
    const t0 = performance.now();
    for (const p of procs) p.send({ type: 'go' });
    await waitFor(check(() => state.done), { timeoutMs: 300_000, intervalMs: 2, what: 'ceiling processes done' });
    const seconds = (performance.now() - t0) / 1000;
    const after = await ctx.counter.snapshot(database);
    if (state.completed !== params.tasks) throw new Error(`ceiling completed ${state.completed} of ${params.tasks} tasks`);
    return {
      batch,
      ...rateFigures({ processes: params.processes, tasks: params.tasks, completed: state.completed, seconds, statements: state.statements, serverMs: after.execMs - before.execMs, walBytes: after.walBytes - before.walBytes, serverCpuMs: after.serverCpuMs - before.serverCpuMs }),
      cpuMsPerTask: state.cpuMs / state.completed,
    };
  } finally {
    for (const p of procs) if (p.connected) p.disconnect();
    await waitFor(() => procs.every((p) => p.exitCode !== null || p.signalCode !== null), { timeoutMs: 10_000, intervalMs: 10, what: 'ceiling processes exit' }).catch(() => {
      for (const p of procs) p.kill('SIGKILL');
    });
  }
}

/**
 * The records of DONE the ceiling measures each round: history kept and not kept, or only not kept
 * under `--done-not-kept` (`benchKeepsDone()` false).
 */
export function ceilingModes(): readonly boolean[] {
  return benchKeepsDone() ? [true, false] : [false];
}

/**
 * Measures the ceiling once per batch size, each on a fresh Postpone database holding `tasks` due
 * tasks, completing with history kept (`keepDone`) or with the fenced delete alone.
 */
export async function runSqlCeiling(ctx: RunContext, params: CeilingParams, keepDone: boolean): Promise<CeilingResult> {
  const points: CeilingPoint[] = [];
  for (const batch of params.batches) {
    points.push(
      await ctx.databases.withFresh(postponeAdmin, `ceil${batch}`, async (url, database) => {
        await postponeAdmin.enqueue(url, Array.from({ length: params.tasks }, () => ({})));
        return await measure(ctx, url, database, params, batch, keepDone);
      }),
    );
  }
  return { keepDone, points };
}
