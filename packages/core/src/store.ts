/**
 * The Store contract: one method per operation of docs/contract.md#transitions, each a single statement or a single
 * transaction whose guards live in the store itself (SQL or the transition function).
 *
 * Every store passes `@postpone/conformance`. `Tx` is what the store hands to code that writes in the
 * same transaction: a `pg` client for the node-postgres store, a transaction `sql` for postgres.js,
 * a {@link MemoryTx}-like object for the in-memory store.
 */
import type { ListTasksParams, PruneParams, PruneResult, RetryParams, RetryResult, StoreStats, TaskPage } from './admin.js';
import type { BulkFilter, BulkOptions, CancelManyResult, DeleteManyResult, RescheduleManyOptions, RescheduleManyResult, RetryManyOptions, RetryManyResult } from './bulk.js';
import type { CompleteManyItem } from './complete-many.js';
import type { ExtendManyParams } from './extend-many.js';
import type { CancelOutcome, CompleteOutcome, FailResult, ReclaimOutcome, ReleaseOutcome, SnoozeResult, TaskState } from './states.js';
import type { Json } from './input/json.js';
import type { OnConflict, ScheduleInput, TaskId } from './input/validate.js';
import type { ClaimedTask, Completion, Task } from './task.js';
import type { RateLimited } from './rate-limit.js';
import type { UnclaimedKinds, UnclaimedKindsParams } from './unclaimed.js';
import type { PausedEntry, PauseOptions, PauseTarget } from './pause.js';
import type { ProgressParams, RescheduleParams, RescheduleResult, WaitForOptions } from './progress-wait.js';

/** What schedule returns: the new task, or the one holding the dedup key (docs/contract.md#dedup-keys). */
export interface ScheduledTask {
  readonly id: TaskId;
  /** The task's due time after the call (the kept task's own, when it was kept). */
  readonly dueAt: Date;
  /** True for a new task; false when a task of the same kind and key was kept or replaced. */
  readonly created: boolean;
  /** True when `onConflict: 'replace'` or `'debounce'` rewrote the payload and due time of a SCHEDULED task; false otherwise (a CLAIMED one is kept). */
  readonly replaced: boolean;
  /**
   * Present (true) only when `onConflict: 'throttle'` refused the schedule: a task of this kind and
   * key was created less than its `throttleMs` ago. Nothing was written; `id` and `dueAt` are that
   * last task's (its due time as created), whatever its state now (docs/contract.md#dedup-keys).
   */
  readonly throttled?: true;
}

export interface ScheduleOptions<Tx> {
  /** Run the insert inside the caller's open transaction (it commits or rolls back with it). */
  readonly tx?: Tx;
  /**
   * When a SCHEDULED or CLAIMED task of the same kind and `key` exists: `'keep'` it (default; returned
   * with `created: false`), `'replace'` its payload and due time if still SCHEDULED, or `'fail'` with
   * `DuplicateKeyError` (nothing written). `'debounce'`: a SCHEDULED holder gets the new payload and
   * due time (`replaced: true`); a CLAIMED holder hands its key to a new task queued behind it
   * (`created: true`; the running task's `key` reads null from then on). `'queueBehind'` (one
   * running plus one queued): a SCHEDULED holder is kept, a CLAIMED one hands its key over as with
   * `'debounce'`; it bounds the waiting tasks of a key to one, not the running ones. `'throttle'` (with
   * `throttleMs`): a new task only when none of the kind and key was created by a throttle schedule
   * in the last `throttleMs`, else `throttled: true`; a live holder past the period is kept as with
   * `'keep'`. Tasks without a key never conflict (docs/contract.md#dedup-keys).
   */
  readonly onConflict?: OnConflict;
  /**
   * With `onConflict: 'throttle'` only, and then required: the period in whole ms,
   * 1..`MAX_DELAY_MS`, counted on the store's clock from the creation of the last task the throttle
   * let through. Else ValidationError INVALID_OPTION `options.throttleMs`.
   */
  readonly throttleMs?: number;
}

/** Options of `cancel` (docs/contract.md#transactions). */
export interface CancelOptions<Tx> {
  /** Run the cancel inside the caller's open transaction: it commits or rolls back with it; the row stays locked until then. */
  readonly tx?: Tx;
}

