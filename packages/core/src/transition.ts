/**
 * The pure transition function of docs/contract.md#transitions: every arrow and every rejection, no I/O.
 *
 * The in-memory store applies it directly; the PostgreSQL store's SQL mirrors it guard for guard,
 * and the conformance suite plus a differential property test hold the two to the same outcomes.
 */
import type { Json } from './input/json.js';
import { CancelOutcome, CompleteOutcome, type FailResult, type ReclaimOutcome, type ReleaseOutcome, type SnoozeResult, TaskState } from './states.js';
import type { Task } from './task.js';
import type { RescheduleResult } from './progress-wait.js';

export type Command =
  /** SCHEDULED → CLAIMED when `dueAt <= now`: attempt+1, lease until now + leaseMs. */
  | { readonly type: 'claim'; readonly owner: string; readonly leaseMs: number }
  /** Renew the lease of the current attempt: CLAIMED, same attempt, not cancel-requested, lease not yet expired. */
  | { readonly type: 'extend'; readonly attempt: number; readonly leaseMs: number }
  /**
   * CLAIMED → DONE (fenced by attempt; `lastError` cleared: a DONE task has no error) or → CANCELLED when cancel was requested.
   * `keep: false` (DONE not kept, docs/contract.md#done-not-kept): the DONE row is dropped instead of kept
   * (`drop` in the result); a missing task answers NOT_FOUND instead of REJECTED_STALE.
   */
  | { readonly type: 'complete'; readonly attempt: number; readonly result: Json; readonly keep?: boolean }
  /**
   * CLAIMED → SCHEDULED (due now + backoffMs) / DEAD / CANCELLED, fenced by attempt. Counts one
   * failure; DEAD when that brings `failures` to `maxAttempts`.
   */
  | {
      readonly type: 'fail';
      readonly attempt: number;
      readonly error: string;
      readonly backoffMs: number;
      /** False: DEAD now, whatever attempts are left (docs/contract.md#retry-policy). Default true. */
      readonly retryable?: boolean;
      /** The limit to compare `failures` with instead of the row's `maxAttempts` (the worker's resolved policy). */
      readonly maxAttempts?: number;
    }
  /**
   * The holder asks to run again at `dueAt` without counting a failure: CLAIMED → SCHEDULED due at
   * `dueAt`, lease cleared, `failures` and `lastError` unchanged, fenced by attempt; → CANCELLED when
   * cancel was requested (as release).
   */
  | { readonly type: 'snooze'; readonly attempt: number; readonly dueAt: Date }
  /** SCHEDULED → CANCELLED; CLAIMED → CLAIMED with cancel requested. */
  | { readonly type: 'cancel' }
  /** CLAIMED with an expired lease (a crash or a stall) → SCHEDULED / DEAD / CANCELLED; counts one failure, as fail does. */
  | { readonly type: 'reclaim' }
  /**
   * The holder hands its attempt back (graceful shutdown): CLAIMED → SCHEDULED due now, lease cleared,
   * fenced by attempt; → CANCELLED when cancel was requested. A hand-back is not a failure:
   * `failures` and `lastError` are unchanged, so releases alone never make a task DEAD (two deploys
   * are not two failures), while `attempt` keeps growing at every claim as the fencing token (hand-backs
   * and snoozes so far: `attempt − failures`, less one while CLAIMED).
   */
  | { readonly type: 'release'; readonly attempt: number }
  /** A schedule with `onConflict: 'replace'` met this task by its dedup key: SCHEDULED → SCHEDULED with the new payload and due time; any other state unchanged. */
  | { readonly type: 'replace'; readonly payload: Json; readonly dueAt: Date }
  /** The holder reports progress (docs/contract.md#progress): CLAIMED, same attempt → `progress` replaced; nothing else changes (not `updatedAt`). */
  | { readonly type: 'progress'; readonly attempt: number; readonly progress: Json }
  /**
   * Reschedule by id (docs/contract.md#reschedule): SCHEDULED → SCHEDULED due at `dueAt`, with
   * `payload` when given (`undefined`: unchanged); any other state unchanged (NOT_SCHEDULED).
   */
  | { readonly type: 'reschedule'; readonly dueAt: Date; readonly payload?: Json };

