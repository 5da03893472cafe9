/**
 * The worker: claims due tasks up to its free concurrency, runs their handlers by kind, reclaims
 * expired leases, and shuts down gracefully.
 *
 * Two ways to drive it: `runOnce()` (one claim, handlers started, no waiting — tests step it) and
 * `start()` (the paced loop: reclaim every `reclaimEveryMs`; claim when discovery says a task may be
 * due — polling: every `pollIntervalMs`; hybrid: when a timer of its wheel fires; claim again at once
 * after a full batch, and when a slot frees while full). Pacing is injectable.
 */
import { constants as osConstants } from 'node:os';
import {
  type ClaimedTask,
  type Json,
  PostponeError,
  type RateLimited,
  type ReclaimedTask,
  type Store,
  ValidationError,
  validateNonNegativeMs,
} from '@postpone/core';
import type { Logger } from 'pino';
import type { AttemptEmitter } from './attempt/events.js';
import { AttemptReporter } from './attempt/attempt-reporter.js';
import type { Handler, PayloadMap } from './attempt/handler.js';
import { LeaseRenewer } from './attempt/lease-renewer.js';
import { TaskRun } from './attempt/task-run.js';
import { createDiscovery } from './discovery/create.js';
import type { Discovery, DiscoveryStats } from './discovery/discovery.js';
import { WorkerTelemetry } from './telemetry/telemetry.js';
import { MAX_TIMER_MS, settle, whenAborted } from '@postpone/wheel';
import { WorkerStoppedError } from './errors.js';
import { type StoreOperation, TypedEmitter, type WorkerEventName, type WorkerEvents, type WorkerEventSource, type WorkerListener } from './events.js';
import { LocalQueue } from './local-queue.js';
import { workerLogger } from './logger.js';
import { type ResolvedOptions, resolveOptions, type WorkerOptions } from './options.js';
import { Pruner } from './pruner.js';
import { StoreHealth } from './store-health.js';
import { UnclaimedWatch } from './unclaimed-watch.js';

/** The reason the loop's `wake` aborts with (a given reason spares building a DOMException each time). */
const WOKEN = Symbol('woken');

export type WorkerState = 'idle' | 'running' | 'stopping' | 'stopped';

export interface StopOptions {
  /** How long to let running handlers finish before handing their tasks back (default `shutdownTimeoutMs`; 0 hands back at once). */
  readonly timeoutMs?: number;
}

export interface StopResult {
  /** Attempts handed back with `store.release` (running at the deadline, or claimed while stopping), counting those whose release failed. */
  readonly handedBack: number;
  /**
   * Of {@link handedBack}, the attempts whose release did not reach the store (the store was closed,
   * its pool ended, the database down): they stay CLAIMED until their lease ends and are then
   * reclaimed by any worker, as after a crash.
   */
  readonly handBackFailed: number;
}

/** Default of {@link SignalHandlerOptions.sameSignalWindowMs}. */
export const SAME_SIGNAL_WINDOW_MS = 1_000;

export interface SignalHandlerOptions {
  /** Signals to handle (default SIGTERM and SIGINT). */
  readonly signals?: readonly NodeJS.Signals[];
  /**
   * Passed to `stop` on the first signal (default `shutdownTimeoutMs`). A second signal, at least
   * `sameSignalWindowMs` after the first, hands running tasks back at once.
   */
  readonly timeoutMs?: number;
  /**
   * A signal that arrives less than this many ms after the first one is taken as the same signal and
   * ignored (default 1 000; 0..2³¹−1, 0 counts every signal). One Ctrl-C under `tsx` or `nodemon`
   * reaches the worker twice, a few ms apart: the terminal sends SIGINT to the whole process group,
   * and the wrapper forwards its own copy to its child.
   */
  readonly sameSignalWindowMs?: number;
  /** Called once stopped, e.g. to close the store and exit. */
  readonly onStopped?: (result: StopResult, signal: NodeJS.Signals) => void | Promise<void>;
}