export interface ClaimParams {
  /** Worker identity, stored in `lease_owner` (and, once DONE, as the completion's `worker`). */
  readonly owner: string;
  /** Most tasks to claim, 1..10 000. */
  readonly limit: number;
  /** Lease length in ms, from the store's clock at the claim. */
  readonly leaseMs: number;
  /** Take only tasks of these kinds, 1..1 000 (default: every kind); see core `validateSelection`, docs/contract.md#queues. */
  readonly kinds?: readonly string[];
  /** Take only tasks of this queue (default `'default'`). */
  readonly queue?: string;
  /**
   * Per-kind concurrency caps, `{ [kind]: cap }` (0..1 000 kinds, caps 1..1 000 000; core
   * `validateKindLimits`, else ValidationError and nothing claimed): the claim takes at most
   * `cap − (tasks of the kind CLAIMED now, in any queue, by anyone)` of a capped kind. Exact on every
   * store: capped claims serialise per kind (docs/contract.md#kind-concurrency). Claims that do not
   * pass a kind's cap ignore it, so every claimer of a capped kind must pass the same caps.
   */
  readonly kindLimits?: Readonly<Record<string, number>>;
  /**
   * Called (before the claim resolves) when rate limits hold back everything this claim may take —
   * its queue's limit has no room, or it names `kinds` and every one of them is at its limit
   * (docs/contract.md#rate-limits) — either before it took anything, or because its own claims,
   * fewer than `limit`, used up the room. `reopensInMs` is how long until a claim may take one
   * again, so a worker sleeps that long instead of polling. Also called when it names `kinds`, every
   * one has a per-key rate limit, it took fewer than `limit`, and every due task of those kinds in
   * its queue is held back by its limit key's window (docs/contract.md#per-key-rate-limits;
   * `reopensInMs` then until a key's window reopens or the next task of those kinds falls due). Not
   * called while a claim could still take something. What the callback throws is dropped.
   */
  readonly onRateLimited?: (limited: RateLimited) => void;
}

export interface ExtendParams {
  readonly id: TaskId;
  readonly attempt: number;
  readonly leaseMs: number;
}

export interface CompleteParams<Tx> {
  readonly id: TaskId;
  /** The fencing token received at claim. */
  readonly attempt: number;
  /** Worker identity kept with the DONE in history (`Completion.worker`, see {@link Store.getCompletion}). */
  readonly owner: string;
  /** JSON result stored on the task (default null). */
  readonly result?: unknown;
  /**
   * The handler's own writes — its local effect, e.g. a row of its own keyed by task id — run in the
   * same transaction after the fenced move to DONE hit; they commit with DONE or not at all. Not
   * called when the complete is stale or cancelled. If it throws, the transaction rolls back and
   * complete rethrows. The library writes no effect row of its own (docs/contract.md#completion).
   */
  readonly work?: (tx: Tx) => Promise<void>;
  /**
   * Keep the task in history once DONE (default true). False — DONE not kept, as graphile-worker
   * and BullMQ's `removeOnComplete` (docs/contract.md#done-not-kept): the fenced complete is the
   * delete of the live row alone, with no history row (`work` still runs in its
   * transaction). What is given up: a repeated complete after the row is gone answers `NOT_FOUND`
   * instead of `DONE`, cancel answers `NOT_FOUND` instead of `TOO_LATE`, `getTask` returns null.
   * A cancel-requested task still ends CANCELLED in history.
   */
  readonly keep?: boolean;
}

export interface FailParams {
  readonly id: TaskId;
  readonly attempt: number;
  /** Error text recorded in `last_error` (truncated to 2 000 characters). */
  readonly error: string;
  /** Delay before the next attempt when attempts are left; compute with `backoffMs()` or `retryDelayMs()`. */
  readonly backoffMs: number;
  /**
   * `false`: the failure is final — DEAD now whatever attempts are left (CANCELLED still wins when
   * cancel was requested), e.g. a handler's `NonRetryableError`. Default true (docs/contract.md#retry-policy).
   */
  readonly retryable?: boolean;
  /**
   * The failure limit to apply instead of the row's `maxAttempts`, integer 1..2³¹−1: the worker's
   * resolved policy (the kind's, when the task has no `maxAttempts` of its own). Default: the row's.
   */
  readonly maxAttempts?: number;
}