export type Result =
  | { readonly type: 'claim'; readonly claimed: boolean }
  | { readonly type: 'extend'; readonly extended: boolean }
  /**
   * `keepDone` is true only when this call moved the task to DONE and keeps it in history (with the
   * completing worker, `Completion`). `drop` is true only when this call moved the task to DONE with `keep: false`:
   * the store deletes the row (no history) instead of storing the DONE row of `task`.
   */
  | { readonly type: 'complete'; readonly outcome: CompleteOutcome; readonly keepDone: boolean; readonly drop?: boolean }
  | { readonly type: 'fail'; readonly result: FailResult }
  | { readonly type: 'cancel'; readonly outcome: CancelOutcome }
  | { readonly type: 'reclaim'; readonly outcome: ReclaimOutcome | null }
  | { readonly type: 'release'; readonly outcome: ReleaseOutcome }
  | { readonly type: 'snooze'; readonly result: SnoozeResult }
  | { readonly type: 'replace'; readonly replaced: boolean }
  | { readonly type: 'progress'; readonly written: boolean }
  | { readonly type: 'reschedule'; readonly result: RescheduleResult };

export interface Step {
  /** The row after the command (the same object when nothing changed; null only for a missing task). */
  readonly task: Task | null;
  readonly result: Result;
}

/** The reason recorded in `last_error` when a lease expires. */
export const LEASE_EXPIRED_ERROR = 'lease expired';
/**
 * The text `last_error` held after a hand-back before issue 27. A hand-back is not an error and no
 * longer writes `last_error`; kept exported so code that compared with it still compiles.
 * @deprecated nothing writes it any more
 */
export const RELEASED_ERROR = 'released by worker';

/**
 * True when `failures` (counting the one just recorded) leaves no attempt: the task goes DEAD.
 * `>=`, not `===`: a row migrated from schema version 2 may already hold more failures than
 * `maxAttempts` (see `@postpone/postgres` migration 3).
 */
function exhausted(failures: number, maxAttempts: number): boolean {
  return failures >= maxAttempts;
}

/**
 * Applies one command to one task row at store time `nowMs` (epoch ms).
 * A command that is rejected returns the task unchanged (same object).
 */