export class Worker<Tx = unknown> implements WorkerEventSource {
  readonly id: string;
  readonly options: ResolvedOptions;
  readonly logger: Logger;
  private readonly store: Store<Tx>;
  private readonly handlers: Readonly<Record<string, Handler<Json, Tx>>>;
  private readonly events: TypedEmitter;
  private readonly attemptEvents: AttemptEmitter;
  private readonly reporter: AttemptReporter<Tx>;
  private readonly discoverer: Discovery;
  /** What this worker claims and its wheel holds: its queue, and its handlers' kinds unless `claimKinds: 'any'` (docs/contract.md#queues). */
  private readonly selection: { readonly queue: string; readonly kinds?: readonly string[] };
  private readonly health: StoreHealth;
  private readonly telemetry: WorkerTelemetry;
  /** Null without the `prune` option. */
  private readonly pruner: Pruner | null;
  /** Null with `unclaimedAfterMs: null`. */
  private readonly unclaimed: UnclaimedWatch | null;
  /** Wait before the loop's next store call, set when one failed (ms). */
  private retryInMs = 0;
  /** Removes the listener of lost idle connections (stores that report them, e.g. `pg`). */
  private offConnectionError: () => void = () => {};
  private readonly runs = new Set<TaskRun<Tx>>();
  /** Runs whose handler occupies a slot (the others only wait for their report to be acknowledged). */
  private busy = 0;
  /** One `extendMany` for the renewals due together (running tasks' keepers and the local queue). */
  private readonly renewer: LeaseRenewer;
  /** Tasks claimed ahead of free slots (`prefetch`), their leases renewed while they wait. */
  private readonly queue: LocalQueue;
  /** Releases of queued tasks (dropped or handed back at shutdown) not answered yet. */
  private readonly handBacks = new Set<Promise<unknown>>();
  private readonly claims = new Set<Promise<unknown>>();
  private reserved = 0;
  private currentState: WorkerState = 'idle';
  private loopDone: Promise<void> | null = null;
  private wake = new AbortController();
  private sleepingFull = false;
  /** True while the loop waits out a store failure's backoff (`retryInMs`). */
  private retrySleeping = false;
  /**
   * Until when (pacing clock) rate limits hold back everything this worker may claim, as the last
   * claim's `onRateLimited` said (docs/contract.md#rate-limits): the loop sleeps until then instead of polling.
   */
  private rateLimitedUntil = Number.NEGATIVE_INFINITY;
  private readonly onRateLimited = ({ reopensInMs }: RateLimited): void => {
    this.rateLimitedUntil = this.options.pacing.now() + reopensInMs;
    this.logger.debug({ reopensInMs }, 'rate limits hold back every task this worker may claim');
  };
  private stopping: Promise<StopResult> | null = null;
  private handedBackUnstarted = 0;
  /** Hand-backs at stop whose release did not reach the store ({@link StopResult.handBackFailed}). */
  private handBacksFailed = 0;
  /** Aborted at the shutdown deadline: running handlers are handed back. */
  private readonly deadline = new AbortController();
  /** Aborted when stopped: cancels the shutdown timers. */
  private readonly stopTimers = new AbortController();

