/**
 * The messages between the bench (parent) and its worker processes (children, over Node's IPC
 * channel), and the configuration a child starts with.
 *
 * Life of a child: it loads its system's library and connects, then sends `ready`; on `go` it starts
 * consuming and sends `started`; every {@link REPORT_INTERVAL_MS} it sends `ran` with the tasks its
 * handlers ran since the last report (and, for timed tasks, their lateness); on `stop` it shuts its
 * worker down, sends a last `ran` and `stopped`, and exits.
 */

export const SYSTEM_NAMES = ['postpone', 'graphile-worker', 'pg-boss'] as const;
export type SystemName = (typeof SYSTEM_NAMES)[number];

/** How often a child reports the tasks it ran, in ms. */
export const REPORT_INTERVAL_MS = 50;

/** Name of the queue / task kind / task identifier every system uses in the bench. */
export const BENCH_TASK = 'bench_noop';

export interface ChildConfig {
  readonly system: SystemName;
  /** A setting name of that system, e.g. `default`, `tuned`, `hybrid`. */
  readonly setting: string;
  readonly connectionString: string;
  /** Handlers running at once in this process. */
  readonly concurrency: number;
  /** Worker identity for logs (e.g. `w1`). */
  readonly workerId: string;
}

/** The payload every bench task carries: its due time as epoch ms (absent for "due now" tasks). */
export interface BenchPayload {
  readonly dueMs?: number;
}

export type ParentMessage = { readonly type: 'go' } | { readonly type: 'stop' };

export type ChildMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'started' }
  | { readonly type: 'ran'; readonly count: number; readonly lateness: readonly number[] }
  /** `cpuMs`: user + system CPU time of the process from `go` to the end of its stop. */
  | { readonly type: 'stopped'; readonly cpuMs: number }
  | { readonly type: 'error'; readonly message: string };

export function isChildMessage(value: unknown): value is ChildMessage {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}
