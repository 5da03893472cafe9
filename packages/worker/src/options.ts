/**
 * Worker options, their defaults, and their validation (core `ValidationError`, code INVALID_OPTION,
 * or INVALID_KIND for a bad handler name). Nothing starts until every option is valid.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  type ConnectionBudget,
  DEFAULT_MAX_BACKOFF_MS,
  type Store,
  ValidationError,
  validateKind,
  validateNonNegativeMs,
  validatePositiveInt,
  validatePositiveMs,
  MAX_COMPLETE_MANY,
  MAX_DELAY_MS,
  MAX_PRUNE_BATCH,
  DEFAULT_PRUNE_BATCH,
  rejectUnknownFields,
} from '@postpone/core';
import type { LevelWithSilent, Logger } from 'pino';
import type { HandlerMap, PayloadMap } from './handler.js';
import { type Pacing, systemPacing } from './pacing.js';

/** Most tasks one claim may ask for (the store's limit, docs/contract.md#transitions). */
export const MAX_CONCURRENCY = 10_000;
/** Largest duration a timer can wait: 2³¹−1 ms (Node.js `setTimeout`, HTML Living Standard timers). */
export const MAX_TIMER_MS = 2_147_483_647;

/** How a worker finds due tasks (see {@link WorkerOptions.discovery}). */
export type DiscoveryMode = 'poll' | 'hybrid';

export const WORKER_DEFAULTS = Object.freeze({
  discovery: 'poll' as DiscoveryMode,
  concurrency: 10,
  leaseMs: 30_000,
  pollIntervalMs: 1_000,
  backoffBaseMs: 1_000,
  maxBackoffMs: DEFAULT_MAX_BACKOFF_MS,
  shutdownTimeoutMs: 10_000,
  maxAbandonGraceMs: 5_000,
  completeBatchSize: 50,
  completeBatchDelayMs: 0,
});

/** Largest completion batch (the store's `completeMany` limit, core `MAX_COMPLETE_MANY`). */
export const MAX_COMPLETE_BATCH_SIZE = MAX_COMPLETE_MANY;

/**
 * Defaults of {@link HybridOptions}. A 2 ms tick over 3 levels × 64 slots gives a horizon of
 * 64³ × 2 ms = 524 288 ms (about 8 min 44 s); the worker loads tasks due within half of it (262 s),
 * so a task is always in the wheel well before it is due, and a timer fires at most 2 ms late.
 */
export const HYBRID_DEFAULTS = Object.freeze({
  fallbackPollMs: 2_000,
  tickMs: 2,
  levels: 3,
  slotsPerLevel: 64,
  loadLimit: 1_000,
  pauseThresholdMs: 1_000,
});

/** Settings of hybrid discovery (timing wheel + notifications + fallback poll). */
export interface HybridOptions {
  /**
   * Period of the fallback re-read of the store (`peekDue`, no claim): finds what a notification
   * missed, and every task on a store without notifications (e.g. the in-memory store). Default 2 000.
   */
  readonly fallbackPollMs?: number;
  /** Wheel tick in whole ms: a timer fires at the first tick not before the task's due time. Default 2. */
  readonly tickMs?: number;
  /** Wheel levels, 1..6 (default 3). */
  readonly levels?: number;
  /** Slots per level, a power of two 2..4 096 (default 64). */
  readonly slotsPerLevel?: number;
  /** Most tasks one re-read lists (the `peekDue` limit), 1..10 000 (default 1 000). */
  readonly loadLimit?: number;
  /**
   * A stall of the worker (SIGSTOP, a frozen VM, a blocked event loop) longer than this, on the
   * monotonic clock, is a gap: the wheel is rebuilt from the store at once. Default 1 000.
   */
  readonly pauseThresholdMs?: number;
}

/** The worker's scheduled prune of history (see {@link WorkerOptions.prune}). */
export interface PruneOptions {
  /** Delete DONE, CANCELLED and DEAD tasks finished more than this many ms before the store's now, 0..MAX_DELAY_MS (100 years). */
  readonly olderThanMs: number;
  /** Period between the end of one prune and the start of the next, in ms of the worker's pacing (1..2³¹−1). */
  readonly everyMs: number;
  /** Rows per batch (each its own short transaction), 1..10 000 (default 1 000, core `DEFAULT_PRUNE_BATCH`). */
  readonly batchSize?: number;
}

