/**
 * The cron scheduler (docs/contract.md#recurring-schedules): schedules declared in code, reconciled
 * with the store at start, and a loop that turns each occurrence into one task ahead of time — a
 * normal SCHEDULED task due at the occurrence, so the worker's discovery runs it on time.
 *
 * Every process of an application may run one: "one occurrence, one task" rests on the store's
 * `scheduleCronOccurrence` (the watermark moved in the same transaction as the insert), never on
 * this loop being alone.
 */
import { type Json, type RetryPolicy, rejectUnknownFields, type Store, ValidationError, validateKind, validateMaxAttempts, validateSchedule } from '@postpone/core';
import { type CronStore, isCronStore, type ReconcileCronResult, validateCronSpec } from '@postpone/core';
import { Occurrences } from './occurrences.js';

/** What to do with occurrences that passed while no scheduler ran (their time is before now). */
export type MissedPolicy = 'last' | 'all' | 'skip';

/** One recurring schedule, declared in code. */
export interface CronSchedule {
  /** Unique name, 1..200 characters: the schedule's identity in the store across deploys. */
  readonly name: string;
  /** A cron expression croner accepts: 5 fields (minute first) or 6 (seconds first), e.g. `30 2 * * *`. */
  readonly cron: string;
  /** IANA time zone the expression is read in (default `UTC`), e.g. `America/New_York`. */
  readonly timeZone?: string;
  /** The task kind each occurrence schedules. */
  readonly kind: string;
  /** The task payload: a JSON value, or a function of the occurrence (its due time) returning one. Default null. */
  readonly payload?: Json | ((occurrence: Date) => Json);
  /** Attempts of each occurrence's task (default core's `DEFAULT_MAX_ATTEMPTS`). */
  readonly maxAttempts?: number;
  /** Named queue of each occurrence's task, as `schedule()`'s (default `'default'`): only a worker of this queue claims it (docs/contract.md#queues). @throws ValidationError INVALID_QUEUE */
  readonly queue?: string;
  /** Priority of each occurrence's task, an integer as `schedule()`'s (default 0; docs/contract.md#priorities). @throws ValidationError INVALID_PRIORITY */
  readonly priority?: number;
  /** The task's own retry policy, as `schedule()`'s `retry` (docs/contract.md#retry-policy); default none (the worker's). */
  readonly retry?: RetryPolicy | null;
  /**
   * Occurrences before now that were never scheduled (nothing ran): `'last'` (default) schedules only
   * the most recent, due at once; `'all'` schedules each, oldest first, at most `maxMissed` (the most
   * recent ones; older ones are dropped); `'skip'` schedules none, the next future one is the first.
   */
  readonly missed?: MissedPolicy;
}

export interface CronSchedulerOptions {
  /** A store with the `CronStore` capability (`@postpone/memory`, `@postpone/postgres`). Its clock is the scheduler's. */
  readonly store: Store<any> & CronStore;
  readonly schedules: readonly CronSchedule[];
  /** Occurrences due within this many ms of now are scheduled (default 60 000). More than `intervalMs`. */
  readonly horizonMs?: number;
  /** Pause between two passes of the loop, ms (default 10 000). */
  readonly intervalMs?: number;
  /** Most missed occurrences `missed: 'all'` schedules after a gap, per schedule (default 100). */
  readonly maxMissed?: number;
  /** Most future occurrences scheduled per schedule in one pass (default 1 000). */
  readonly maxAhead?: number;
  /** Delete stored schedules not declared here (default true). */
  readonly removeUndeclared?: boolean;
  /** Gets every error of a pass (a lost connection, a payload function that threw); must not throw. Default: `console.error`. */
  readonly onError?: (error: unknown, schedule?: string) => void;
  /** Gets the report of every pass of the loop (metrics, tests). A throw goes to `onError`. */
  readonly onPass?: (report: CronPassReport) => void;
}

