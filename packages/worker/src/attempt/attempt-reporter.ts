/**
 * Reports the end of an attempt to the store — complete, fail, release — fenced by the attempt, and
 * turns each answer into events and log lines. The store decides; the worker only reports what it said.
 */
import { isRefusal, PostponeError, type ClaimedTask, type CompleteOutcome, type FailResult, type Json, type ReleaseOutcome, type SnoozeResult, type Store } from '@postpone/core';
import type { Logger } from 'pino';
import { CompletionBatcher } from './completion-batcher.js';
import type { AttemptEmitter } from './events.js';
import type { CompletionWrite } from './handler.js';
import { type AttemptSettings, keepsDone } from './settings.js';
import type { SnoozeUntil } from './errors.js';
import { resolveRetry, retryDelayFor } from './retry-policy.js';
import { callStore, type StoreCallDeps } from './store-call.js';

/**
 * Whether the attempt still holds its lease (the lease keeper's word), asked before each retry of a
 * write that got no verdict: retries stop once it says no (see `callStore`).
 */
export type HoldsLease = () => boolean;

/**
 * What became of a complete whose completion writes threw, or a complete or snooze the store refused
 * (core's `isRefusal`): nothing committed, and the attempt must be failed with that error.
 */
export interface WriteFailed {
  readonly writeError: unknown;
}

export class AttemptReporter<Tx> {
  /** Null when `completeBatchSize` is 1: every completion is its own `store.complete`. */
  private readonly batcher: CompletionBatcher<Tx> | null;

  constructor(
    private readonly store: Store<Tx>,
    private readonly options: AttemptSettings,
    private readonly events: AttemptEmitter,
    private readonly logger: Logger,
  ) {
    this.batcher =
      options.completeBatchSize === 1
        ? null
        : new CompletionBatcher({
            store,
            owner: options.id,
            batchSize: options.completeBatchSize,
            batchDelayMs: options.completeBatchDelayMs,
            pacing: options.pacing,
            events,
          });
  }

  /**
   * Fenced complete with the handler's completion writes in the same transaction, queued to the
   * completion batcher (one `completeMany` for many tasks, writes included: group commit) unless
   * batching is off; a batch with writes that fails completes each task alone.
   * A write with no verdict (lost connection, statement or lock timeout, deadlock…) is tried again
   * while `holdsLease()`; it is never the handler's failure.
   * @param leaseUntil the lease's end as the lease keeper knows it (monotonic ms): bounds the batch wait
   * @param holdsLease whether the lease is still held (default: for `leaseMs` from now, nobody renewing)
   * @returns the store's outcome; `{ writeError }` when a completion write threw or the store refused
   *          the result (nothing committed);
   *          null when the store could not be reached (the lease will expire and the task be reclaimed)
   */
  async complete(
    task: ClaimedTask,
    result: Json,
    writes: readonly CompletionWrite<Tx>[],
    startedAt: number,
    leaseUntil?: number,
    holdsLease?: HoldsLease,
  ): Promise<CompleteOutcome | WriteFailed | null> {
    const deps = this.depsFor(holdsLease);
    const failure: { writeFailed: WriteFailed | null } = { writeFailed: null };
    const work =
      writes.length === 0
        ? undefined
        : async (tx: Tx): Promise<void> => {
            failure.writeFailed = null;
            for (const write of writes) {
              try {
                await write(tx);
              } catch (error) {
                failure.writeFailed = { writeError: error };
                throw error;
              }
            }
          };
    // DONE not kept (option keepDone / keepDoneByKind): the flag goes only when false, so a store
    // that predates it gets the same call as before.
    const keep = keepsDone(this.options, task.kind);
    // Alone: one `store.complete`, its writes in its own transaction, retried while no verdict.
    const alone = (): Promise<CompleteOutcome> => {
      failure.writeFailed = null;
      return callStore(
        deps,
        'complete',
        task,
        () => this.store.complete({ id: task.id, attempt: task.attempt, owner: this.options.id, result, work, ...(keep ? {} : { keep }) }),
        (error) => failure.writeFailed === null || PostponeError.isInstance(error),
      );
    };
    let outcome: CompleteOutcome;
    try {
      outcome =
        this.batcher === null
          ? await alone()
          : await this.batcher.complete(task, result, leaseUntil, deps.holdsLease, keep, work === undefined ? undefined : { work, alone });
    } catch (error) {
      // A write that failed because the store failed (connection lost, refused, driver error — the
      // store rethrows those as PostponeError) is not the handler's failure: the lease decides. A
      // refusal of the write's own call (core's `isRefusal`: a `store.schedule(…, { tx })` with bad
      // input, a key already held) is the handler's, like any error of its own.
      if (failure.writeFailed && (!PostponeError.isInstance(error) || isRefusal(error))) return failure.writeFailed;
      // The store refused the complete itself (its result larger than the store's `maxPayloadBytes`,
      // which may be below the worker's own check; text the database's encoding cannot hold): a
      // verdict on the handler's output, which no retry changes. The attempt fails with that error,
      // as it does when the worker's check refuses the result, instead of waiting out its lease.
      if (failure.writeFailed === null && isRefusal(error)) return { writeError: error };
      this.logger.error({ err: error, taskId: task.id, attempt: task.attempt }, 'complete failed; the lease will expire and the task be reclaimed');
      return null;
    }
    const durationMs = Math.round(this.options.pacing.now() - startedAt);
    this.events.emit('completed', { task, outcome, result, durationMs });
    if (outcome === 'REJECTED_STALE') this.stale(task, 'complete');
    // NOT_FOUND (keep false only): the task was finished without history — by this attempt, whose
    // reply was lost and the complete tried again, or by another attempt. Finished either way: never
    // failed, never retried.
    else this.logger.debug({ taskId: task.id, attempt: task.attempt, outcome, durationMs }, outcome === 'NOT_FOUND' ? 'completed (already finished, not kept)' : 'completed');
    return outcome;
  }