  constructor(options: WorkerOptions<Tx, PayloadMap>) {
    this.options = resolveOptions(options);
    this.id = this.options.id;
    this.store = options.store;
    this.handlers = { ...(options.handlers as Record<string, Handler<Json, Tx>>) };
    this.logger = workerLogger(this.id, options.logger, this.options.logLevel);
    this.events = new TypedEmitter((error, event) => this.logger.error({ err: error, event }, 'event listener threw'));
    // Every attempt event is a worker event (the attempt's `error` names fewer operations).
    this.attemptEvents = { emit: (event, payload) => this.events.emit(event, payload as WorkerEvents[typeof event]) };
    this.reporter = new AttemptReporter(this.store, this.options, this.attemptEvents, this.logger);
    this.health = new StoreHealth(this.options.pacing, this.events, this.logger);
    const { pacing, leaseMs, renewEveryMs } = this.options;
    this.renewer = new LeaseRenewer(this.store as Store<unknown>, leaseMs);
    this.queue = new LocalQueue({
      renewer: this.renewer,
      pacing,
      leaseMs,
      renewEveryMs,
      onDropped: (task, reason) => {
        if (reason === 'lease-lost') this.logger.warn({ taskId: task.id, attempt: task.attempt }, 'a queued task lost its lease before a slot freed; handing it back');
        this.trackHandBack(this.reporter.release(task));
      },
      onError: (error) => this.events.emit('error', { error, operation: 'extend' }),
    });
    const store = this.store as Store<unknown>;
    this.telemetry = new WorkerTelemetry(this.events, {
      workerId: this.id,
      store,
      pacing: this.options.pacing,
      logger: this.logger,
      ...(this.options.unclaimedAfterMs === null ? {} : { unclaimed: () => this.unclaimed?.latest ?? [] }),
    });
    const prune = this.options.prune;
    this.pruner = prune === null ? null : new Pruner({ store, options: prune, pacing: this.options.pacing, events: this.events, logger: this.logger });
    this.selection = {
      queue: this.options.queue,
      ...(this.options.claimKinds === 'handlers' ? { kinds: Object.keys(this.handlers) } : {}),
    };
    const { unclaimedAfterMs } = this.options;
    this.unclaimed =
      unclaimedAfterMs === null
        ? null
        : new UnclaimedWatch({
            store,
            afterMs: unclaimedAfterMs,
            queue: this.selection.queue,
            kinds: this.options.claimKinds === 'handlers' ? Object.keys(this.handlers) : null,
            pacing: this.options.pacing,
            events: this.events,
            logger: this.logger,
          });
    this.discoverer = createDiscovery(this.options, {
      store: this.store as Store<unknown>,
      workerId: this.id,
      selection: this.selection,
      pacing: this.options.pacing,
      logger: this.logger,
      report: (error, operation) => this.reportStoreError(error, operation),
      succeeded: () => this.discoverySucceeded(),
      onCancelRequested: (id) => {
        for (const run of this.runs) if (run.task.id === id) run.cancelRequested();
        this.queue.remove(id);
      },
      onRebuilt: (rebuilt) => this.events.emit('wheelRebuilt', rebuilt),
    });
  }

  get state(): WorkerState {
    return this.currentState;
  }

  /** Attempts whose handler is running or whose end is being reported (abandoned handlers are not counted). */
  get inFlight(): number {
    return this.runs.size;
  }

  /** What discovery did so far: mode, timers in the wheel, fired, rebuilds by reason, notices. */
  get discovery(): DiscoveryStats {
    return this.discoverer.stats();
  }

  /** Tasks claimed ahead of free slots and waiting in the local queue (`prefetch`). */
  get queued(): number {
    return this.queue.size;
  }

  /**
   * Tasks a claim may take now: free slots plus the room left in the local queue (`prefetch`). A
   * slot frees when its handler settled; the attempts whose report is still unacknowledged count
   * too, so the worker never holds more than twice `concurrency + prefetch` tasks at once.
   */
  get freeSlots(): number {
    const capacity = this.options.concurrency + this.options.prefetch;
    const held = this.queue.size + this.reserved;
    return Math.max(0, Math.min(capacity - this.busy - held, 2 * capacity - this.runs.size - held));
  }

  on<E extends WorkerEventName>(event: E, listener: WorkerListener<E>): () => void {
    return this.events.on(event, listener);
  }

  off<E extends WorkerEventName>(event: E, listener: WorkerListener<E>): void {
    this.events.off(event, listener);
  }

  /**
   * Claims up to the free slots and starts a handler for each task (not awaited: see `idle()`).
   * Returns [] when no slot is free or the worker is stopping. Tasks that arrive after `stop()` began
   * are handed back at once.
   * @returns the tasks claimed
   * @throws the store's error (StoreClosedError, ConnectionLostError, StoreError); the loop catches and emits it
   */
  async runOnce(): Promise<ClaimedTask[]> {
    if (this.isStopping()) return [];
    const limit = this.freeSlots;
    if (limit === 0) return [];
    this.reserved += limit;
    const sentAt = this.options.pacing.now();
    const claim = (async () => {
      try {
        const caps = this.options.kindConcurrency;
        return await this.store.claim({
          owner: this.id,
          limit,
          leaseMs: this.options.leaseMs,
          ...this.selection,
          ...(caps === null ? {} : { kindLimits: caps }),
          onRateLimited: this.onRateLimited,
        });
      } finally {
        this.reserved -= limit;
      }
    })();
    const tracked = settle(() => claim);
    this.claims.add(tracked);
    let tasks: ClaimedTask[];
    try {
      tasks = await claim;
    } finally {
      this.claims.delete(tracked);
    }
    const debug = this.logger.isLevelEnabled('debug');
    for (const task of tasks) {
      this.events.emit('claimed', { task });
      if (debug) this.logger.debug({ taskId: task.id, kind: task.kind, attempt: task.attempt, latenessMs: task.claimedAt.getTime() - task.dueAt.getTime() }, 'claimed');
    }
    if (this.isStopping()) {
      this.handedBackUnstarted += tasks.length;
      await Promise.all(tasks.map((task) => this.handBackUnstarted(task)));
      return tasks;
    }
    let started = 0;
    while (started < tasks.length && this.busy < this.options.concurrency) this.startRun(tasks[started++] as ClaimedTask, sentAt);
    if (started < tasks.length) this.queue.push(tasks.slice(started), sentAt);
    return tasks;
  }