export interface ResolvedPruneOptions {
  readonly olderThanMs: number;
  readonly everyMs: number;
  readonly batchSize: number;
}

export interface ResolvedHybridOptions {
  readonly fallbackPollMs: number;
  readonly tickMs: number;
  readonly levels: number;
  readonly slotsPerLevel: number;
  readonly loadLimit: number;
  readonly pauseThresholdMs: number;
}

export interface WorkerOptions<Tx, M extends PayloadMap = PayloadMap> {
  /** Where tasks live. The worker never closes it. */
  readonly store: Store<Tx>;
  /**
   * One handler per kind. A claimed task of a kind not listed here is failed with an UnknownKindError
   * recorded in `last_error`: it is retried after the backoff (another worker, e.g. a newer version in a
   * rolling deploy, may know the kind) and goes DEAD when out of attempts — never a crash or a hot loop.
   */
  readonly handlers: HandlerMap<Tx, M>;
  /** Worker identity stored as `lease_owner` and in effect rows, 1..200 characters (default `<host>-<pid>-<random>`). */
  readonly id?: string;
  /**
   * Most tasks running at once; each claim asks for the free slots only. 1..10 000 (default 10).
   * When the store reports its pool (`connectionBudget`) and you share that pool with handlers, its
   * `max` must be at least `concurrency + POOL_RESERVE` (+1 when LISTEN takes a pool connection).
   */
  readonly concurrency?: number;
  /** Lease length per claim and per renewal, in ms of the store's clock (default 30 000). */
  readonly leaseMs?: number;
  /** Renewal period on the monotonic clock, below `leaseMs` (default `floor(leaseMs / 3)`). */
  readonly renewEveryMs?: number;
  /**
   * How due tasks are found (default `poll`):
   * - `poll`: claim; when the claim came back short, wait `pollIntervalMs` before the next one.
   *   Lateness up to one interval; every idle worker claims once per interval.
   * - `hybrid`: a hierarchical timing wheel of the tasks due within its horizon, read from the store
   *   (`peekDue`, no claim, no lease) and kept current by the store's notifications when it has
   *   them (`listen`, e.g. PostgreSQL LISTEN/NOTIFY); the worker claims when a task's timer fires,
   *   and re-reads the store every `hybrid.fallbackPollMs`, on start, after a lost connection and
   *   after a pause. Claims are the same atomic claim: the wheel never decides what is claimed.
   */
  readonly discovery?: DiscoveryMode;
  /** Settings of `hybrid` discovery (validated in both modes, used only in hybrid). */
  readonly hybrid?: HybridOptions;
  /** Poll mode: wait between claims when the last claim found fewer tasks than free slots (default 1 000). */
  readonly pollIntervalMs?: number;
  /** Period of the expired-lease reclaim in the loop (default `ceil(leaseMs / 2)`). */
  readonly reclaimEveryMs?: number;
  /** Retry backoff base: the n-th failure of a task makes it due again after `backoffBaseMs × 2^(n−1)` ms; hand-backs do not count (default 1 000; 0 retries at once). */
  readonly backoffBaseMs?: number;
  /** Cap of the retry backoff (default 3 600 000, one hour). */
  readonly maxBackoffMs?: number;
  /** How long `stop()` waits for running handlers before handing their tasks back (default 10 000). */
  readonly shutdownTimeoutMs?: number;
  /** Per-attempt time limit: the signal aborts with reason `timeout` and the attempt fails (default: none). */
  readonly handlerTimeoutMs?: number;
  /** After a handler's signal aborts, how long to wait for it to settle before freeing its slot (default `min(leaseMs, 5 000)`). */
  readonly abandonGraceMs?: number;
  /**
   * Most completions sent in one `store.completeMany`, 1..10 000 (default 50). A handler that settles
   * without `onCompleteTx` writes has its fenced complete queued; the queue is sent when it holds this
   * many, or `completeBatchDelayMs` after its first entry. Each task keeps its own outcome, events and
   * effect row; its slot frees when the batch is acknowledged. A handler with `onCompleteTx` writes is
   * always completed alone with `store.complete` (its writes need their own transaction). 1 turns
   * batching off: every completion uses `store.complete`, as before.
   */
  readonly completeBatchSize?: number;
  /**
   * How long the first queued completion waits for others, in ms of the worker's pacing (default 0:
   * the queue is sent on the next macrotask, `setImmediate`, so completions that settle in the same
   * turn of the event loop share a batch). The lease is not renewed after the handler settled, so it
   * must be below `leaseMs − renewEveryMs`: the lease left at that moment.
   */
  readonly completeBatchDelayMs?: number;
  /**
   * Prune history on a schedule while the worker runs: `store.prune({ olderThanMs, batchSize })` at
   * start, then `everyMs` after each prune ended; stopped with the worker. Results are `pruned`
   * events, failures `error` events (operation `prune`). Default: no pruning. The store must have
   * `prune()` (every Postpone store does).
   */
  readonly prune?: PruneOptions;
  /** A pino logger to log through (a child bound to the worker id is used). */
  readonly logger?: Logger;
  /** Log level: of the built-in logger (default `silent`), or of the child of `logger`. */
  readonly logLevel?: LevelWithSilent;
  /** Monotonic clock and timer (default `performance.now()` + `setTimeout`); tests pass `ManualPacing`. */
  readonly pacing?: Pacing;
}