/** Give `dueAt` or `delayMs`, exactly one. */
export interface SnoozeParams {
  readonly id: TaskId;
  /** The fencing token received at claim. */
  readonly attempt: number;
  /** Absolute next due time (a valid Date, years 1..9999; a past one means due now). */
  readonly dueAt?: Date;
  /** Next due time as a delay from the store's now, whole ms 0..MAX_DELAY_MS (100 years). */
  readonly delayMs?: number;
}

export interface ReleaseParams {
  readonly id: TaskId;
  readonly attempt: number;
}

export interface ReclaimParams {
  /** Most tasks to reclaim in one call (default 1 000). */
  readonly limit?: number;
}

export interface ReclaimedTask {
  readonly id: TaskId;
  readonly attempt: number;
  readonly outcome: ReclaimOutcome;
}

export interface PeekParams {
  /** Include tasks due up to this many ms after the store's now. */
  readonly withinMs: number;
  /** Most rows (default 1 000). */
  readonly limit?: number;
  /** As {@link ClaimParams.kinds} and {@link ClaimParams.queue}: list only what such a claim may take. */
  readonly kinds?: readonly string[];
  readonly queue?: string;
}

export interface PeekResult {
  /** The store's now at the query: place timers by `dueAt - now`, never by the local wall clock. */
  readonly now: Date;
  readonly tasks: readonly { readonly id: TaskId; readonly dueAt: Date }[];
  /**
   * True when nothing of the selection can be claimed because it is paused: its queue is paused, or
   * `kinds` were given and every one of them is paused (docs/contract.md#pause-and-resume); absent
   * otherwise. Paused tasks are never listed; a timing wheel may ignore `scheduled` notices while this holds.
   */
  readonly paused?: boolean;
}

export type StateCounts = Readonly<Record<TaskState, number>>;

/**
 * How many database connections a store can use at once: an optional capability (the PostgreSQL
 * stores have it, the in-memory store has not), read by the worker to refuse a pool too small for it.
 */
/** What a store's `migrate()` did, for stores with numbered migrations (the PostgreSQL stores). */
export interface MigrateResult {
  /** Versions applied by this call, in order; empty when another process (or an earlier call) had applied them all. */
  readonly applied: readonly number[];
  /** The schema's version afterwards: the newest migration this code knows. */
  readonly version: number;
}

export interface ConnectionBudget {
  /** Most connections open at once (the pool's `max`). */
  readonly max: number;
  /** Whether `listen` holds one of those `max` connections while it listens (`pg`), rather than one of its own (postgres.js). */
  readonly listen: boolean;
  /** Whether other code may take connections from the same pool: true when you gave the store your pool or `sql`. */
  readonly shared: boolean;
}

export interface Store<Tx = unknown> {
  /** Adapter name, e.g. `pg`, `postgres`, `memory`. */
  readonly name: string;

  /** The store's connection pool size, when it has one (see {@link ConnectionBudget}). */
  readonly connectionBudget?: ConnectionBudget;

  /** Creates or upgrades the schema; safe to call from many processes at once. Stores with numbered migrations say what they applied. */
  migrate(): Promise<MigrateResult | undefined>;

  /**
   * Schedules one task; with a `key`, the race between schedulers is decided by the store itself.
   * @throws ValidationError (nothing inserted), DuplicateKeyError (`onConflict: 'fail'`), StoreClosedError, ConnectionLostError, StoreError
   */
  schedule(input: ScheduleInput, options?: ScheduleOptions<Tx>): Promise<ScheduledTask>;

  /** Schedules many tasks in one statement, all or nothing; results in input order. Same errors as schedule. */
  scheduleMany(inputs: readonly ScheduleInput[], options?: ScheduleOptions<Tx>): Promise<ScheduledTask[]>;

  /**
   * Cancels a task; the outcome names the phase it was in (docs/contract.md#outcomes). With `options.tx`
   * it runs in the caller's open transaction. @throws ValidationError for a malformed id or options
   */
  cancel(id: TaskId, options?: CancelOptions<Tx>): Promise<CancelOutcome>;