  /**
   * Fenced fail under the task's resolved retry policy (`resolveRetry`: the task's own > its kind's >
   * the worker's default): due again after core `retryDelayMs(baseMs, failures + 1, capMs, jitter,
   * random)` — the delay follows the failure count, not the claim count, so hand-backs and snoozes do
   * not lengthen it — or DEAD when this failure brings the count to the policy's `maxAttempts` or
   * `retryable` is false (a `NonRetryableError`), or CANCELLED when cancel was requested.
   * @param holdsLease whether the lease is still held, asked before retrying a write with no verdict
   * @returns the store's answer, or null when the store could not be reached
   */
  async fail(task: ClaimedTask, error: string, retryable = true, holdsLease?: HoldsLease): Promise<FailResult | null> {
    const policy = resolveRetry(task, this.options);
    const delayMs = retryable ? retryDelayFor(task, policy, this.options.random) : 0;
    const params = {
      id: task.id,
      attempt: task.attempt,
      error,
      backoffMs: delayMs,
      ...(retryable ? {} : { retryable }),
      ...(policy.maxAttemptsOverride === undefined ? {} : { maxAttempts: policy.maxAttemptsOverride }),
    };
    let result: FailResult;
    try {
      result = await callStore(this.depsFor(holdsLease), 'fail', task, () => this.store.fail(params));
    } catch (err) {
      this.logger.error({ err, taskId: task.id, attempt: task.attempt }, 'fail could not be recorded; the lease will expire and the task be reclaimed');
      return null;
    }
    this.events.emit('failed', { task, error, result, retryable, delayMs });
    const line = { taskId: task.id, kind: task.kind, attempt: task.attempt, next: result.outcome, error };
    if (result.outcome === 'REJECTED_STALE') this.stale(task, 'fail');
    else if (result.outcome === 'DEAD') this.logger.warn({ ...line, failures: task.failures + 1 }, retryable ? 'task is DEAD: the attempt failed and no attempts are left' : 'task is DEAD: the handler said not to retry');
    else if (result.outcome === 'CANCELLED') this.logger.info(line, 'attempt failed; the task is CANCELLED (cancel was requested)');
    else this.logger.warn({ ...line, retryInMs: delayMs }, 'attempt failed; retry scheduled');
    return result;
  }

  /**
   * Fenced snooze (the handler threw `Snooze`): SCHEDULED at `dueAt` or after `delayMs` without
   * counting a failure, or CANCELLED when cancel was requested.
   * @returns the store's answer; `{ writeError }` when the store refused the snooze (core's
   *          `isRefusal`: a due time past its limit of 100 years, say), which the attempt must then
   *          fail with; null when the store could not be reached (the lease decides)
   */
  async snooze(task: ClaimedTask, until: SnoozeUntil, holdsLease?: HoldsLease): Promise<SnoozeResult | WriteFailed | null> {
    const when = until.dueAt !== undefined ? { dueAt: until.dueAt } : { delayMs: until.delayMs as number };
    let result: SnoozeResult;
    try {
      result = await callStore(this.depsFor(holdsLease), 'snooze', task, () => this.store.snooze({ id: task.id, attempt: task.attempt, ...when }));
    } catch (err) {
      if (isRefusal(err)) return { writeError: err };
      this.logger.error({ err, taskId: task.id, attempt: task.attempt }, 'snooze could not be recorded; the lease will expire and the task be reclaimed');
      return null;
    }
    this.events.emit('snoozed', { task, result });
    if (result.outcome === 'REJECTED_STALE') this.stale(task, 'snooze');
    else this.logger.info({ taskId: task.id, attempt: task.attempt, next: result.outcome, ...when }, 'snoozed');
    return result;
  }

  /**
   * Hands the attempt back (shutdown): due again now, or CANCELLED when cancel was requested.
   * @param holdsLease whether the lease is still held (default: for `leaseMs` from now, nobody renewing)
   */
  async release(task: ClaimedTask, holdsLease?: HoldsLease): Promise<ReleaseOutcome | null> {
    let outcome: ReleaseOutcome;
    try {
      outcome = await callStore(this.depsFor(holdsLease), 'release', task, () => this.store.release({ id: task.id, attempt: task.attempt }));
    } catch (err) {
      this.logger.error({ err, taskId: task.id, attempt: task.attempt }, 'release failed; the lease will expire and the task be reclaimed');
      return null;
    }
    this.events.emit('released', { task, outcome });
    if (outcome === 'REJECTED_STALE') this.stale(task, 'release');
    else this.logger.info({ taskId: task.id, attempt: task.attempt, outcome }, 'handed back');
    return outcome;
  }

  private stale(task: ClaimedTask, operation: 'complete' | 'fail' | 'release' | 'snooze'): void {
    this.events.emit('rejectedStale', { task, operation });
    this.logger.warn({ taskId: task.id, attempt: task.attempt, operation }, 'store rejected a stale attempt');
  }

  /**
   * The retry deps of one write. Without the keeper's word, the lease is taken as held for `leaseMs`
   * from now: no renewal is known after that, so by then it may be another worker's.
   */
  private depsFor(holdsLease?: HoldsLease): StoreCallDeps & { readonly holdsLease: HoldsLease } {
    const { pacing, leaseMs } = this.options;
    if (holdsLease !== undefined) return { pacing, events: this.events, holdsLease };
    const until = pacing.now() + leaseMs;
    return { pacing, events: this.events, holdsLease: () => pacing.now() < until };
  }
}