export interface ResolvedOptions {
  readonly id: string;
  readonly discovery: DiscoveryMode;
  readonly hybrid: ResolvedHybridOptions;
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly renewEveryMs: number;
  readonly pollIntervalMs: number;
  readonly reclaimEveryMs: number;
  readonly backoffBaseMs: number;
  readonly maxBackoffMs: number;
  readonly shutdownTimeoutMs: number;
  readonly handlerTimeoutMs: number | null;
  readonly abandonGraceMs: number;
  readonly completeBatchSize: number;
  readonly completeBatchDelayMs: number;
  /** Null: no scheduled prune. */
  readonly prune: ResolvedPruneOptions | null;
  readonly logLevel: LevelWithSilent | undefined;
  readonly pacing: Pacing;
}

const STORE_METHODS = ['claim', 'extend', 'complete', 'fail', 'release', 'reclaimExpired', 'getTask'] as const;
const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function invalid(field: string, message: string): ValidationError {
  return new ValidationError('INVALID_OPTION', field, message);
}

function optional<T>(value: T | undefined, fallback: T, check: (v: T) => T): T {
  return value === undefined ? fallback : check(value);
}

/** A default worker id: `<host>-<pid>-<6 hex>`. */
export function defaultWorkerId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/**
 * Validates every option and fills in the defaults.
 * @throws ValidationError INVALID_OPTION naming the field (e.g. `renewEveryMs: must be below leaseMs (1000), got 1000`;
 *         `concurrency` for a shared pool too small for it), INVALID_KIND for a bad handler name
 */
const WORKER_OPTION_NAMES: ReadonlySet<string> = new Set([
  'store', 'handlers', 'id', 'concurrency', 'leaseMs', 'renewEveryMs', 'discovery', 'hybrid', 'pollIntervalMs', 'reclaimEveryMs',
  'backoffBaseMs', 'maxBackoffMs', 'shutdownTimeoutMs', 'handlerTimeoutMs', 'abandonGraceMs', 'completeBatchSize', 'completeBatchDelayMs',
  'prune', 'logger', 'logLevel', 'pacing',
]);
const PRUNE_OPTION_NAMES: readonly string[] = ['olderThanMs', 'everyMs', 'batchSize'];
const HYBRID_OPTION_NAMES: ReadonlySet<string> = new Set(['fallbackPollMs', 'tickMs', 'levels', 'slotsPerLevel', 'loadLimit', 'pauseThresholdMs']);