/** What one pass did, per schedule. */
export interface CronPassReport {
  /** The store's now at the pass. */
  readonly now: Date;
  /** Occurrences this process turned into tasks, by schedule name. */
  readonly scheduled: Readonly<Record<string, readonly { readonly occurrence: Date; readonly id: string }[]>>;
  /** Occurrences another process (or an earlier pass) had already taken. */
  readonly passed: number;
  /**
   * Schedules skipped because the store holds another expression or time zone for the name (another
   * deploy reconciled it, CHANGED): this process schedules none of their occurrences until it is
   * redeployed with the stored declaration (docs/contract.md#recurring-schedules).
   */
  readonly stale: readonly string[];
  /**
   * Declared schedules the store no longer held (another process, e.g. an old deploy with
   * `removeUndeclared`, deleted them): re-added by this pass alone (`removeUndeclared: false`),
   * watermark = the store's now, and scheduled from then on. Occurrences during the gap are not made up.
   */
  readonly readded: readonly string[];
}

interface Entry {
  readonly def: CronSchedule;
  readonly timeZone: string;
  readonly missed: MissedPolicy;
  readonly occurrences: Occurrences;
  /** The highest watermark this process saw or set: a re-added schedule never re-schedules up to it. */
  seenMs: number;
}

const OPTION_FIELDS = ['store', 'schedules', 'horizonMs', 'intervalMs', 'maxMissed', 'maxAhead', 'removeUndeclared', 'onError', 'onPass'];
const SCHEDULE_FIELDS = ['name', 'cron', 'timeZone', 'kind', 'payload', 'maxAttempts', 'queue', 'priority', 'retry', 'missed'];
const MISSED: readonly MissedPolicy[] = ['last', 'all', 'skip'];

/** The task options a schedule declared (those not given are left out, so the store's defaults apply). */
function taskOptions(def: CronSchedule): { maxAttempts?: number; queue?: string; priority?: number; retry?: RetryPolicy | null } {
  const out: { maxAttempts?: number; queue?: string; priority?: number; retry?: RetryPolicy | null } = {};
  if (def.maxAttempts !== undefined) out.maxAttempts = def.maxAttempts;
  if (def.queue !== undefined) out.queue = def.queue;
  if (def.priority !== undefined) out.priority = def.priority;
  if (def.retry !== undefined) out.retry = def.retry;
  return out;
}

function positiveInt(value: unknown, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new ValidationError('INVALID_OPTION', field, `must be a positive integer, got ${String(value)}`);
  return value as number;
}

export class CronScheduler {
  readonly #store: Store<any> & CronStore;
  readonly #entries: readonly Entry[];
  readonly #horizonMs: number;
  readonly #intervalMs: number;
  readonly #maxMissed: number;
  readonly #maxAhead: number;
  readonly #removeUndeclared: boolean;
  readonly #onError: (error: unknown, schedule?: string) => void;
  readonly #onPass: ((report: CronPassReport) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;
  #started = false;

