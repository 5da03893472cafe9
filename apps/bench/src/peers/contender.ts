/**
 * A contender in the side-by-side runs: one system in one of its settings, on one Node.js, and the
 * context every measured run shares.
 */
import type { StatementCounter } from './db/statements.js';
import { workerNode } from './node24.js';
import { WorkerProcesses } from './processes.js';
import type { RunDatabases } from './run-databases.js';
import type { SystemAdmin } from './systems/system.js';

export interface Contender {
  readonly admin: SystemAdmin;
  readonly setting: string;
  /**
   * Which Node.js runs its worker processes: `worker` (default) the bench's Node.js 24
   * ({@link workerNode}), `parent` the Node.js running the bench itself (the Node.js 20 row).
   */
  readonly runtime?: 'worker' | 'parent';
}

/** `postpone tuned`, `graphile-worker default`, `postpone tuned, Node 20` … */
export function contenderLabel(c: Contender): string {
  return c.runtime === 'parent' ? `${c.admin.system} ${c.setting}, Node ${process.versions.node.split('.')[0]}` : `${c.admin.system} ${c.setting}`;
}

/** The `node` binary a contender's worker processes run on. */
export function execPathOf(c: Contender): string {
  return c.runtime === 'parent' ? process.execPath : workerNode();
}

/** A path between the worker processes and the database (e.g. a TCP proxy with added latency). */
export interface Route {
  /** The connection string the worker processes use. */
  readonly url: string;
  /** Request/response turns seen so far on all connections (a turn: client bytes, then server bytes). */
  turns(): number;
  close(): Promise<void>;
}

export interface RunContext {
  /** URL of the server's admin database. */
  readonly adminUrl: string;
  readonly databases: RunDatabases;
  readonly counter: StatementCounter;
  /** When set, worker processes reach their run's database through the route it opens (the bench's own reads go direct). */
  readonly route?: (url: string) => Promise<Route>;
}

/**
 * Opens the run's route to `url` (when `ctx` has one) and spawns `processes` worker processes of
 * `contender`, `concurrency` handlers each, connected through it; the caller stops the workers and
 * closes the route.
 * @throws what {@link WorkerProcesses.spawn} throws, after closing the route
 */
export async function spawnContender(
  ctx: RunContext,
  contender: Contender,
  url: string,
  processes: number,
  concurrency: number,
): Promise<{ readonly workers: WorkerProcesses; readonly route: Route | undefined }> {
  const route = await ctx.route?.(url);
  try {
    const config = { system: contender.admin.system, setting: contender.setting, connectionString: route?.url ?? url, concurrency };
    return { workers: await WorkerProcesses.spawn(processes, config, {}, execPathOf(contender)), route };
  } catch (error) {
    await route?.close();
    throw error;
  }
}