export function resolveOptions<Tx, M extends PayloadMap>(options: WorkerOptions<Tx, M>): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw invalid('options', 'must be an object');
  rejectUnknownFields(options, [...WORKER_OPTION_NAMES]);
  const store = options.store as unknown;
  if (typeof store !== 'object' || store === null) throw invalid('store', 'must be a Store');
  for (const method of STORE_METHODS) {
    if (typeof (store as Record<string, unknown>)[method] !== 'function') throw invalid('store', `must be a Store (no ${method}() method)`);
  }
  validateHandlers(options.handlers);

  const id = options.id === undefined ? defaultWorkerId() : validateWorkerId(options.id);
  const concurrency = optional(options.concurrency, WORKER_DEFAULTS.concurrency, (v) => validatePositiveInt(v, 'concurrency', MAX_CONCURRENCY));
  const leaseMs = optional(options.leaseMs, WORKER_DEFAULTS.leaseMs, (v) => validatePositiveMs(v, 'leaseMs', MAX_TIMER_MS));
  const renewEveryMs = optional(options.renewEveryMs, Math.max(1, Math.floor(leaseMs / 3)), (v) => validatePositiveMs(v, 'renewEveryMs', MAX_TIMER_MS));
  if (renewEveryMs >= leaseMs) throw invalid('renewEveryMs', `must be below leaseMs (${leaseMs}) so the lease is renewed before it runs out, got ${renewEveryMs}`);
  checkConnectionBudget(store as Store<unknown>, concurrency);
  const discovery = optional(options.discovery, WORKER_DEFAULTS.discovery, validateDiscovery);
  const hybrid = resolveHybrid(options.hybrid);
  const pollIntervalMs = optional(options.pollIntervalMs, WORKER_DEFAULTS.pollIntervalMs, (v) => validatePositiveMs(v, 'pollIntervalMs', MAX_TIMER_MS));
  const reclaimEveryMs = optional(options.reclaimEveryMs, Math.ceil(leaseMs / 2), (v) => validatePositiveMs(v, 'reclaimEveryMs', MAX_TIMER_MS));
  const backoffBaseMs = optional(options.backoffBaseMs, WORKER_DEFAULTS.backoffBaseMs, (v) => validateNonNegativeMs(v, 'backoffBaseMs'));
  const maxBackoffMs = optional(options.maxBackoffMs, WORKER_DEFAULTS.maxBackoffMs, (v) => validatePositiveMs(v, 'maxBackoffMs', MAX_DELAY_MS));
  const shutdownTimeoutMs = optional(options.shutdownTimeoutMs, WORKER_DEFAULTS.shutdownTimeoutMs, (v) => validateNonNegativeMs(v, 'shutdownTimeoutMs', MAX_TIMER_MS));
  const handlerTimeoutMs = options.handlerTimeoutMs === undefined ? null : validatePositiveMs(options.handlerTimeoutMs, 'handlerTimeoutMs', MAX_TIMER_MS);
  const abandonGraceMs = optional(options.abandonGraceMs, Math.min(leaseMs, WORKER_DEFAULTS.maxAbandonGraceMs), (v) =>
    validateNonNegativeMs(v, 'abandonGraceMs', MAX_TIMER_MS),
  );
  const completeBatchSize = optional(options.completeBatchSize, WORKER_DEFAULTS.completeBatchSize, (v) =>
    validatePositiveInt(v, 'completeBatchSize', MAX_COMPLETE_BATCH_SIZE),
  );
  if (completeBatchSize > 1 && typeof (store as Record<string, unknown>).completeMany !== 'function') {
    throw invalid('store', 'must be a Store (no completeMany() method); or set completeBatchSize: 1');
  }
  const completeBatchDelayMs = optional(options.completeBatchDelayMs, WORKER_DEFAULTS.completeBatchDelayMs, (v) =>
    validateNonNegativeMs(v, 'completeBatchDelayMs', MAX_TIMER_MS),
  );
  if (completeBatchDelayMs >= leaseMs - renewEveryMs) {
    throw invalid('completeBatchDelayMs', `must be below leaseMs − renewEveryMs (${leaseMs - renewEveryMs}) so a queued completion cannot outlive its lease, got ${completeBatchDelayMs}`);
  }
  const prune = resolvePrune(options.prune, store);
  if (options.logger !== undefined && (typeof options.logger !== 'object' || options.logger === null || typeof options.logger.child !== 'function')) {
    throw invalid('logger', 'must be a pino Logger');
  }
  if (options.logLevel !== undefined && !LOG_LEVELS.includes(options.logLevel)) {
    throw invalid('logLevel', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(options.logLevel)}`);
  }
  const pacing = options.pacing ?? systemPacing;
  if (typeof pacing !== 'object' || pacing === null || typeof pacing.now !== 'function' || typeof pacing.sleep !== 'function') {
    throw invalid('pacing', 'must have now() and sleep(ms, signal) functions');
  }
  return {
    id,
    discovery,
    hybrid,
    concurrency,
    leaseMs,
    renewEveryMs,
    pollIntervalMs,
    reclaimEveryMs,
    backoffBaseMs,
    maxBackoffMs,
    shutdownTimeoutMs,
    handlerTimeoutMs,
    abandonGraceMs,
    completeBatchSize,
    completeBatchDelayMs,
    prune,
    logLevel: options.logLevel,
    pacing,
  };
}

/**
 * Connections the worker itself needs from a store's pool besides its handlers: one each for the
 * claim loop, lease renewals and completions, so renewals never wait behind handlers.
 */
export const POOL_RESERVE = 3;

/**
 * A pool the handlers may share (you gave the store your pool or `sql`) must hold every handler's
 * connection and the worker's own: `max ≥ concurrency + POOL_RESERVE`, plus 1 when LISTEN holds a
 * pool connection (`pg`; the worker listens in both discovery modes). A pool the store created is
 * its own (handlers cannot take from it): `max ≥ POOL_RESERVE` (+1 for LISTEN). Stores that do not
 * report a {@link ConnectionBudget} are not checked.
 * @throws ValidationError INVALID_OPTION on `concurrency`, naming the pool's max, concurrency and the reserve
 */
function checkConnectionBudget(store: Store<unknown>, concurrency: number): void {
  const budget: Partial<ConnectionBudget> | undefined = store.connectionBudget;
  if (typeof budget !== 'object' || budget === null || typeof budget.max !== 'number' || !(budget.max > 0)) return;
  const listens = budget.listen === true && typeof (store as { listen?: unknown }).listen === 'function';
  const handlers = budget.shared === true ? concurrency : 0;
  const needed = handlers + POOL_RESERVE + (listens ? 1 : 0);
  if (budget.max >= needed) return;
  const parts = [
    ...(handlers > 0 ? [`concurrency ${concurrency} (each handler may hold a connection of this pool)`] : []),
    `${POOL_RESERVE} for claims, renewals and completions`,
    ...(listens ? ['1 held by LISTEN'] : []),
  ];
  const fewer = budget.max - needed + concurrency;
  throw invalid(
    'concurrency',
    `the store's connection pool has max ${budget.max}, below the ${needed} this worker needs: ${parts.join(' + ')}. ` +
      `Give the pool max ≥ ${needed}${handlers > 0 && fewer >= 1 ? `, or lower concurrency to ${fewer}` : ''}`,
  );
}