  /**
   * Claims up to `limit` due tasks of the queue (and kinds, when given) atomically (SKIP LOCKED); each
   * claim increments `attempt`. Order: priority desc, due time, id — best effort (docs/contract.md#priorities).
   */
  claim(params: ClaimParams): Promise<ClaimedTask[]>;

  /** Renews the lease of the current attempt; false when stale, lost, expired or cancel-requested. */
  extend(params: ExtendParams): Promise<boolean>;

  /**
   * Renews many leases at once, each exactly as {@link extend}: only an attempt still CLAIMED with that
   * attempt, not cancel-requested and not expired gets `lease_until = now + leaseMs` (one statement in
   * the PostgreSQL store, a HOT update like extend). Every item is validated first
   * (`validateExtendMany`); an empty batch returns [] without I/O.
   * @returns one boolean per item, in input order: true when that lease was renewed
   * @throws ValidationError naming `items[i].field` or `leaseMs` (nothing changed), StoreClosedError, ConnectionLostError, StoreError
   */
  extendMany(params: ExtendManyParams): Promise<boolean[]>;

  /**
   * Completes the current attempt, fenced: the DONE row (with `owner`) moves to history, and `work`
   * runs in the same transaction. With `keep: false` the DONE task leaves the store at once (no history) and a
   * complete that finds no task at all answers NOT_FOUND (docs/contract.md#done-not-kept).
   */
  complete(params: CompleteParams<Tx>): Promise<CompleteOutcome>;

  /**
   * Completes many attempts at once, each exactly as {@link complete}: DONE only when
   * its fenced move hits; CANCELLED_BEFORE_COMMIT when cancel was requested;
   * DONE again for an attempt already DONE; REJECTED_STALE otherwise (unknown id included), except
   * for an item with `keep: false` whose task is in neither the live table nor history: NOT_FOUND.
   * Items with `work` (group commit of same-transaction writes): the batch is one transaction per
   * store node; each hit item's `work(tx)` runs in it after the fenced moves, in input order, and
   * commits with the DONEs. Every item is validated first (`validateCompleteMany`); an empty batch
   * returns [] without I/O.
   * @returns one outcome per item, in input order
   * @throws ValidationError naming `items[i].field` (nothing changed), StoreClosedError, ConnectionLostError, StoreError;
   *   whatever a `work` threw, unchanged, after the rollback of its transaction (its items stay
   *   CLAIMED; complete each alone to isolate it), as {@link complete} rethrows it
   */
  completeMany(items: readonly CompleteManyItem<Tx>[]): Promise<CompleteOutcome[]>;

  /**
   * Reports a failed attempt, fenced; it counts one failure (`Task.failures`): SCHEDULED after
   * backoff, DEAD when failures reach `maxAttempts`, CANCELLED if requested.
   */
  fail(params: FailParams): Promise<FailResult>;

  /**
   * Hands the current attempt back without waiting for the lease (graceful shutdown): fenced by
   * attempt, CLAIMED → SCHEDULED due now (or CANCELLED when cancel was requested). One UPDATE.
   * Not a failure: `failures` is unchanged, so releases never make a task DEAD.
   */
  release(params: ReleaseParams): Promise<ReleaseOutcome>;

  /**
   * Puts the current attempt off until `dueAt` (or now + `delayMs`) WITHOUT counting a failure
   * (docs/contract.md#retry-policy): fenced by attempt, CLAIMED → SCHEDULED at that time, lease
   * cleared, `failures` and `last_error` unchanged, or CANCELLED when cancel was requested. One UPDATE.
   * `attempt` still grew at the claim, so the fencing token stays unique.
   * @throws ValidationError (see `validateSnoozeParams`), StoreClosedError, ConnectionLostError, StoreError
   */
  snooze(params: SnoozeParams): Promise<SnoozeResult>;

  /**
   * Moves tasks whose lease expired out of CLAIMED, each counting one failure (a crash or a stall),
   * as fail does; one conditional UPDATE, safe to run concurrently.
   */
  reclaimExpired(params?: ReclaimParams): Promise<ReclaimedTask[]>;

  /** Lists SCHEDULED tasks due within `withinMs` without claiming them (for the timing wheel). */
  peekDue(params: PeekParams): Promise<PeekResult>;