  /**
   * Moves tasks whose lease expired out of CLAIMED (one conditional UPDATE in the store; safe when
   * several workers do it at once). Emits `reclaimed` per task.
   */
  async reclaim(): Promise<ReclaimedTask[]> {
    const tasks = await this.store.reclaimExpired();
    for (const task of tasks) {
      this.events.emit('reclaimed', { task });
      const line = { taskId: task.id, attempt: task.attempt, next: task.outcome };
      if (task.outcome === 'DEAD') this.logger.warn(line, 'task is DEAD: its lease expired and it has no attempts left');
      else this.logger.info(line, 'reclaimed an expired lease');
    }
    return tasks;
  }

  /** Resolves once nothing is in flight (no running handler, no claim awaiting its answer). */
  async idle(): Promise<void> {
    for (;;) {
      const pending: Promise<unknown>[] = [...this.claims, ...this.handBacks, ...[...this.runs].map((run) => run.finished)];
      if (pending.length === 0) return;
      await Promise.race(pending);
    }
  }

  /** Starts the paced loop (no-op when already running). @throws WorkerStoppedError after stop() */
  start(): this {
    if (this.currentState === 'running') return this;
    if (this.currentState !== 'idle') throw new WorkerStoppedError();
    this.currentState = 'running';
    const { discovery, concurrency, leaseMs, prune } = this.options;
    this.logger.info({ discovery, concurrency, leaseMs, ...(prune === null ? {} : { pruneEveryMs: prune.everyMs }) }, 'worker started');
    if (this.options.handlerTimeoutMs === null) warnNoHandlerTimeout(this.logger);
    this.telemetry.start();
    this.pruner?.start();
    this.unclaimed?.start();
    const source = this.store as { onConnectionError?: (listener: (error: unknown) => void) => () => void };
    if (typeof source.onConnectionError === 'function') this.offConnectionError = source.onConnectionError((error) => this.health.failed(error, 'connection'));
    this.loopDone = this.loop();
    return this;
  }

