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
  /**
   * For a SCHEDULED task scheduled with `after` (docs/contract.md#dependencies): how many of its
   * dependencies are not yet terminal; while above 0 the task is held (never claimed) and `dueAt`
   * is its own due time. Absent for a task without dependencies or once released.
   */
  readonly waitingFor?: number;
}

/**
 * What the history row of a DONE task says of its completion (`Store.getCompletion`,
 * docs/contract.md#completion): the attempt that completed it and the worker that did. At most one
 * per task: only the holder of the current attempt can finish the live row, once (the fenced
 * complete), and history keeps one row per task. The library writes no effect row of its own (since
 * migration 13): a handler's local effect is its own row, written through `work` / `ctx.tx` in the
 * transaction that commits DONE.
 */
export interface Completion {
  readonly taskId: TaskId;
  /** The attempt (fencing token) whose complete committed DONE. */
  readonly attempt: number;
  /**
   * The `owner` that complete was given (the worker's identity); null for a task completed by code
   * before migration 13 of `@postpone/postgres`, which kept it in the legacy `effect` table only.
   */
  readonly worker: string | null;
  /** When DONE committed, on the store's clock. */
  readonly finishedAt: Date;
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