function validateHandlers(handlers: unknown): void {
  if (typeof handlers !== 'object' || handlers === null || Array.isArray(handlers)) throw invalid('handlers', 'must be an object mapping kind to handler');
  const kinds = Object.keys(handlers);
  if (kinds.length === 0) throw invalid('handlers', 'must register at least one handler');
  for (const kind of kinds) {
    validateKind(kind, `handlers[${JSON.stringify(kind)}]`);
    if (typeof (handlers as Record<string, unknown>)[kind] !== 'function') throw invalid(`handlers[${JSON.stringify(kind)}]`, 'must be a function');
  }
}

function validateDiscovery(mode: unknown): DiscoveryMode {
  if (mode !== 'poll' && mode !== 'hybrid') throw invalid('discovery', `must be 'poll' or 'hybrid', got ${JSON.stringify(mode)}`);
  return mode;
}

const MAX_WHEEL_LEVELS = 6;
const MAX_WHEEL_SLOTS = 4_096;
/** Largest wheel, in ticks: 2^40 (the wheel itself allows 2^52). */
const MAX_WHEEL_BITS = 40;

function resolveHybrid(options: unknown): ResolvedHybridOptions {
  if (options === undefined) return HYBRID_DEFAULTS;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw invalid('hybrid', 'must be an object');
  rejectUnknownFields(options, [...HYBRID_OPTION_NAMES], 'hybrid.');
  const o = options as HybridOptions;
  const d = HYBRID_DEFAULTS;
  const fallbackPollMs = optional(o.fallbackPollMs, d.fallbackPollMs, (v) => validatePositiveMs(v, 'hybrid.fallbackPollMs', MAX_TIMER_MS));
  const tickMs = optional(o.tickMs, d.tickMs, (v) => validatePositiveMs(v, 'hybrid.tickMs', 1_000));
  const levels = optional(o.levels, d.levels, (v) => validatePositiveInt(v, 'hybrid.levels', MAX_WHEEL_LEVELS));
  const slotsPerLevel = optional(o.slotsPerLevel, d.slotsPerLevel, (v) => validatePositiveInt(v, 'hybrid.slotsPerLevel', MAX_WHEEL_SLOTS));
  if (slotsPerLevel < 2 || !Number.isInteger(Math.log2(slotsPerLevel))) throw invalid('hybrid.slotsPerLevel', `must be a power of two 2..${MAX_WHEEL_SLOTS}, got ${slotsPerLevel}`);
  if (Math.log2(slotsPerLevel) * levels > MAX_WHEEL_BITS) throw invalid('hybrid.levels', `slotsPerLevel^levels must not exceed 2^${MAX_WHEEL_BITS}, got ${slotsPerLevel}^${levels}`);
  const loadLimit = optional(o.loadLimit, d.loadLimit, (v) => validatePositiveInt(v, 'hybrid.loadLimit', MAX_CONCURRENCY));
  const pauseThresholdMs = optional(o.pauseThresholdMs, d.pauseThresholdMs, (v) => validatePositiveMs(v, 'hybrid.pauseThresholdMs', MAX_TIMER_MS));
  // The worker loads tasks due within half the horizon; that must reach past the next fallback re-read.
  const lookAheadMs = Math.floor((tickMs * slotsPerLevel ** levels) / 2);
  if (lookAheadMs <= fallbackPollMs) {
    throw invalid('hybrid.tickMs', `the wheel horizon (tickMs × slotsPerLevel^levels = ${2 * lookAheadMs} ms) must exceed 2 × fallbackPollMs (${fallbackPollMs})`);
  }
  // Each load asks the store for tasks due within lookAheadMs: a store accepts at most MAX_DELAY_MS.
  if (lookAheadMs > MAX_DELAY_MS) {
    throw invalid('hybrid.levels', `half the wheel horizon (tickMs × slotsPerLevel^levels / 2 = ${lookAheadMs} ms) is what each load reads ahead; a store reads at most ${MAX_DELAY_MS} ms (100 years) ahead: use fewer levels, fewer slots or a smaller tickMs`);
  }
  return { fallbackPollMs, tickMs, levels, slotsPerLevel, loadLimit, pauseThresholdMs };
}