  /**
   * Graceful shutdown: stops claiming, lets running handlers finish for `timeoutMs`, then hands the
   * rest back with `store.release` (due again at once, so another worker needn't wait for the lease).
   * Calling again returns the same promise; a shorter `timeoutMs` brings the deadline forward.
   * The store is not closed.
   * @throws ValidationError INVALID_OPTION for a bad `timeoutMs`
   */
  stop(options: StopOptions = {}): Promise<StopResult> {
    const timeoutMs = options.timeoutMs === undefined ? this.options.shutdownTimeoutMs : validateNonNegativeMs(options.timeoutMs, 'timeoutMs', MAX_TIMER_MS);
    if (this.currentState !== 'stopped') {
      if (this.currentState !== 'stopping') this.logger.info({ timeoutMs }, 'stopping');
      this.currentState = 'stopping';
      this.wake.abort(WOKEN);
      if (timeoutMs === 0) this.deadline.abort();
      else void this.options.pacing.sleep(timeoutMs, this.stopTimers.signal).then(() => this.stopTimers.signal.aborted || this.deadline.abort());
      // The local queue is handed back at once, whatever the timeout: those handlers never started.
      const queued = this.queue.drain();
      this.handedBackUnstarted += queued.length;
      for (const task of queued) this.trackHandBack(this.handBackUnstarted(task));
    }
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  /**
   * Stops gracefully on SIGTERM / SIGINT; a second signal at least `sameSignalWindowMs` (default
   * 1 000) after the first hands running tasks back at once, one sooner is the same signal delivered
   * twice (`tsx`, `nodemon`) and is ignored. The window is measured on `performance.now()`.
   * @returns a function that removes the handlers
   * @throws ValidationError INVALID_OPTION for a bad `signals`, `sameSignalWindowMs` or `timeoutMs`
   */
  installSignalHandlers(options: SignalHandlerOptions = {}): () => void {
    const signals = validateSignals(options.signals);
    const windowMs = options.sameSignalWindowMs === undefined ? SAME_SIGNAL_WINDOW_MS : validateNonNegativeMs(options.sameSignalWindowMs, 'sameSignalWindowMs', MAX_TIMER_MS);
    if (options.timeoutMs !== undefined) validateNonNegativeMs(options.timeoutMs, 'timeoutMs', MAX_TIMER_MS);
    let received = 0;
    let firstAt = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      const now = performance.now();
      if (received > 0 && now - firstAt < windowMs) {
        this.logger.info({ signal, afterMs: Math.round(now - firstAt), sameSignalWindowMs: windowMs }, 'signal again within sameSignalWindowMs: taken as the same signal');
        return;
      }
      received += 1;
      if (received === 1) firstAt = now;
      if (received > 1) {
        this.logger.warn({ signal }, 'second signal: handing running tasks back now');
        void this.stop({ timeoutMs: 0 });
        return;
      }
      this.logger.info({ signal }, 'signal received: stopping');
      this.stop(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs })
        .then((result) => options.onStopped?.(result, signal))
        .catch((error: unknown) => this.logger.error({ err: error }, 'shutdown failed'));
    };
    for (const signal of signals) process.on(signal, onSignal);
    return () => {
      for (const signal of signals) process.off(signal, onSignal);
    };
  }

  private isStopping(): boolean {
    return this.currentState === 'stopping' || this.currentState === 'stopped';
  }

  private startRun(task: ClaimedTask, claimSentAt: number): void {
    this.busy += 1;
    const handler = Object.hasOwn(this.handlers, task.kind) ? this.handlers[task.kind] : undefined;
    const run = new TaskRun<Tx>(task, claimSentAt, handler, {
      store: this.store,
      options: this.options,
      events: this.attemptEvents,
      reporter: this.reporter,
      logger: this.logger,
      telemetry: this.telemetry,
      renewer: this.renewer,
      onSlotFree: () => {
        this.busy -= 1;
        // Not in this call stack: a run may free its slot while it is being made (no handler).
        queueMicrotask(() => {
          this.startQueued();
          if (this.sleepingFull && this.wantsClaim()) this.wake.abort(WOKEN);
        });
      },
    });
    this.runs.add(run);
    void run.finished.then(() => {
      this.runs.delete(run);
      if (this.sleepingFull && this.wantsClaim()) this.wake.abort(WOKEN);
    });
  }

  /** Fills free slots from the local queue (nothing once stopping: `stop()` hands the queue back). */
  private startQueued(): void {
    while (this.queue.size > 0 && this.busy < this.options.concurrency && !this.isStopping()) {
      const next = this.queue.take();
      if (next === null) return;
      this.startRun(next.task, next.confirmedAt);
    }
  }

  /**
   * Whether a claim is worth sending: a slot would otherwise sit idle, or (with `prefetch`) the room
   * left is at least half of `concurrency + prefetch`, so one claim serves many tasks.
   */
  private wantsClaim(): boolean {
    const room = this.freeSlots;
    if (room === 0) return false;
    const { concurrency, prefetch } = this.options;
    return this.busy + this.queue.size + this.reserved < concurrency || room >= Math.ceil((concurrency + prefetch) / 2);
  }

  /** Releases a claimed task whose handler never started (stopping); counts a release that failed. */
  private async handBackUnstarted(task: ClaimedTask): Promise<void> {
    if ((await this.reporter.release(task)) === null) this.handBacksFailed += 1;
  }

  private trackHandBack(release: Promise<unknown>): void {
    const tracked = settle(() => release);
    this.handBacks.add(tracked);
    void tracked.then(() => this.handBacks.delete(tracked));
  }

  private async loop(): Promise<void> {
    const { pacing, reclaimEveryMs } = this.options;
    let nextReclaimAt = pacing.now();
    await this.discoverer.start();
    // Set after a rate-limited sleep: claim once then, whatever discovery says (its timers fired while held back).
    let reopened = false;
    while (this.currentState === 'running') {
      if (pacing.now() >= nextReclaimAt) {
        await this.guard('reclaim', () => this.reclaim());
        // Kinds nobody claims: at most once per unclaimedAfterMs, beside the loop (never awaited here, never throws).
        this.unclaimed?.poke();
        nextReclaimAt = pacing.now() + reclaimEveryMs;
      }
      if (this.isStopping()) break;
      const heldForMs = this.rateLimitedUntil - pacing.now();
      if (heldForMs > 0) {
        // Rate limits hold back everything this worker may claim: no claim until the window reopens
        // (or the next reclaim); only stop interrupts this wait.
        if (this.wake.signal.aborted) this.wake = new AbortController();
        await pacing.sleep(Math.max(0, Math.min(heldForMs, nextReclaimAt - pacing.now())), this.wake.signal);
        reopened = pacing.now() >= this.rateLimitedUntil;
        continue;
      }
      if (this.wantsClaim() && (reopened || this.discoverer.wantsClaim())) {
        reopened = false;
        const asked = this.freeSlots;
        const token = this.discoverer.claimStarted();
        const claimed = await this.guard('claim', () => this.runOnce());
        this.discoverer.claimFinished(token, asked, claimed);
        if (this.isStopping()) break;
        if (this.rateLimitedUntil > pacing.now()) continue;
        // A full batch means more may be due: claim again at once while slots are free.
        if (claimed !== null && claimed.length === asked && this.wantsClaim()) continue;
      }
      if (this.retryInMs > 0) {
        // The store is failing: back off (only stop or discovery seeing the store answer again
        // interrupts this wait, not a freed slot).
        const ms = this.retryInMs;
        this.retryInMs = 0;
        if (this.wake.signal.aborted) this.wake = new AbortController();
        this.retrySleeping = true;
        try {
          await pacing.sleep(ms, this.wake.signal);
        } finally {
          this.retrySleeping = false;
        }
        continue;
      }
      this.sleepingFull = !this.wantsClaim();
      if (this.wake.signal.aborted) this.wake = new AbortController();
      await this.discoverer.wait(Math.max(0, nextReclaimAt - pacing.now()), this.wake.signal, this.sleepingFull);
      this.sleepingFull = false;
    }
  }

  /**
   * A store call of discovery succeeded (a listener reconnected and re-read what is due, a poll, a
   * LISTEN). During an outage it ends the loop's backoff wait at once: the store answers again, so
   * the loop claims now instead of up to `OUTAGE_RETRY_MAX_MS` × 1.25 later (the backlog of tasks
   * that fell due during the outage waits for that). At most once per recovery: a claim that then
   * fails again sets a new backoff, and the next wake needs another success of discovery.
   */
  private discoverySucceeded(): void {
    const wasDown = this.health.unavailable;
    this.health.succeeded();
    if (wasDown && this.retrySleeping) this.wake.abort(WOKEN);
  }

  /** Runs a loop step; a store error is reported (and sets the backoff), never thrown. */
  private async guard<T>(operation: 'claim' | 'reclaim', step: () => Promise<T>): Promise<T | null> {
    try {
      const result = await step();
      this.health.succeeded();
      return result;
    } catch (error) {
      this.retryInMs = Math.max(this.retryInMs, this.reportStoreError(error, operation));
      return null;
    }
  }

  /**
   * A failed store call of the loop or of discovery: one `storeUnavailable` event per outage (see
   * StoreHealth); a closed store, or a schema that does not fit the code (`SCHEMA_BEHIND`,
   * `SCHEMA_TOO_NEW`), stops the worker.
   * @returns how long to wait before the loop calls the store again, in ms
   */
  private reportStoreError(error: unknown, operation: StoreOperation): number {
    if (PostponeError.isInstance(error) && error.code === 'STORE_CLOSED') {
      this.events.emit('error', { error, operation });
      if (this.currentState === 'running') {
        this.logger.error('the store is closed; stopping');
        void this.stop({ timeoutMs: 0 });
      }
      return 0;
    }
    // The schema and this code do not fit (SchemaVersionError, naming both versions): the store
    // checks before the first claim or reclaim, so nothing was claimed. Refuse rather than retry.
    if (PostponeError.isInstance(error) && (error.code === 'SCHEMA_BEHIND' || error.code === 'SCHEMA_TOO_NEW')) {
      this.events.emit('error', { error, operation });
      if (this.currentState === 'running') {
        this.logger.error({ err: error }, `${error.message}; stopping`);
        void this.stop({ timeoutMs: 0 });
      }
      return 0;
    }
    return this.health.failed(error, operation);
  }

  private async shutdown(): Promise<StopResult> {
    const pruneStopped = this.pruner?.stop(this.deadline.signal);
    this.offConnectionError();
    await this.loopDone;
    await this.discoverer.stop();
    await pruneStopped;
    await Promise.race([this.unclaimed?.settled(), whenAborted(this.deadline.signal)]);
    await Promise.all([...this.claims]);
    await Promise.race([this.idle(), whenAborted(this.deadline.signal)]);
    const running = [...this.runs].filter((run) => run.phase === 'running');
    const released = await Promise.all(running.map((run) => run.handBack()));
    await this.idle();
    this.stopTimers.abort();
    this.currentState = 'stopped';
    this.telemetry.stop();
    const result: StopResult = {
      handedBack: running.length + this.handedBackUnstarted,
      handBackFailed: released.filter((ok) => !ok).length + this.handBacksFailed,
    };
    this.logger.info(result, 'stopped');
    this.events.emit('stopped', result);
    return result;
  }
}