  /** @throws ValidationError INVALID_OPTION (or the task's own code) naming the field, e.g. `schedules[0].cron` */
  constructor(options: CronSchedulerOptions) {
    if (typeof options !== 'object' || options === null) throw new ValidationError('INVALID_OPTION', 'options', 'must be an object');
    rejectUnknownFields(options, OPTION_FIELDS);
    if (!isCronStore(options.store)) throw new ValidationError('INVALID_OPTION', 'store', 'must implement CronStore (@postpone/memory, @postpone/postgres)');
    if (!Array.isArray(options.schedules)) throw new ValidationError('INVALID_OPTION', 'schedules', 'must be an array');
    this.#store = options.store;
    this.#horizonMs = positiveInt(options.horizonMs, 'horizonMs', 60_000);
    this.#intervalMs = positiveInt(options.intervalMs, 'intervalMs', 10_000);
    if (this.#intervalMs >= this.#horizonMs) throw new ValidationError('INVALID_OPTION', 'intervalMs', 'must be less than horizonMs, or occurrences are found late');
    this.#maxMissed = positiveInt(options.maxMissed, 'maxMissed', 100);
    this.#maxAhead = positiveInt(options.maxAhead, 'maxAhead', 1_000);
    if (options.removeUndeclared !== undefined && typeof options.removeUndeclared !== 'boolean') throw new ValidationError('INVALID_OPTION', 'removeUndeclared', 'must be a boolean');
    this.#removeUndeclared = options.removeUndeclared ?? true;
    if (options.onError !== undefined && typeof options.onError !== 'function') throw new ValidationError('INVALID_OPTION', 'onError', 'must be a function');
    this.#onError = options.onError ?? ((error, schedule) => console.error(`[postpone/cron]${schedule === undefined ? '' : ` ${schedule}:`}`, error));
    if (options.onPass !== undefined && typeof options.onPass !== 'function') throw new ValidationError('INVALID_OPTION', 'onPass', 'must be a function');
    this.#onPass = options.onPass;
    const names = new Set<string>();
    this.#entries = options.schedules.map((def, i) => {
      const field = `schedules[${i}]`;
      if (typeof def !== 'object' || def === null) throw new ValidationError('INVALID_OPTION', field, 'must be an object');
      rejectUnknownFields(def, SCHEDULE_FIELDS, `${field}.`);
      const timeZone = def.timeZone ?? 'UTC';
      const spec = validateCronSpec({ name: def.name, cron: def.cron, timeZone }, field);
      if (names.has(spec.name)) throw new ValidationError('INVALID_OPTION', `${field}.name`, `repeats the name ${JSON.stringify(spec.name)}`);
      names.add(spec.name);
      validateKind(def.kind, `${field}.kind`);
      if (def.maxAttempts !== undefined) validateMaxAttempts(def.maxAttempts, `${field}.maxAttempts`);
      // The task fields, checked as schedule() checks them (the payload too, unless it is a function).
      validateSchedule({ kind: def.kind, ...(typeof def.payload === 'function' ? {} : { payload: def.payload }), ...taskOptions(def) }, {}, field);
      const missed = def.missed ?? 'last';
      if (!MISSED.includes(missed)) throw new ValidationError('INVALID_OPTION', `${field}.missed`, `must be one of ${MISSED.join(', ')}`);
      return { def, timeZone, missed, occurrences: new Occurrences(spec.cron, timeZone, field), seenMs: Number.NEGATIVE_INFINITY };
    });
  }

  /**
   * Reconciles the declared schedules with the store (added, changed — re-based —, removed), runs
   * one pass, then one pass every `intervalMs` until {@link stop}. Errors of later passes go to `onError`.
   * @throws what `reconcileCronSchedules` throws (StoreClosedError, ConnectionLostError, StoreError): nothing started, call again;
   *   ValidationError INVALID_OPTION `start` when already started or stopped
   */
  async start(): Promise<ReconcileCronResult> {
    if (this.#stopped) throw new ValidationError('INVALID_OPTION', 'start', 'the scheduler was stopped; create a new one');
    if (this.#started) throw new ValidationError('INVALID_OPTION', 'start', 'the scheduler is already started');
    this.#started = true;
    let result: ReconcileCronResult;
    try {
      result = await this.reconcile();
    } catch (error) {
      this.#started = false; // nothing started: start() may be called again
      throw error;
    }
    this.#loop();
    return result;
  }

  /** Makes the store's schedules the declared ones, in one transaction (see `CronStore.reconcileCronSchedules`). */
  reconcile(): Promise<ReconcileCronResult> {
    const schedules = this.#entries.map((e) => ({ name: e.def.name, cron: e.def.cron, timeZone: e.timeZone }));
    return this.#store.reconcileCronSchedules({ schedules, removeUndeclared: this.#removeUndeclared });
  }

  /**
   * One pass: reads the store's now and every watermark, and for each schedule turns into tasks the
   * missed occurrences its policy keeps and the occurrences due within `horizonMs`, oldest first.
   * An occurrence another process took is counted in `passed`. An error of one schedule (its payload
   * function threw, the store refused) goes to `onError` and the pass goes on with the next.
   * @throws the store's errors from reading now and the watermarks (nothing scheduled)
   */
  async runOnce(): Promise<CronPassReport> {
    const nowMs = (await this.#store.now()).getTime();
    const stored = new Map((await this.#store.listCronSchedules()).map((r) => [r.name, r]));
    const scheduled: Record<string, { occurrence: Date; id: string }[]> = {};
    const stale: string[] = [];
    const readded: string[] = [];
    let passed = 0;
    for (const entry of this.#entries) {
      const { def } = entry;
      let row = stored.get(def.name);
      if (row === undefined) {
        // Deleted by another process (NOT_FOUND): re-add this one schedule, never touching the others.
        try {
          const spec = { name: def.name, cron: def.cron, timeZone: entry.timeZone };
          const result = await this.#store.reconcileCronSchedules({ schedules: [spec], removeUndeclared: false });
          if (result.added.includes(def.name)) readded.push(def.name);
          row = (await this.#store.listCronSchedules()).find((r) => r.name === def.name);
        } catch (error) {
          this.#report(error, def.name);
          continue;
        }
        if (row === undefined) continue; // deleted again at once: the next pass re-adds it
      }
      if (row.cron !== def.cron || row.timeZone !== entry.timeZone) {
        stale.push(def.name);
        continue;
      }
      const mine: { occurrence: Date; id: string }[] = [];
      scheduled[def.name] = mine;
      try {
        // The floor: the stored watermark, or what this process saw before the row was deleted and
        // re-added (its occurrences up to there are already tasks).
        entry.seenMs = Math.max(entry.seenMs, row.watermark.getTime());
        for (const occurrence of this.#due(entry, entry.seenMs, nowMs)) {
          const payload = (typeof def.payload === 'function' ? def.payload(new Date(occurrence)) : (def.payload ?? null)) as Json;
          const task = { kind: def.kind, payload, ...taskOptions(def) };
          const result = await this.#store.scheduleCronOccurrence({ name: def.name, cron: def.cron, timeZone: entry.timeZone, occurrence, task });
          if (result.outcome === 'SCHEDULED') {
            mine.push({ occurrence, id: result.id });
            entry.seenMs = Math.max(entry.seenMs, occurrence.getTime());
          } else if (result.outcome === 'PASSED') passed += 1;
          else {
            // CHANGED: stale; NOT_FOUND (deleted since the read above): the next pass re-adds it.
            if (result.outcome === 'CHANGED') stale.push(def.name);
            break;
          }
        }
      } catch (error) {
        this.#report(error, def.name);
      }
    }
    return { now: new Date(nowMs), scheduled, passed, stale, readded };
  }

  /** Stops the loop and waits for a pass in flight. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** The occurrences to schedule now, ascending: the missed ones the policy keeps, then those within the horizon. */
  #due(entry: Entry, watermarkMs: number, nowMs: number): Date[] {
    const { occurrences, missed } = entry;
    const past = missed === 'skip' ? [] : occurrences.latestBetween(watermarkMs, nowMs, missed === 'last' ? 1 : this.#maxMissed);
    // Future: strictly after the watermark and at or after now (an occurrence at exactly now is due, not missed).
    const ahead = occurrences.between(Math.max(watermarkMs, nowMs - 1), nowMs + this.#horizonMs, this.#maxAhead);
    return [...past, ...ahead];
  }

  #loop(): void {
    if (this.#stopped) return;
    const pass = this.runOnce()
      .then((report) => this.#onPass?.(report))
      .catch((error) => this.#report(error));
    this.#running = pass;
    void pass.finally(() => {
      if (this.#stopped) return;
      this.#timer = setTimeout(() => this.#loop(), this.#intervalMs);
    });
  }

  #report(error: unknown, schedule?: string): void {
    try {
      this.#onError(error, schedule);
    } catch {
      // A throwing onError must not stop the loop or become an unhandled rejection.
    }
  }
}

/** Creates a {@link CronScheduler}. @throws ValidationError for bad options or schedules */
export function createCronScheduler(options: CronSchedulerOptions): CronScheduler {
  return new CronScheduler(options);
}
