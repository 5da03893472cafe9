/**
 * Task states, the single source of truth for every store (docs/contract.md#states).
 *
 * The SQL CHECK constraint in `@postpone/postgres` is generated from {@link TASK_STATES}.
 */
export const TaskState = Object.freeze({
  /** Waiting for its due time. Entered by schedule, by fail with attempts left, by snooze, by release, by reclaim with attempts left. Left by claim or cancel. */
  SCHEDULED: 'SCHEDULED',
  /** Held by one worker under a lease; `attempt` is its fencing token. Entered by claim. Left by complete, fail, or reclaim after lease expiry. */
  CLAIMED: 'CLAIMED',
  /** Terminal. Completed by the holder of the current attempt; the handler's own writes (`work`) committed in the same transaction. */
  DONE: 'DONE',
  /** Terminal. Cancelled while waiting, or while running once the holder reported back (or its lease expired). */
  CANCELLED: 'CANCELLED',
  /** Terminal. A failure (fail, or an expired lease reclaimed) brought `failures` to `maxAttempts`, or a fail said `retryable: false`; releases and snoozes never count. */
  DEAD: 'DEAD',
} as const);

export type TaskState = (typeof TaskState)[keyof typeof TaskState];

export const TASK_STATES: readonly TaskState[] = Object.freeze(Object.values(TaskState));

/** Terminal states never change again (docs/contract.md#promise-5). */
export const TERMINAL_STATES: readonly TaskState[] = Object.freeze([TaskState.DONE, TaskState.CANCELLED, TaskState.DEAD]);

export function isTerminal(state: TaskState): boolean {
  return state === TaskState.DONE || state === TaskState.CANCELLED || state === TaskState.DEAD;
}

/** What `cancel` returns; each value names the phase the task was in (docs/contract.md#outcomes). */
export const CancelOutcome = Object.freeze({
  /** The task was waiting: it will never run, no effect. */
  CANCELLED: 'CANCELLED',
  /** The task was running: its local effect will not commit; final state CANCELLED. An external call already made cannot be recalled. */
  REQUESTED: 'REQUESTED',
  /** The task was DONE or DEAD: the cancel has no effect. */
  TOO_LATE: 'TOO_LATE',
  /** The task was already CANCELLED: idempotent repeat. */
  ALREADY_CANCELLED: 'ALREADY_CANCELLED',
  /** No such task. */
  NOT_FOUND: 'NOT_FOUND',
} as const);
export type CancelOutcome = (typeof CancelOutcome)[keyof typeof CancelOutcome];

/** What `complete` returns (docs/contract.md#outcomes). */
export const CompleteOutcome = Object.freeze({
  /** Committed DONE with its effect (also returned again for a retried complete of the attempt that committed). */
  DONE: 'DONE',
  /** Cancel was requested while running: nothing committed, the task is now CANCELLED. */
  CANCELLED_BEFORE_COMMIT: 'CANCELLED_BEFORE_COMMIT',
  /** The attempt is not the current one, or its lease was revoked: nothing changed. */
  REJECTED_STALE: 'REJECTED_STALE',
  /**
   * Only for a complete with `keep: false` (DONE not kept, docs/contract.md#done-not-kept): the task
   * is in neither the live table nor history. It was finished without history — by this attempt
   * (a retry after a lost reply) or by another one — and nothing changed now. The caller cannot tell
   * which; either way the task is finished and must not be failed or retried.
   */
  NOT_FOUND: 'NOT_FOUND',
} as const);
export type CompleteOutcome = (typeof CompleteOutcome)[keyof typeof CompleteOutcome];

/** What `fail` returns: the next state, or a stale rejection (docs/contract.md#outcomes). */
export type FailResult =
  | { readonly outcome: 'SCHEDULED'; readonly dueAt: Date }
  | { readonly outcome: 'DEAD' }
  | { readonly outcome: 'CANCELLED' }
  | { readonly outcome: 'REJECTED_STALE' };
export type FailOutcome = FailResult['outcome'];

/** What `snooze` returns: due again at `dueAt` (no failure counted), cancelled (cancel was requested), or stale. */
export type SnoozeResult = { readonly outcome: 'SCHEDULED'; readonly dueAt: Date } | { readonly outcome: 'CANCELLED' } | { readonly outcome: 'REJECTED_STALE' };

/** What a lease reclaim moved an expired task to. */
export type ReclaimOutcome = 'SCHEDULED' | 'DEAD' | 'CANCELLED';

/** What `release` returns: the task is due again now, cancelled (cancel was requested), or the attempt was stale. */
export type ReleaseOutcome = 'SCHEDULED' | 'CANCELLED' | 'REJECTED_STALE';