/** Signals a process cannot catch (POSIX): a handler for them is refused by Node with a raw EINVAL. */
const UNCATCHABLE: ReadonlySet<string> = new Set(['SIGKILL', 'SIGSTOP']);

/**
 * `signals` of {@link SignalHandlerOptions}: a non-empty array of signal names this platform knows
 * (`os.constants.signals`) that a process can catch; default `['SIGTERM', 'SIGINT']`.
 * @throws ValidationError INVALID_OPTION (`signals`, `signals[i]`)
 */
function validateSignals(signals: unknown): NodeJS.Signals[] {
  if (signals === undefined) return ['SIGTERM', 'SIGINT'];
  if (!Array.isArray(signals) || signals.length === 0) throw new ValidationError('INVALID_OPTION', 'signals', 'must be a non-empty array of signal names, e.g. ["SIGTERM", "SIGINT"]');
  for (const [i, signal] of signals.entries()) {
    if (typeof signal !== 'string' || !Object.hasOwn(osConstants.signals, signal) || UNCATCHABLE.has(signal)) {
      throw new ValidationError('INVALID_OPTION', `signals[${i}]`, `must be a signal a process can catch (not SIGKILL or SIGSTOP), got ${String(signal)}`);
    }
  }
  return [...new Set(signals as NodeJS.Signals[])];
}

