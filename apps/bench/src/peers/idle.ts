/**
 * Idle cost: `processes` worker processes of one contender on an empty queue; statements per second
 * reaching the database over `windowMs`, after the workers have settled.
 */
import { ratePerSecond } from './db/statements.js';
import { delay } from './util/wait.js';
import { type Contender, contenderLabel, execPathOf, type RunContext } from './contender.js';
import { WorkerProcesses } from './processes.js';

export interface IdleParams {
  readonly processes: number;
  readonly concurrency: number;
  readonly windowMs: number;
  /** Time after start before the window opens (start-up queries excluded), ms. */
  readonly settleMs: number;
}

export interface IdleResult {
  readonly label: string;
  readonly statementsPerSecond: number;
  readonly source: string;
}

export async function runIdle(ctx: RunContext, contender: Contender, params: IdleParams): Promise<IdleResult> {
  const { admin, setting } = contender;
  return await ctx.databases.withFresh(admin, 'idle', async (url, database) => {
    const workers = await WorkerProcesses.spawn(params.processes, { system: admin.system, setting, connectionString: url, concurrency: params.concurrency }, {}, execPathOf(contender));
    try {
      await workers.go();
      await delay(params.settleMs);
      const before = await ctx.counter.snapshot(database);
      await delay(params.windowMs);
      workers.throwIfFailed();
      const after = await ctx.counter.snapshot(database);
      return { label: contenderLabel(contender), statementsPerSecond: ratePerSecond(before, after), source: ctx.counter.source };
    } finally {
      await workers.stop();
    }
  });
}
