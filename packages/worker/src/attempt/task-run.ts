/**
 * One attempt of one task: runs its handler under a renewed lease, then reports the end to the store.
 *
 * Phases: `running` (handler executing, lease renewed) → `finishing` (complete or fail in flight) →
 * `finished`; or `running` → `handedBack` at shutdown. A handler whose signal aborted (lease lost,
 * cancel requested, timeout) gets `abandonGraceMs` to settle; after that the run stops waiting for it
 * (a promise cannot be killed), records the failure and frees its slot. Whatever happened, the end is
 * still reported with a fenced complete or fail, so the store — not the worker — rejects a stale one.
 */
import {
  type ClaimedTask,
  DEFAULT_MAX_PAYLOAD_BYTES,
  describeThrown,
  idempotencyKey,
  type Json,
  type Store,
  UnknownKindError,
  ValidationError,
  validateJson,
} from '@postpone/core';
import type { Logger } from 'pino';
import type { AttemptTelemetry, WorkerTelemetry } from '../telemetry/telemetry.js';
import { raceTimer, type Settled, settle, startTimer, TIMED_OUT } from '@postpone/wheel';
import type { AttemptReporter } from './attempt-reporter.js';
import { type AbortReason, retryIntent, type SnoozeUntil, TaskAbortedError } from './errors.js';
import { resolveRetry } from './retry-policy.js';
import type { AttemptEmitter } from './events.js';
import type { CompletionWrite, Handler, HandlerContext } from './handler.js';
import { LeaseKeeper, type LeaseEstimate, type LeaseLossReason } from './lease-keeper.js';
import type { LeaseRenewer } from './lease-renewer.js';
import type { AttemptSettings } from './settings.js';
import { ProgressWriter } from './progress-writer.js';

export type RunPhase = 'running' | 'finishing' | 'handedBack' | 'finished';

export interface RunDeps<Tx> {
  readonly store: Store<Tx>;
  readonly options: AttemptSettings;
  readonly events: AttemptEmitter;
  readonly reporter: AttemptReporter<Tx>;
  readonly logger: Logger;
  readonly telemetry: WorkerTelemetry;
  /** Batches this worker's lease renewals into one `extendMany` (default: one `extend` each). */
  readonly renewer?: LeaseRenewer;
  /**
   * Called once when the attempt stops occupying a slot: its handler settled (or was abandoned, or
   * handed back), so only its report to the store is left. The worker runs the next task then,
   * without waiting for the (batched) report to be acknowledged.
   */
  readonly onSlotFree?: () => void;
}

const ABORTED = Symbol('aborted');
/** The reason the grace wait's signal aborts with: a given reason spares the DOMException (with its stack) that `abort()` builds. */
const HALTED = Symbol('halted');

export class TaskRun<Tx> {
  private currentPhase: RunPhase = 'running';
  /*
   * Per attempt, nothing below is made unless it is needed (issue 24: the worker's per-attempt
   * machinery cost more CPU per task than graphile-worker's whole worker): the handler's
   * AbortController only when the handler reads `ctx.signal`, the grace wait's only when the handler
   * is aborted, and one plain timer each for the lease renewal and the handler timeout.
   */
  /** The handler's signal, made when the handler first reads `ctx.signal` (aborted then if {@link abortedWith} is set). */
  private handlerAbort: AbortController | null = null;
  /** Why the handler was aborted (the signal's reason), once it was; null while not. */
  private abortedWith: TaskAbortedError | null = null;
  /** Wakes `execute`'s wait for the handler when it is aborted. */
  private wakeOnAbort: (() => void) | null = null;
  /** The run left `running`: the timeout and the grace wait stop. */
  private halted = false;
  /** Stops the grace wait after an abort (made only then). */
  private graceStop: AbortController | null = null;
  /** Clears the handler timeout's timer. */
  private cancelTimeout: (() => void) | null = null;
  /**
   * Renews the lease until the attempt's end was reported (or handed back). The lease is renewed while
   * a complete or fail is still being tried, so a write the database gave no verdict on (a timeout, a
   * deadlock, a lost connection) is tried again under a held lease.
   */
  private keeper: LeaseKeeper | null = null;
  /** The lease keeper said the lease is gone: writes are not tried again. */
  private leaseGone = false;
  private readonly writes: CompletionWrite<Tx>[] = [];
  private readonly startedAt: number;
  /** The attempt's child logger, made on first use (most attempts never log). */
  private childLogger: Logger | null = null;
  /** The lease's end as the keeper knows it (monotonic ms). */
  private readonly lease: LeaseEstimate = { confirmedUntil: 0 };
  /** The attempt's span and handler timing. */
  private readonly telemetry: AttemptTelemetry;
  private slotFreed = false;
  /** `ctx.progress`, made on first use (most handlers never report progress). */
  private progressWriter: ProgressWriter | null = null;
  /** Resolves when the attempt's end was reported and acknowledged, or handed back (never rejects). */
  readonly finished: Promise<void>;