  /**
   * Records the current attempt's progress on the task (docs/contract.md#progress), fenced: only while
   * the task is CLAIMED with this attempt (a stale attempt's write changes nothing). It replaces the
   * previous value; nothing else changes (one HOT update in PostgreSQL: `progress` is in no index).
   * Workers call it through `ctx.progress`, coalesced to at most one write per `progressIntervalMs`.
   * @returns true when written, false when the attempt is not the current holder's (stale, finished, unknown id)
   * @throws ValidationError INVALID_TASK_ID, INVALID_OPTION, INVALID_PROGRESS, PROGRESS_TOO_LARGE (nothing written), StoreClosedError, ConnectionLostError, StoreError
   */
  reportProgress(params: ProgressParams): Promise<boolean>;

  /**
   * Changes a SCHEDULED task's due time — and its payload, when given — by id (docs/contract.md#reschedule),
   * fenced on SCHEDULED in one statement; sends the schedule notice so hybrid workers learn the new due time.
   * @returns RESCHEDULED with the new due time, NOT_SCHEDULED with the task's state (nothing changed), NOT_FOUND
   * @throws ValidationError as schedule's (`dueAt` or `delayMs`, exactly one; `payload`), nothing written; StoreClosedError, ConnectionLostError, StoreError
   */
  reschedule(id: TaskId, params: RescheduleParams): Promise<RescheduleResult>;

  /**
   * Resolves with the task once it is terminal (DONE, DEAD or CANCELLED; its `result`, `lastError`…),
   * at once when it already is (docs/contract.md#awaiting-a-result). Woken by the store's own
   * notice of the finish (PostgreSQL: LISTEN on one shared connection per store), with a bounded
   * batched re-read of every pending id as fallback — never a query per caller per interval.
   * @throws ValidationError INVALID_TASK_ID, INVALID_OPTION; TaskNotFoundError NOT_FOUND when no task
   *   has the id (`vanished: true` when it was seen live and then left no row: DONE not kept, or pruned);
   *   WaitTimeoutError WAIT_TIMEOUT after `timeoutMs`; the signal's reason when it aborts; StoreClosedError
   */
  waitFor(id: TaskId, options?: WaitForOptions): Promise<Task>;

  /** Reads one task, or null. */
  getTask(id: TaskId): Promise<Task | null>;

  /**
   * What history says of a DONE task's completion: the attempt that completed it, the worker (the
   * `owner` its complete passed) and the finish time (docs/contract.md#completion). Replaces
   * `getEffect`: the library writes no effect row of its own since migration 13.
   * @returns null when the task is not DONE in history: unknown, still live, DEAD or CANCELLED,
   *   DONE with `keep: false`, or pruned
   * @throws ValidationError INVALID_TASK_ID for a malformed id (nothing read), StoreClosedError, ConnectionLostError, StoreError
   */
  getCompletion(id: TaskId): Promise<Completion | null>;

  /** Counts tasks by state. */
  countByState(): Promise<StateCounts>;

  /**
   * Lists tasks matching every given filter, one page at a time by keyset (never OFFSET): pass the
   * page's `nextCursor` back as `cursor`. Order by id (`newest` first by default).
   * @throws ValidationError (see `validateListParams`), StoreClosedError, ConnectionLostError, StoreError
   */
  listTasks(params?: ListTasksParams): Promise<TaskPage>;

  /**
   * Retries a DEAD or CANCELLED task as a NEW task (same kind and payload, fresh attempt budget,
   * `retryOf` = the original); the original keeps its state and records `retriedAs`. Idempotent: a
   * second call returns the same new task (`ALREADY_RETRIED`). Other states: `NOT_RETRYABLE`.
   * @throws ValidationError (see `validateRetryParams`), StoreClosedError, ConnectionLostError, StoreError
   */
  retry(params: RetryParams): Promise<RetryResult>;

  /**
   * Deletes DONE, CANCELLED and DEAD tasks last updated before the cut-off (with their rows in the
   * legacy `effect` table, written by code before migration 13 of `@postpone/postgres`),
   * in batches of `batchSize` (each its own short transaction), until a batch comes back short.
   * @throws ValidationError (see `validatePruneParams`), StoreClosedError, ConnectionLostError, StoreError
   */
  prune(params: PruneParams): Promise<PruneResult>;