/** The code of the process warning emitted when a worker starts with `handlerTimeoutMs: null`. */
export const NO_HANDLER_TIMEOUT_WARNING = 'POSTPONE_NO_HANDLER_TIMEOUT';
let noHandlerTimeoutWarned = false;

/**
 * `handlerTimeoutMs: null`: a hung handler is never failed, only handed back at every stop, so its
 * task never reaches DEAD. Logged at warn on every start, and a process warning (shown by Node.js on
 * stderr even when the worker's logger is silent) once per process.
 */
function warnNoHandlerTimeout(logger: Logger): void {
  const message = 'handlerTimeoutMs is null: a handler that never settles is never failed; its task is handed back at every stop and never goes DEAD';
  logger.warn({ handlerTimeoutMs: null }, message);
  if (noHandlerTimeoutWarned) return;
  noHandlerTimeoutWarned = true;
  process.emitWarning(message, { type: 'PostponeWarning', code: NO_HANDLER_TIMEOUT_WARNING });
}

/**
 * Creates a worker (not started). `Tx` comes from the store; the payload type of each kind from the
 * handler map, e.g. `handlers: { 'expire-reservation': async (task: ClaimedTask<{ reservationId: number }>, ctx) => ... }`.
 * @throws ValidationError INVALID_OPTION / INVALID_KIND for a bad option (nothing started)
 */
export function createWorker<Tx, M extends PayloadMap = PayloadMap>(options: WorkerOptions<Tx, M>): Worker<Tx> {
  return new Worker<Tx>(options as unknown as WorkerOptions<Tx, PayloadMap>);
}