  constructor(
    readonly task: ClaimedTask,
    claimSentAt: number,
    private readonly handler: Handler<Json, Tx> | undefined,
    private readonly deps: RunDeps<Tx>,
  ) {
    this.startedAt = deps.options.pacing.now();
    this.telemetry = deps.telemetry.attempt(task);
    this.finished = this.execute(claimSentAt)
      .catch((error: unknown) => this.logger.error({ error: describeThrown(error) }, 'task run failed unexpectedly'))
      .finally(() => {
        this.freeSlot();
        // A hand-back ends the span itself, once the release answered (its outcome is RELEASED).
        if (this.currentPhase !== 'handedBack') {
          this.currentPhase = 'finished';
          this.keeper?.stop();
          this.telemetry.end();
        }
      });
  }

  private get logger(): Logger {
    this.childLogger ??= this.deps.logger.child({ taskId: this.task.id, kind: this.task.kind, attempt: this.task.attempt });
    return this.childLogger;
  }

  private freeSlot(): void {
    if (this.slotFreed) return;
    this.slotFreed = true;
    this.deps.onSlotFree?.();
  }

  get phase(): RunPhase {
    return this.currentPhase;
  }

  /**
   * Shutdown: aborts the handler (reason `shutdown`) and releases the attempt. A no-op unless running.
   * @returns false when the release did not reach the store (the lease then runs out), else true
   */
  async handBack(): Promise<boolean> {
    if (this.currentPhase !== 'running') return true;
    this.currentPhase = 'handedBack';
    this.freeSlot();
    this.haltNow();
    this.abortHandler(new TaskAbortedError('shutdown'));
    try {
      await this.progressWriter?.flush();
      const outcome = await this.deps.reporter.release(this.task, this.holdsLease).finally(() => this.keeper?.stop());
      this.telemetry.finished(outcome === null ? 'UNKNOWN' : outcome === 'SCHEDULED' ? 'RELEASED' : outcome);
      return outcome !== null;
    } finally {
      this.telemetry.end();
    }
  }