/**
 * @throws ValidationError INVALID_OPTION naming `prune`, `prune.<field>` (bad value, unknown field) or
 *         `store` (no `prune()` method)
 */
function resolvePrune(options: unknown, store: unknown): ResolvedPruneOptions | null {
  if (options === undefined) return null;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw invalid('prune', 'must be an object { olderThanMs, everyMs, batchSize? }');
  rejectUnknownFields(options, PRUNE_OPTION_NAMES, 'prune.');
  const o = options as Partial<PruneOptions>;
  if (o.olderThanMs === undefined) throw invalid('prune.olderThanMs', 'is required: how old finished history must be before it is deleted, in ms');
  if (o.everyMs === undefined) throw invalid('prune.everyMs', 'is required: the period between prunes, in ms');
  const olderThanMs = validateNonNegativeMs(o.olderThanMs, 'prune.olderThanMs', MAX_DELAY_MS);
  const everyMs = validatePositiveMs(o.everyMs, 'prune.everyMs', MAX_TIMER_MS);
  const batchSize = optional(o.batchSize, DEFAULT_PRUNE_BATCH, (v) => validatePositiveInt(v, 'prune.batchSize', MAX_PRUNE_BATCH));
  if (typeof (store as Record<string, unknown>).prune !== 'function') throw invalid('store', 'must be a Store with a prune() method when the prune option is set');
  return { olderThanMs, everyMs, batchSize };
}

function validateWorkerId(id: unknown): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) throw invalid('id', 'must be a string of 1..200 characters');
  if (/[\u0000-\u001f\u007f]/.test(id)) throw invalid('id', 'must not contain control characters');
  return id;
}