export function transition(task: Task | null, command: Command, nowMs: number): Step {
  const now = new Date(nowMs);
  switch (command.type) {
    case 'cancel': {
      if (task === null) return { task, result: { type: 'cancel', outcome: CancelOutcome.NOT_FOUND } };
      switch (task.state) {
        case TaskState.SCHEDULED:
          return { task: { ...task, state: TaskState.CANCELLED, updatedAt: now }, result: { type: 'cancel', outcome: CancelOutcome.CANCELLED } };
        case TaskState.CLAIMED:
          return { task: { ...task, cancelRequested: true, updatedAt: now }, result: { type: 'cancel', outcome: CancelOutcome.REQUESTED } };
        case TaskState.CANCELLED:
          return { task, result: { type: 'cancel', outcome: CancelOutcome.ALREADY_CANCELLED } };
        default:
          return { task, result: { type: 'cancel', outcome: CancelOutcome.TOO_LATE } };
      }
    }
    case 'claim': {
      if (task === null || task.state !== TaskState.SCHEDULED || task.dueAt.getTime() > nowMs) {
        return { task, result: { type: 'claim', claimed: false } };
      }
      return {
        task: {
          ...task,
          state: TaskState.CLAIMED,
          attempt: task.attempt + 1,
          leaseOwner: command.owner,
          leaseUntil: new Date(nowMs + command.leaseMs),
          updatedAt: now,
        },
        result: { type: 'claim', claimed: true },
      };
    }
    case 'extend': {
      if (
        task === null ||
        task.state !== TaskState.CLAIMED ||
        task.attempt !== command.attempt ||
        task.cancelRequested ||
        task.leaseUntil === null ||
        task.leaseUntil.getTime() <= nowMs
      ) {
        return { task, result: { type: 'extend', extended: false } };
      }
      return { task: { ...task, leaseUntil: new Date(nowMs + command.leaseMs) }, result: { type: 'extend', extended: true } };
    }
    case 'complete': {
      const stale = { task, result: { type: 'complete', outcome: CompleteOutcome.REJECTED_STALE, keepDone: false } } as const;
      const keep = command.keep !== false;
      // DONE not kept: a task found nowhere may have been finished without history (by this attempt or another).
      if (task === null && !keep) return { task, result: { type: 'complete', outcome: CompleteOutcome.NOT_FOUND, keepDone: false } };
      if (task === null || task.attempt !== command.attempt) return stale;
      if (task.state === TaskState.CLAIMED) {
        if (task.cancelRequested) {
          return {
            task: { ...task, state: TaskState.CANCELLED, leaseOwner: null, leaseUntil: null, updatedAt: now },
            result: { type: 'complete', outcome: CompleteOutcome.CANCELLED_BEFORE_COMMIT, keepDone: false },
          };
        }
        return {
          task: { ...task, state: TaskState.DONE, result: command.result, lastError: null, leaseOwner: null, leaseUntil: null, updatedAt: now },
          result: keep ? { type: 'complete', outcome: CompleteOutcome.DONE, keepDone: true } : { type: 'complete', outcome: CompleteOutcome.DONE, keepDone: false, drop: true },
        };
      }
      // A retried complete after a lost reply: report what that attempt already got.
      if (task.state === TaskState.DONE) return { task, result: { type: 'complete', outcome: CompleteOutcome.DONE, keepDone: false } };
      if (task.state === TaskState.CANCELLED && task.cancelRequested) {
        return { task, result: { type: 'complete', outcome: CompleteOutcome.CANCELLED_BEFORE_COMMIT, keepDone: false } };
      }
      return stale;
    }
    case 'fail': {
      if (task === null || task.state !== TaskState.CLAIMED || task.attempt !== command.attempt) {
        return { task, result: { type: 'fail', result: { outcome: 'REJECTED_STALE' } } };
      }
      const failures = task.failures + 1;
      // A limit given with the fail (the kind's policy) becomes the row's, so the row shows the limit that applied.
      const maxAttempts = command.maxAttempts ?? task.maxAttempts;
      const base = { ...task, failures, maxAttempts, lastError: command.error, leaseOwner: null, leaseUntil: null, updatedAt: now };
      if (task.cancelRequested) return { task: { ...base, state: TaskState.CANCELLED }, result: { type: 'fail', result: { outcome: 'CANCELLED' } } };
      if (command.retryable === false || exhausted(failures, maxAttempts)) return { task: { ...base, state: TaskState.DEAD }, result: { type: 'fail', result: { outcome: 'DEAD' } } };
      const dueAt = new Date(nowMs + command.backoffMs);
      return { task: { ...base, state: TaskState.SCHEDULED, dueAt }, result: { type: 'fail', result: { outcome: 'SCHEDULED', dueAt } } };
    }
    case 'reclaim': {
      if (task === null || task.state !== TaskState.CLAIMED || task.leaseUntil === null || task.leaseUntil.getTime() >= nowMs) {
        return { task, result: { type: 'reclaim', outcome: null } };
      }
      const failures = task.failures + 1;
      const outcome: ReclaimOutcome = task.cancelRequested ? 'CANCELLED' : exhausted(failures, task.maxAttempts) ? 'DEAD' : 'SCHEDULED';
      return {
        task: { ...task, state: outcome, failures, leaseOwner: null, leaseUntil: null, lastError: LEASE_EXPIRED_ERROR, updatedAt: now },
        result: { type: 'reclaim', outcome },
      };
    }
    case 'release': {
      if (task === null || task.state !== TaskState.CLAIMED || task.attempt !== command.attempt) {
        return { task, result: { type: 'release', outcome: 'REJECTED_STALE' } };
      }
      const base = { ...task, leaseOwner: null, leaseUntil: null, updatedAt: now };
      if (task.cancelRequested) return { task: { ...base, state: TaskState.CANCELLED }, result: { type: 'release', outcome: 'CANCELLED' } };
      return { task: { ...base, state: TaskState.SCHEDULED, dueAt: now }, result: { type: 'release', outcome: 'SCHEDULED' } };
    }
    case 'snooze': {
      if (task === null || task.state !== TaskState.CLAIMED || task.attempt !== command.attempt) {
        return { task, result: { type: 'snooze', result: { outcome: 'REJECTED_STALE' } } };
      }
      const base = { ...task, leaseOwner: null, leaseUntil: null, updatedAt: now };
      if (task.cancelRequested) return { task: { ...base, state: TaskState.CANCELLED }, result: { type: 'snooze', result: { outcome: 'CANCELLED' } } };
      const dueAt = command.dueAt;
      return { task: { ...base, state: TaskState.SCHEDULED, dueAt }, result: { type: 'snooze', result: { outcome: 'SCHEDULED', dueAt } } };
    }
    case 'replace': {
      if (task === null || task.state !== TaskState.SCHEDULED) return { task, result: { type: 'replace', replaced: false } };
      return { task: { ...task, payload: command.payload, dueAt: command.dueAt, updatedAt: now }, result: { type: 'replace', replaced: true } };
    }
    case 'progress': {
      if (task === null || task.state !== TaskState.CLAIMED || task.attempt !== command.attempt) return { task, result: { type: 'progress', written: false } };
      return { task: { ...task, progress: command.progress }, result: { type: 'progress', written: true } };
    }
    case 'reschedule': {
      if (task === null) return { task, result: { type: 'reschedule', result: { outcome: 'NOT_FOUND' } } };
      if (task.state !== TaskState.SCHEDULED) return { task, result: { type: 'reschedule', result: { outcome: 'NOT_SCHEDULED', state: task.state } } };
      const payload = command.payload === undefined ? task.payload : command.payload;
      return {
        task: { ...task, payload, dueAt: command.dueAt, updatedAt: now },
        result: { type: 'reschedule', result: { outcome: 'RESCHEDULED', dueAt: command.dueAt } },
      };
    }
  }
}