  private async execute(claimSentAt: number): Promise<void> {
    const { handler, task } = this;
    this.watchLease(claimSentAt);
    if (handler === undefined) {
      this.currentPhase = 'finishing';
      this.freeSlot();
      await this.fail(describeThrown(new UnknownKindError(task.kind)));
      return;
    }
    this.watchTimeout();
    const handlerStartedAt = this.deps.options.pacing.now();
    const settled = settle(() => this.telemetry.run(() => handler(task, this.context())));
    // The handler settles, or its signal aborts first (lease lost, cancel requested, timeout, shutdown).
    let outcome: Settled<unknown> | typeof ABORTED | typeof TIMED_OUT = await new Promise<Settled<unknown> | typeof ABORTED>((resolve) => {
      void settled.then(resolve);
      if (this.abortedWith !== null) queueMicrotask(() => resolve(ABORTED));
      else this.wakeOnAbort = () => resolve(ABORTED);
    });
    this.wakeOnAbort = null;
    if (outcome === ABORTED) {
      if (this.currentPhase !== 'running') return; // handed back at shutdown
      this.graceStop = new AbortController();
      outcome = await raceTimer(this.deps.options.pacing, settled, this.deps.options.abandonGraceMs, this.graceStop.signal);
      if (this.currentPhase !== 'running') return; // handed back while waiting
    }
    this.currentPhase = 'finishing';
    this.freeSlot();
    this.haltNow();
    const reason = this.abortReason();
    this.telemetry.handlerSettled(this.deps.options.pacing.now() - handlerStartedAt, outcome !== TIMED_OUT && reason !== 'timeout' && outcome.ok);
    // The last progress value is written before the end is reported (docs/contract.md#progress).
    await this.progressWriter?.flush();
    if (reason === 'cancel-requested' && (outcome === TIMED_OUT || (!outcome.ok && retryIntent(outcome.error).type !== 'snooze'))) {
      // Cancelled while running: the handler's throw (usually its aborted signal's reason) is not a
      // failure of the task. A fenced release ends it CANCELLED with no failure counted and nothing
      // written to last_error (a fail would count one); a snooze or a completion goes through below
      // and ends CANCELLED the same way.
      if (outcome === TIMED_OUT) this.deps.events.emit('abandoned', { task, reason });
      await this.endCancelled();
      return;
    }
    if (outcome === TIMED_OUT) {
      this.deps.events.emit('abandoned', { task, reason: reason ?? 'lease-lost' });
      const grace = this.deps.options.abandonGraceMs;
      await this.fail(`handler did not settle within ${grace} ms after its signal aborted (${reason}); abandoned`);
      return;
    }
    if (reason === 'timeout') {
      await this.fail(describeThrown(this.abortedWith));
      return;
    }
    if (!outcome.ok) {
      const intent = retryIntent(outcome.error);
      if (intent.type === 'snooze') await this.snooze(intent.until);
      else await this.fail(describeThrown(outcome.error), intent.retryable);
      return;
    }
    await this.completeWith(outcome.value);
  }

  /** Records the failed attempt (fenced `fail`) and what the store answered. */
  private async fail(error: string, retryable = true): Promise<void> {
    const result = await this.deps.reporter.fail(this.task, error, retryable, this.holdsLease);
    this.telemetry.finished(result === null ? 'UNKNOWN' : result.outcome, error);
  }

  /** Cancel was requested while the handler ran and it threw (or was abandoned): fenced release, CANCELLED, no failure counted. */
  private async endCancelled(): Promise<void> {
    const outcome = await this.deps.reporter.release(this.task);
    this.telemetry.finished(outcome === null ? 'UNKNOWN' : outcome === 'SCHEDULED' ? 'RELEASED' : outcome);
  }

  /** The handler threw `Snooze`: fenced snooze (no failure counted) and what the store answered. */
  private async snooze(until: SnoozeUntil): Promise<void> {
    const result = await this.deps.reporter.snooze(this.task, until, this.holdsLease);
    if (result !== null && 'writeError' in result) await this.fail(describeThrown(result.writeError));
    else this.telemetry.finished(result === null ? 'UNKNOWN' : result.outcome === 'SCHEDULED' ? 'SNOOZED' : result.outcome);
  }

  private async completeWith(value: unknown): Promise<void> {
    let result: Json;
    try {
      result = value === undefined || value === null ? null : validateJson(value, 'result', DEFAULT_MAX_PAYLOAD_BYTES, 'INVALID_RESULT').value;
    } catch (error) {
      await this.fail(describeThrown(error));
      return;
    }
    const outcome = await this.deps.reporter.complete(this.task, result, [...this.writes], this.startedAt, this.lease.confirmedUntil, this.holdsLease);
    if (outcome !== null && typeof outcome === 'object') await this.fail(describeThrown(outcome.writeError));
    else this.telemetry.finished(outcome ?? 'UNKNOWN');
  }

  private abortReason(): AbortReason | null {
    return this.abortedWith?.reason ?? null;
  }