  /**
   * Cancels every task `filter` selects (docs/contract.md#bulk-operations), each exactly as
   * {@link cancel}: SCHEDULED → CANCELLED (moved to history), CLAIMED → cancel requested; by `ids`,
   * each id gets one of the five outcomes. In batches of `batchSize` rows, each its own short
   * transaction locking its rows in id order.
   * @returns counts per cancel outcome and the batches run
   * @throws ValidationError (see `validateBulkFilter`, `validateBulkOptions`; nothing changed), StoreClosedError, ConnectionLostError, StoreError
   */
  cancelMany(filter: BulkFilter, options?: BulkOptions): Promise<CancelManyResult>;

  /**
   * Retries every DEAD task `filter` selects (CANCELLED too when `states` names it), each exactly as
   * {@link retry}: a NEW SCHEDULED task; the original stays in history with `retriedAs`. In batches.
   * @throws as {@link cancelMany}
   */
  retryMany(filter: BulkFilter, options?: RetryManyOptions): Promise<RetryManyResult>;

  /**
   * Moves the due time of every SCHEDULED task `filter` selects to `dueAt` (or the store's now +
   * `delayMs`), fenced on state SCHEDULED when its row is locked; attempts and failures unchanged. In batches.
   * @throws as {@link cancelMany}
   */
  rescheduleMany(filter: BulkFilter, options: RescheduleManyOptions): Promise<RescheduleManyResult>;

  /**
   * Deletes the history rows (DONE, CANCELLED, DEAD) `filter` selects (with their legacy effect rows); live
   * tasks are never deleted (`NOT_FINISHED` by id). In batches.
   * @throws as {@link cancelMany}
   */
  deleteMany(filter: BulkFilter, options?: BulkOptions): Promise<DeleteManyResult>;

  /** Live counts (SCHEDULED, due, CLAIMED, DEAD) by kind and the oldest due task's lateness; reads no DONE/CANCELLED history. */
  stats(): Promise<StoreStats>;

  /**
   * The (queue, kind) pairs whose oldest SCHEDULED task has been due at least `dueForMs` while no
   * task of that kind in that queue is CLAIMED: kinds no live worker seems to claim (a missing
   * handler, a typo at the call site). Read only; bounded on a large live table (core `unclaimed.ts`,
   * docs/contract.md#unclaimed-kinds).
   * @returns the store's now and the pairs, longest waiting first, at most `limit` (default 100)
   * @throws ValidationError (see `validateUnclaimedKindsParams`), StoreClosedError, ConnectionLostError, StoreError
   */
  unclaimedKinds(params: UnclaimedKindsParams): Promise<UnclaimedKinds>;

  /**
   * Pauses a queue (`{ queue }`) or a kind in every queue (`{ kind }`) for every claimer: from the
   * commit on, no claim takes its tasks (they stay SCHEDULED, due time and attempts unchanged) and
   * `peekDue` does not list them; tasks already CLAIMED finish normally. Durable (a row); idempotent.
   * The PostgreSQL store also notifies listening workers (docs/contract.md#pause-and-resume).
   * @returns true when this call paused it, false when it was paused already (the first pause's row is kept)
   * @throws ValidationError (core `validatePauseTarget`, `validatePauseOptions`; nothing written), StoreClosedError, ConnectionLostError, StoreError
   */
  pause(target: PauseTarget, options?: PauseOptions): Promise<boolean>;

  /**
   * Resumes a paused queue or kind: its due tasks are claimed again from the next claim on (a
   * listening hybrid worker is notified and re-reads at once). Idempotent.
   * @returns true when it was paused, false when it was not
   * @throws ValidationError (core `validatePauseTarget`; nothing written), StoreClosedError, ConnectionLostError, StoreError
   */
  resume(target: PauseTarget): Promise<boolean>;

  /** Every paused queue and kind: queues first, then kinds, each by name. */
  listPaused(): Promise<PausedEntry[]>;

  /** The store's clock. */
  now(): Promise<Date>;

  /** Releases connections; later calls throw StoreClosedError. Idempotent. */
  close(): Promise<void>;
}

export type { Json };
