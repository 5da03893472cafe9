/**
 * Metrics and traces through `@opentelemetry/api` only: without an SDK installed by the application
 * every instrument and span is the API's no-op. Names, units and attributes are listed in the README
 * ("Metrics and traces").
 *
 * Counters and the lateness histogram follow the worker's events (one count per event), so they
 * agree with what a listener sees. The attempt span and the handler duration are kept by the task
 * run, which knows when the handler starts and settles. Metric attributes are the task kind and the
 * worker id only (bounded sets); task ids appear on spans, never on metrics.
 */
import {
  type Attributes,
  type BatchObservableResult,
  type ObservableResult,
  context,
  type Counter,
  isSpanContextValid,
  type Histogram,
  type Meter,
  metrics,
  type Observable,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api';
import type { ClaimedTask, CompleteOutcome, FailResult, ReclaimedTask, Store, StoreStats } from '@postpone/core';
import { spanContextOf } from './trace-context.js';

/** Meter and tracer name. */
export const INSTRUMENTATION_SCOPE = '@postpone/worker';

/** Instrument names (see the README's table). */
export const METRICS = Object.freeze({
  claimed: 'postpone.tasks.claimed',
  completed: 'postpone.tasks.completed',
  failed: 'postpone.tasks.failed',
  dead: 'postpone.tasks.dead',
  rejectedStale: 'postpone.tasks.rejected_stale',
  reclaimed: 'postpone.tasks.reclaimed',
  lateness: 'postpone.task.lateness',
  handlerDuration: 'postpone.handler.duration',
  dueWaiting: 'postpone.tasks.due_waiting',
  unclaimedDue: 'postpone.tasks.unclaimed_due',
});

/** Attribute keys on metrics and spans. */
export const ATTRIBUTES = Object.freeze({
  kind: 'postpone.task.kind',
  /** On `postpone.tasks.unclaimed_due`: the queue of the pair. */
  queue: 'postpone.task.queue',
  workerId: 'postpone.worker.id',
  taskId: 'postpone.task.id',
  attempt: 'postpone.task.attempt',
  /** On the attempt span: the store's answer to the attempt's end (DONE, SCHEDULED, DEAD, …, UNKNOWN). */
  outcome: 'postpone.attempt.outcome',
  /** On `postpone.tasks.reclaimed`: where the reclaim moved the task (SCHEDULED, DEAD, CANCELLED). */
  reclaimOutcome: 'postpone.reclaim.outcome',
  /** On `postpone.tasks.rejected_stale`: the refused write (complete, fail, release). */
  operation: 'postpone.store.operation',
  /** On `postpone.handler.duration`: `ok` (returned) or `error` (threw, timed out or was abandoned). */
  handlerResult: 'postpone.handler.result',
});

/** The due-and-waiting gauge reads `store.stats()` at most once per this many ms (monotonic clock). */
export const DUE_WAITING_MIN_INTERVAL_MS = 5_000;

/** Bucket bounds of both histograms, in ms: 1 ms to 5 min. */
const MS_BUCKETS = [0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000];
/** Longest error text put on a span's status. */
const MAX_STATUS_MESSAGE = 500;
/** Most kinds whose metric attributes are kept made (a worker handles a bounded set; past this they are made per event). */
const MAX_CACHED_KINDS = 1_000;

/** The metric attributes of one kind, made once: every event of the kind records with the same objects. */
interface KindAttributes {
  /** kind and worker id */
  readonly base: Attributes;
  /** …and the handler's result, for `postpone.handler.duration` */
  readonly ok: Attributes;
  readonly error: Attributes;
}

/** The worker events the counters follow (a subset of the worker's `WorkerEvents`, same shapes). */
export interface TelemetryEvents {
  claimed: { readonly task: ClaimedTask };
  completed: { readonly task: ClaimedTask; readonly outcome: CompleteOutcome };
  failed: { readonly task: ClaimedTask; readonly result: FailResult };
  rejectedStale: { readonly task: ClaimedTask; readonly operation: 'complete' | 'fail' | 'release' | 'snooze' };
  reclaimed: { readonly task: ReclaimedTask };
}

/** Where those events come from (the worker's emitter); `on` returns the unsubscribe function. */
export interface TelemetryEventSource {
  on<E extends keyof TelemetryEvents>(event: E, listener: (event: TelemetryEvents[E]) => void): () => void;
}

export interface TelemetryDeps {
  readonly workerId: string;
  readonly store: Store<unknown>;
  /** The worker's monotonic clock (ms): paces the reads of `store.stats()`. */
  readonly pacing: { now(): number };
  /** Where a failed `store.stats()` is logged at debug level (a pino logger fits). */
  readonly logger: { debug(fields: object, message: string): void };
  /** The pairs of the last `unclaimedAfterMs` check this worker does not handle (option `unclaimedAfterMs`); absent: no gauge callback. */
  readonly unclaimed?: () => readonly { readonly queue: string; readonly kind: string; readonly due: number }[];
}

/** What ended an attempt, in the store's words; UNKNOWN when the store could not be reached. */
export type AttemptOutcome = 'DONE' | 'CANCELLED_BEFORE_COMMIT' | 'REJECTED_STALE' | 'NOT_FOUND' | 'SCHEDULED' | 'DEAD' | 'CANCELLED' | 'RELEASED' | 'SNOOZED' | 'UNKNOWN';

export class WorkerTelemetry {
  private readonly tracer: Tracer;
  private readonly meter: Meter;
  private readonly counters: Record<'claimed' | 'completed' | 'failed' | 'dead' | 'rejectedStale' | 'reclaimed', Counter>;
  private readonly lateness: Histogram;
  private readonly handlerDuration: Histogram;
  private readonly dueWaiting: Observable;
  private readonly unclaimedDue: Observable;
  private watchingUnclaimed = false;
  private readonly base: Attributes;
  private readonly byKind = new Map<string, KindAttributes>();
  private readonly offEvents: (() => void)[] = [];
  private watching = false;
  private cached: { readonly at: number; readonly stats: StoreStats | null } | null = null;
  private reading: Promise<StoreStats | null> | null = null;

  /** Gets the meter and tracer from the global providers (no-ops unless the application installed an SDK). */
  constructor(
    events: TelemetryEventSource,
    private readonly deps: TelemetryDeps,
  ) {
    this.tracer = trace.getTracer(INSTRUMENTATION_SCOPE);
    this.meter = metrics.getMeter(INSTRUMENTATION_SCOPE);
    const counter = (name: string, description: string) => this.meter.createCounter(name, { unit: '{task}', description });
    this.counters = {
      claimed: counter(METRICS.claimed, 'Tasks claimed (one per claim, so a task retried three times counts three).'),
      completed: counter(METRICS.completed, 'Attempts completed: the fenced complete answered DONE (or NOT_FOUND with DONE not kept).'),
      failed: counter(METRICS.failed, 'Attempts failed and recorded by the store (retry scheduled, DEAD or CANCELLED).'),
      dead: counter(METRICS.dead, 'Tasks that went DEAD through this worker: a failure or a reclaimed lease used up their attempts.'),
      rejectedStale: counter(METRICS.rejectedStale, 'Late writes of an attempt the store refused (someone else holds the task, or it ended).'),
      reclaimed: counter(METRICS.reclaimed, 'Tasks whose expired lease this worker reclaimed.'),
    };
    const histogram = (name: string, description: string) =>
      this.meter.createHistogram(name, { unit: 'ms', description, advice: { explicitBucketBoundaries: MS_BUCKETS } });
    this.lateness = histogram(METRICS.lateness, 'Claim time minus due time, both from the store clock.');
    this.handlerDuration = histogram(METRICS.handlerDuration, 'Time from handler start until it settled (monotonic clock).');
    this.dueWaiting = this.meter.createObservableGauge(METRICS.dueWaiting, {
      unit: '{task}',
      description: `SCHEDULED tasks already due, by kind (store.stats(), read at most every ${DUE_WAITING_MIN_INTERVAL_MS} ms).`,
    });
    this.unclaimedDue = this.meter.createObservableGauge(METRICS.unclaimedDue, {
      unit: '{task}',
      description: 'Due tasks of kinds nobody claims that this worker does not handle, by queue and kind: the last unclaimedAfterMs check (no store read at collection).',
    });
    this.base = { [ATTRIBUTES.workerId]: deps.workerId };
    this.subscribe(events);
  }

  /** Starts observing the due-and-waiting gauge (stores with `stats()` only). */
  start(): void {
    if (!this.watchingUnclaimed && this.deps.unclaimed !== undefined) {
      this.watchingUnclaimed = true;
      this.unclaimedDue.addCallback(this.observeUnclaimed);
    }
    if (this.watching || typeof this.deps.store.stats !== 'function') return;
    this.watching = true;
    this.meter.addBatchObservableCallback(this.observe, [this.dueWaiting]);
  }

  /** Stops observing the gauge and following the events. Idempotent. */
  stop(): void {
    if (this.watching) this.meter.removeBatchObservableCallback(this.observe, [this.dueWaiting]);
    this.watching = false;
    if (this.watchingUnclaimed) this.unclaimedDue.removeCallback(this.observeUnclaimed);
    this.watchingUnclaimed = false;
    for (const off of this.offEvents.splice(0)) off();
  }

  /** Starts the span of one attempt (a new trace, linked to the span that scheduled the task). */
  attempt(task: ClaimedTask): AttemptTelemetry {
    const scheduledBy = spanContextOf(task.traceContext);
    const span = this.tracer.startSpan(
      `postpone.attempt ${task.kind}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: { [ATTRIBUTES.taskId]: task.id, [ATTRIBUTES.kind]: task.kind, [ATTRIBUTES.attempt]: task.attempt, ...this.base },
        links: scheduledBy === null ? [] : [{ context: scheduledBy }],
      },
      ROOT_CONTEXT,
    );
    return new AttemptTelemetry(span, this.handlerDuration, this.kindAttributes(task.kind));
  }

  /** The metric attributes of `kind` (cached for up to {@link MAX_CACHED_KINDS} kinds). */
  private kindAttributes(kind: string): KindAttributes {
    const cached = this.byKind.get(kind);
    if (cached !== undefined) return cached;
    const base = Object.freeze({ [ATTRIBUTES.kind]: kind, ...this.base });
    const made = {
      base,
      ok: Object.freeze({ ...base, [ATTRIBUTES.handlerResult]: 'ok' }),
      error: Object.freeze({ ...base, [ATTRIBUTES.handlerResult]: 'error' }),
    };
    if (this.byKind.size < MAX_CACHED_KINDS) this.byKind.set(kind, made);
    return made;
  }

  private subscribe(events: TelemetryEventSource): void {
    const of = (task: ClaimedTask): Attributes => this.kindAttributes(task.kind).base;
    this.offEvents.push(
      events.on('claimed', ({ task }) => {
        this.counters.claimed.add(1, of(task));
        this.lateness.record(Math.max(0, task.claimedAt.getTime() - task.dueAt.getTime()), of(task));
      }),
      // NOT_FOUND (DONE not kept): finished without history, counted done (docs/contract.md#done-not-kept).
      events.on('completed', ({ task, outcome }) => (outcome === 'DONE' || outcome === 'NOT_FOUND') && this.counters.completed.add(1, of(task))),
      events.on('failed', ({ task, result }) => {
        if (result.outcome === 'REJECTED_STALE') return;
        this.counters.failed.add(1, of(task));
        if (result.outcome === 'DEAD') this.counters.dead.add(1, of(task));
      }),
      events.on('rejectedStale', ({ task, operation }) => this.counters.rejectedStale.add(1, { ...of(task), [ATTRIBUTES.operation]: operation })),
      events.on('reclaimed', ({ task }) => {
        // A reclaimed task carries no kind (the store's answer holds id, attempt and outcome only).
        this.counters.reclaimed.add(1, { ...this.base, [ATTRIBUTES.reclaimOutcome]: task.outcome });
        if (task.outcome === 'DEAD') this.counters.dead.add(1, this.base);
      }),
    );
  }

  /** The gauge's callback: due tasks by kind, from `stats()` read at most every {@link DUE_WAITING_MIN_INTERVAL_MS}. */
  private readonly observe = async (result: BatchObservableResult): Promise<void> => {
    const stats = await this.stats();
    if (stats === null) return;
    for (const k of stats.byKind) result.observe(this.dueWaiting, k.due, { [ATTRIBUTES.kind]: k.kind });
  };

  /** The unclaimed gauge's callback: the last check's pairs (none before the first check, or once they are claimed). */
  private readonly observeUnclaimed = (result: ObservableResult): void => {
    for (const k of this.deps.unclaimed?.() ?? []) result.observe(k.due, { [ATTRIBUTES.queue]: k.queue, [ATTRIBUTES.kind]: k.kind, ...this.base });
  };

  /** The last `stats()` when younger than the interval, else one new read (shared by concurrent collections); null when it failed. */
  private stats(): Promise<StoreStats | null> {
    const now = this.deps.pacing.now();
    if (this.cached !== null && now - this.cached.at < DUE_WAITING_MIN_INTERVAL_MS) return Promise.resolve(this.cached.stats);
    this.reading ??= this.deps.store
      .stats()
      .catch((error: unknown) => {
        this.deps.logger.debug({ err: error }, `stats() for ${METRICS.dueWaiting} failed; not observed this time`);
        return null;
      })
      .then((stats) => {
        this.cached = { at: this.deps.pacing.now(), stats };
        this.reading = null;
        return stats;
      });
    return this.reading;
  }
}

/** The span and handler timing of one attempt. */
export class AttemptTelemetry {
  private outcome: AttemptOutcome = 'UNKNOWN';
  private error: string | null = null;
  private ended = false;
  /**
   * Whether the span is worth putting in the handler's context: recording, or carrying a valid
   * context to propagate. Without an SDK the API's span is neither (an invalid, non-recording span),
   * and the handler runs without the context switch.
   */
  private readonly active: boolean;

  constructor(
    private readonly span: Span,
    private readonly handlerDuration: Histogram,
    private readonly attributes: KindAttributes,
  ) {
    this.active = span.isRecording() || isSpanContextValid(span.spanContext());
  }

  /** Runs `fn` (the handler) with the attempt span active, so its own spans and schedules nest under it. */
  run<T>(fn: () => T): T {
    return this.active ? context.with(trace.setSpan(context.active(), this.span), fn) : fn();
  }

  /** The handler settled (`ok`: returned) after `durationMs` on the monotonic clock. */
  handlerSettled(durationMs: number, ok: boolean): void {
    this.handlerDuration.record(Math.max(0, durationMs), ok ? this.attributes.ok : this.attributes.error);
  }

  /** What the store answered to the attempt's end; `error` when the attempt failed (the span's status becomes ERROR). */
  finished(outcome: AttemptOutcome, error: string | null = null): void {
    this.outcome = outcome;
    this.error = error;
  }

  /** Ends the span (once). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttribute(ATTRIBUTES.outcome, this.outcome);
    if (this.error !== null) this.span.setStatus({ code: SpanStatusCode.ERROR, message: this.error.slice(0, MAX_STATUS_MESSAGE) });
    this.span.end();
  }
}
