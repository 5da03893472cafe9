/**
 * How a worker finds due tasks. The worker's loop (`@postpone/worker`) owns claiming, reclaiming and
 * shutdown; a Discovery only answers "should I claim now?" and "how long may I wait?":
 *
 * ```
 * loop: reclaim when due
 *       if a slot is free and wantsClaim(): token = claimStarted(); claim; claimFinished(token, ...)
 *       wait(until the next reclaim, wake = a slot freed or stop, full = no slot free)
 * ```
 *
 * Two implementations: {@link PollDiscovery} (claim every `pollIntervalMs`) and
 * {@link HybridDiscovery} (a timing wheel of near tasks, woken by notifications, with a fallback
 * re-read). Either way the claim is the store's atomic claim, so discovery never decides correctness:
 * a wrong answer costs an empty claim or some lateness, never a task.
 */
import type { ClaimedTask, Store, TaskId } from '@postpone/core';
import type { Pacing } from '@postpone/wheel';
import type { Logger } from 'pino';
import type { DiscoveryMode } from './hybrid-options.js';

/**
 * Why hybrid discovery re-read the store into its wheel: `start`; `fallback` (the periodic re-read);
 * `horizon` (the last read was cut at its limit and time is reaching its end); `gap` (the worker was
 * paused); `reconnect` (the notification listener lost its connection and listens again); `pauseNotice`
 * (a queue or kind was paused or resumed, docs/contract.md#pause-and-resume).
 */
export type RebuildReason = 'start' | 'fallback' | 'horizon' | 'gap' | 'reconnect' | 'pauseNotice';

/** The store calls of discovery: `peekDue` (hybrid's loads) and `listen` (notifications). */
export type DiscoveryOperation = 'peekDue' | 'listen';

/**
 * A re-read of the store (`peekDue`) merged into the wheel: `listed` tasks read, `size` timers held
 * afterwards. Everything already due fires at once.
 */
export interface WheelRebuilt {
  readonly reason: RebuildReason;
  readonly listed: number;
  readonly size: number;
}

/** A snapshot of what discovery did, for tests, logs and reports. */
export interface DiscoveryStats {
  readonly mode: DiscoveryMode;
  /** Timers in the wheel now (hybrid; 0 when polling). */
  readonly wheelSize: number;
  /** Timers that fired (each makes a claim owed). */
  readonly fired: number;
  /** Re-reads of the store into the wheel, by reason. */
  readonly rebuilds: Readonly<Record<RebuildReason, number>>;
  /** Notifications received (a task scheduled, or a waiting task cancelled). */
  readonly notices: number;
  /** Whether a notification listener is registered. */
  readonly listening: boolean;
  /** Other workers of this worker's group it knows now (hybrid sharing; 0 when polling or alone). */
  readonly peers: number;
  /** Timers that fired in another worker's slice and were left to it (hybrid sharing). */
  readonly deferred: number;
  /** Timers of another worker's slice claimed here because the task was still waiting past the grace. */
  readonly fallbacks: number;
  /** Timers of another worker's slice that made a claim owed here while helping (a backlog was seen there). */
  readonly helped: number;
  /**
   * Hybrid claims by what made them owed, each with how many came back empty: `own` (a timer of this
   * worker's slice), `fallback` (another's task found overdue), `help` (helping a backlog), `full` (the
   * last claim came back full), `start` (start, or a rebuild), `retry` (after a failed claim).
   * Absent when polling.
   */
  readonly claimsByCause?: Readonly<Record<ClaimCause, ClaimCount>>;
}

/** Why a hybrid claim was owed (see {@link DiscoveryStats.claimsByCause}). */
export type ClaimCause = 'own' | 'fallback' | 'help' | 'full' | 'start' | 'retry';

/** Claims sent, and how many of them claimed nothing. */
export interface ClaimCount {
  readonly claims: number;
  readonly empty: number;
}

export interface Discovery {
  readonly mode: DiscoveryMode;
  /** Begins (hybrid: listens, then loads the wheel). Never throws: store errors are reported. */
  start(): Promise<void>;
  /** Whether a claim now may find a task this worker has not tried for (poll: always). */
  wantsClaim(): boolean;
  /** A claim is being sent; pass the token to {@link claimFinished}. */
  claimStarted(): number;
  /** The claim's answer: the tasks (asked for `asked`), or null when it failed. */
  claimFinished(token: number, asked: number, claimed: readonly ClaimedTask[] | null): void;
  /**
   * Waits until a claim may be wanted, at most `maxMs`, or until `wake` aborts (a slot freed while
   * full, or stop). With `full` (no slot free) only `wake` or `maxMs` end the wait.
   */
  wait(maxMs: number, wake: AbortSignal, full: boolean): Promise<void>;
  stats(): DiscoveryStats;
  /** Stops timers and listening; idempotent. */
  stop(): Promise<void>;
}

/** What discovery may use of the worker. */
export interface DiscoveryDeps {
  readonly store: Store<unknown>;
  /**
   * What the worker's claims take (its queue and kinds): the wheel loads only those tasks
   * (`peekDue`), so it holds no timer for a task this worker may not claim. A notice does not name
   * kind or queue, so a notified task of another kind may still add a timer: it wakes one claim that
   * takes nothing of it (no attempt is used).
   */
  readonly selection?: { readonly queue?: string; readonly kinds?: readonly string[] };
  /**
   * The worker's id (its lease owner): hybrid workers rank each other by it to share due time
   * (docs/contract.md#discovery-sharing). Default: a random id.
   */
  readonly workerId?: string;
  readonly pacing: Pacing;
  readonly logger: Logger;
  /** Reports a failed store call: emitted as an `error` event and logged (a closed store stops the worker). */
  readonly report: (error: unknown, operation: DiscoveryOperation) => void;
  /** A store call of discovery (a load, a LISTEN) succeeded: ends an outage reported through `report`. */
  readonly succeeded: () => void;
  /** A `cancelRequested` notice arrived for task `id`: the worker aborts its handler if it runs it. */
  readonly onCancelRequested: (id: TaskId) => void;
  /** Hybrid discovery re-read the store into its wheel (the worker's `wheelRebuilt` event). */
  readonly onRebuilt: (rebuilt: WheelRebuilt) => void;
}

export const NO_REBUILDS: Readonly<Record<RebuildReason, number>> = Object.freeze({ start: 0, fallback: 0, horizon: 0, gap: 0, reconnect: 0, pauseNotice: 0 });