  /** Aborts the handler with `reason` (once: a later reason is ignored) and wakes the wait for it. */
  private abortHandler(reason: TaskAbortedError): void {
    if (this.abortedWith !== null) return;
    this.abortedWith = reason;
    this.handlerAbort?.abort(reason);
    this.wakeOnAbort?.();
  }

  /** The handler's signal (made on first read; already aborted if the handler was). */
  private get signal(): AbortSignal {
    if (this.handlerAbort === null) {
      this.handlerAbort = new AbortController();
      if (this.abortedWith !== null) this.handlerAbort.abort(this.abortedWith);
    }
    return this.handlerAbort.signal;
  }

  /** The run left `running`: stops the handler timeout and the grace wait. */
  private haltNow(): void {
    this.halted = true;
    this.cancelTimeout?.();
    this.cancelTimeout = null;
    this.graceStop?.abort(HALTED);
  }

  /** The store announced a cancel request for this task: abort the handler now (no-op unless running). */
  cancelRequested(): void {
    this.lose('cancel-requested');
  }

  private lose(reason: LeaseLossReason): void {
    if (this.currentPhase !== 'running' || this.abortReason() === reason) return;
    // A cancel is what the user asked for, not a fault: info, and not called a lost lease.
    if (reason === 'cancel-requested') this.logger.info({ reason }, 'cancel requested; aborting the handler');
    else this.logger.warn({ reason }, 'lease lost; aborting the handler');
    this.abortHandler(new TaskAbortedError(reason));
    this.deps.events.emit('leaseLost', { task: this.task, reason });
  }

  /** The lease is held: the keeper has not said it is gone and its estimate has not run out. */
  private readonly holdsLease = (): boolean => !this.leaseGone && this.deps.options.pacing.now() < this.lease.confirmedUntil;

  /** Renews the lease from the claim until the attempt's end is reported (the keeper is stopped then). */
  private watchLease(claimSentAt: number): void {
    const { store, options, events, renewer } = this.deps;
    const deps = { store: store as Store<unknown>, pacing: options.pacing, events, leaseMs: options.leaseMs, renewEveryMs: options.renewEveryMs, renewer };
    this.keeper = new LeaseKeeper(this.task, claimSentAt, deps, this.lease, (reason) => {
      this.leaseGone = true;
      this.lose(reason);
    });
  }

  private watchTimeout(): void {
    const ms = this.deps.options.handlerTimeoutMs;
    if (ms === null) return;
    this.cancelTimeout = startTimer(this.deps.options.pacing, ms, () => {
      this.cancelTimeout = null;
      if (this.halted || this.abortedWith !== null) return;
      this.logger.warn({ handlerTimeoutMs: ms }, 'handler timed out; aborting it');
      this.abortHandler(new TaskAbortedError('timeout', `${ms} ms`));
    });
  }

  private context(): HandlerContext<Tx> {
    const { task, deps } = this;
    const run = this;
    return {
      get signal() {
        return run.signal;
      },
      attempt: task.attempt,
      failures: task.failures,
      maxAttempts: resolveRetry(task, deps.options).maxAttempts,
      idempotencyKey: idempotencyKey(task.id),
      workerId: deps.options.id,
      get logger() {
        return run.logger;
      },
      onCompleteTx: (write) => {
        if (typeof write !== 'function') throw new ValidationError('INVALID_OPTION', 'onCompleteTx', 'expects a function (tx) => Promise');
        if (this.currentPhase !== 'running') {
          this.logger.warn('onCompleteTx called after the handler settled; the write is ignored');
          return;
        }
        this.writes.push(write);
      },
      progress: (value) => {
        this.progressWriter ??= new ProgressWriter({
          store: deps.store as Store<unknown>,
          task,
          intervalMs: deps.options.progressIntervalMs ?? 1_000,
          pacing: deps.options.pacing,
          logger: () => this.logger,
          onRefused: () => deps.events.emit('progressRefused', { task }),
        });
        this.progressWriter.report(value);
      },
    };
  }
}
