import type { Json } from './input/json.js';
import type { RetryPolicy, TaskId } from './input/validate.js';
import type { TraceContext } from './input/trace-context.js';
import type { TaskState } from './states.js';

/** One row of the `task` table (docs/contract.md#data-model). Times come from the store's clock. */
export interface Task {
  readonly id: TaskId;
  readonly kind: string;
  /** The dedup key given at schedule time, or null (docs/contract.md#dedup-keys). */
  readonly key: string | null;
  /** Queue and priority given at schedule time (docs/contract.md#queues). */
  readonly queue: string;
  readonly priority: number;
  readonly payload: Json;
  readonly state: TaskState;
  readonly dueAt: Date;
  /** Number of claims so far; the current claim's fencing token. 0 before the first claim. */
  readonly attempt: number;
  /**
   * Attempts used up: each `fail` (a thrown handler, a timeout, an unknown kind) and each expired
   * lease reclaimed (a crash or a stall) adds one; a release (graceful hand-back) does not, nor does
   * complete. The task goes DEAD when a failure brings it to `maxAttempts` (docs/contract.md#attempts). Always at
   * most `attempt`.
   */
  readonly failures: number;
  readonly maxAttempts: number;
  readonly leaseOwner: string | null;
  readonly leaseUntil: Date | null;
  readonly cancelRequested: boolean;
  readonly result: Json | null;
  readonly lastError: string | null;
  readonly createdAt: Date;
  /** The last transition, cancel request or retry link; a lease renewal leaves it alone (the renewal is `leaseUntil`; docs/contract.md#vacuum). */
  readonly updatedAt: Date;
  /** The trace context given at schedule time; the field is absent when none was given. */
  readonly traceContext?: TraceContext;
  /** The task's own retry policy given at schedule (docs/contract.md#retry-policy); absent when none. */
  readonly retry?: RetryPolicy;
  /**
   * The last progress its handler reported (`ctx.progress`, `reportProgress`; docs/contract.md#progress),
   * kept when the task finishes; absent when none was reported.
   */
  readonly progress?: Json;
}

/** The local effect row written in the same transaction as DONE; at most one per task. */
export interface Effect {
  readonly taskId: TaskId;
  readonly attempt: number;
  readonly worker: string;
  readonly createdAt: Date;
}

/** A task as handed to a worker by claim. */
export interface ClaimedTask<P extends Json = Json> {
  readonly id: TaskId;
  readonly kind: string;
  readonly payload: P;
  /** Fencing token: pass it back to extend, complete and fail. */
  readonly attempt: number;
  /**
   * Failures before this attempt (see {@link Task.failures}); releases do not count. This attempt is
   * the last one when `failures + 1 === maxAttempts`; a failure of it is failure number `failures + 1`,
   * the count to base the retry backoff on.
   */
  readonly failures: number;
  readonly maxAttempts: number;
  readonly dueAt: Date;
  readonly leaseUntil: Date;
  /** The store's clock at the claim (database `now()`); `claimedAt - dueAt` is the lateness. */
  readonly claimedAt: Date;
  /** The task's priority (docs/contract.md#priorities). */
  readonly priority: number;
  /** The trace context given at schedule time; the field is absent when none was given. */
  readonly traceContext?: TraceContext;
  /** The task's own retry policy given at schedule; absent when none (the worker then uses the kind's, then its default). */
  readonly retry?: RetryPolicy;
}

/** The idempotency key to hand an external service so retries of one task apply once: `task-<id>`. */
export function idempotencyKey(id: TaskId): string {
  return `task-${id}`;
}
