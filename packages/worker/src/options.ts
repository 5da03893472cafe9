/**
 * Worker options, their defaults, and their validation (core `ValidationError`, code INVALID_OPTION,
 * or INVALID_KIND for a bad handler name). Nothing starts until every option is valid.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  type ConnectionBudget,
  DEFAULT_MAX_BACKOFF_MS,
  type Jitter,
  JITTERS,
  type RandomSource,
  type RetryPolicy,
  validateRetryPolicy,
  type Store,
  ValidationError,
  validateKind,
  validateKindLimits,
  validateQueue,
  DEFAULT_QUEUE,
  validateNonNegativeMs,
  validatePositiveInt,
  validatePositiveMs,
  MAX_COMPLETE_MANY,
  MAX_DELAY_MS,
  MAX_PRUNE_BATCH,
  DEFAULT_PRUNE_BATCH,
  rejectUnknownFields,
  type HistoryRetention,
  validatePruneParams,
  type ValidationCode,
} from '@postpone/core';
import type { LevelWithSilent, Logger } from 'pino';
import type { HandlerMap, PayloadMap } from './attempt/handler.js';
import { type DiscoveryMode, HYBRID_DEFAULTS, type HybridOptions, type ResolvedHybridOptions, resolveHybridOptions } from './discovery/hybrid-options.js';
import { MAX_TIMER_MS, type Pacing, systemPacing } from '@postpone/wheel';

/** Most tasks one claim may ask for (the store's limit, docs/contract.md#transitions). */
export const MAX_CONCURRENCY = 10_000;

export const WORKER_DEFAULTS = Object.freeze({
  discovery: 'poll' as DiscoveryMode,
  concurrency: 10,
  leaseMs: 30_000,
  pollIntervalMs: 1_000,
  backoffBaseMs: 1_000,
  maxBackoffMs: DEFAULT_MAX_BACKOFF_MS,
  shutdownTimeoutMs: 10_000,
  /** 15 minutes: a hung handler fails its attempt instead of holding its task forever. */
  handlerTimeoutMs: 900_000,
  maxAbandonGraceMs: 5_000,
  completeBatchSize: 50,
  completeBatchDelayMs: 0,
  /** `ctx.progress` writes at most once a second per task (docs/contract.md#progress). */
  progressIntervalMs: 1_000,
  prefetch: 0,
  /** One minute: due tasks of a kind nobody claims are reported after this long. */
  unclaimedAfterMs: 60_000,
});

/** The worker's scheduled prune of history (see {@link WorkerOptions.prune}). */
export interface PruneOptions {
  /** Delete DONE, CANCELLED and DEAD tasks finished more than this many ms before the store's now, 0..MAX_DELAY_MS (100 years). Give this or `retention`. */
  readonly olderThanMs?: number;
  /**
   * Retention per terminal state instead (core `HistoryRetention`, docs/contract.md#retention), e.g.
   * `{ DONE: 86_400_000, DEAD: 7 * 86_400_000 }`: `store.prune({ retention })`, which on PostgreSQL
   * drops whole history partitions and creates the next days' ones.
   */
  readonly retention?: HistoryRetention;
  /** Period between the end of one prune and the start of the next, in ms of the worker's pacing (1..2³¹−1). */
  readonly everyMs: number;
  /** Rows per batch (each its own short transaction), 1..10 000 (default 1 000, core `DEFAULT_PRUNE_BATCH`). */
  readonly batchSize?: number;
}

export interface ResolvedPruneOptions {
  /** Null when `retention` is set. */
  readonly olderThanMs: number | null;
  readonly retention: HistoryRetention | null;
  readonly everyMs: number;
  readonly batchSize: number;
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
  /**
   * Which kinds the worker claims (docs/contract.md#queues): `'handlers'` (default) only the kinds
   * of `handlers` — a task of another kind is never claimed, so it burns no attempt here (in a rolling
   * deploy an older worker leaves a newer kind to the workers that know it); `'any'` every kind of the
   * queue, a kind without a handler failing as UnknownKindError (the behaviour before this option).
   */
  readonly claimKinds?: 'handlers' | 'any';
  /**
   * The one queue this worker claims from (default `'default'`; see `schedule({ queue })`). Run one
   * worker per queue, each with its own `concurrency`, to give queues separate capacity.
   */
  readonly queue?: string;
  /**
   * Per-kind concurrency caps across the fleet, `{ [kind]: n }` (0..1 000 kinds, n 1..1 000 000):
   * passed as `kindLimits` to every claim, so at most n tasks of the kind are CLAIMED at once by all
   * workers together, whatever each one's `concurrency` (exact; docs/contract.md#kind-concurrency).
   * Give every worker that claims the kind the same caps: a claim applies only its own. Default: none.
   */
  readonly kindConcurrency?: Readonly<Record<string, number>>;
  /** Worker identity stored as `lease_owner` and with each DONE in history (`getCompletion`), 1..200 characters (default `<host>-<pid>-<random>`). */
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
  /**
   * Jitter of the retry delay (default `'none'`): `'full'` waits a uniform draw in `[0, d]`, `'equal'`
   * `d/2` plus a draw in `[0, d/2]`, where `d` is the capped backoff — AWS Architecture Blog,
   * "Exponential Backoff And Jitter" (core `retryDelayMs`, docs/contract.md#retry-policy).
   */
  readonly jitter?: Jitter;
  /**
   * Retry policy per kind, e.g. `{ 'send-email': { maxAttempts: 10, baseMs: 5_000, capMs: 600_000, jitter: 'full' } }`.
   * Each field is resolved on its own: the task's own policy (`schedule({ retry })`) > this kind's >
   * the worker default (`backoffBaseMs`, `maxBackoffMs`, `jitter`; for `maxAttempts` the task row's,
   * i.e. the schedule default 5). An expired lease reclaimed is counted against the row's
   * `maxAttempts` (no worker is there to resolve the kind's) (docs/contract.md#retry-policy).
   */
  readonly retryByKind?: Readonly<Record<string, RetryPolicy>>;
  /** Uniform random numbers in `[0, 1)` for jitter (default `Math.random`); tests pass a seeded source. */
  readonly random?: RandomSource;
  /**
   * Keep DONE tasks in history (default true: every completion moves the task to `task_history`
   * with its completion, pruned by `retention`). `false` — DONE not kept, for this worker's queue
   * (as graphile-worker, or BullMQ's `removeOnComplete`): each completion is the fenced delete of
   * the live row alone (`keep: false` of complete / completeMany), no history row.
   * What is given up (docs/contract.md#done-not-kept): a repeated complete after a lost reply
   * answers NOT_FOUND instead of DONE (the worker counts it finished), cancel after completion
   * answers NOT_FOUND instead of TOO_LATE, and `getTask` forgets the task. DEAD and CANCELLED are
   * always kept. `keepDoneByKind` overrides it per kind.
   */
  readonly keepDone?: boolean;
  /** Per kind, `{ [kind]: boolean }`: overrides `keepDone` for the tasks of that kind (e.g. `{ 'send-email': false }`). */
  readonly keepDoneByKind?: Readonly<Record<string, boolean>>;
  /** How long `stop()` waits for running handlers before handing their tasks back (default 10 000). */
  readonly shutdownTimeoutMs?: number;
  /**
   * Per-attempt time limit in ms, 1..2³¹−1 (default 900 000, 15 minutes): the handler's signal aborts
   * with reason `timeout` and the attempt fails — one failure counted, so a handler that hangs
   * (`new Promise(() => {})`) ends DEAD after `maxAttempts` instead of being handed back at every
   * stop without ever failing. A handler that ignores its signal is abandoned `abandonGraceMs` later
   * and its attempt failed the same way. `null` turns the limit off: a hung handler then holds its
   * slot until the worker stops and is handed back (no failure counted); the worker logs a warning
   * and emits a process warning (code `POSTPONE_NO_HANDLER_TIMEOUT`) at `start()`.
   * @throws ValidationError INVALID_OPTION for anything else (0 included: use `null`)
   */
  readonly handlerTimeoutMs?: number | null;
  /** After a handler's signal aborts, how long to wait for it to settle before freeing its slot (default `min(leaseMs, 5 000)`). */
  readonly abandonGraceMs?: number;
  /**
   * Most completions sent in one `store.completeMany`, 1..10 000 (default 50). A handler that settles
   * has its fenced complete queued; the queue is sent when it holds this many, or
   * `completeBatchDelayMs` after its first entry. Each task keeps its own outcome, events and history
   * row; its slot frees when the batch is acknowledged. `onCompleteTx` writes share the batch (group
   * commit): they run in the batch's one transaction, each task's only when its fenced move hit, and
   * commit with the DONEs. If the batch fails (a write threw, a deadlock between writes of two tasks,
   * a lost connection: nothing committed, or at COMMIT an unknown outcome), each task is completed
   * alone with `store.complete`, which is safe (a committed task answers DONE again, its writes not
   * run twice): a write that throws there fails its own attempt only. 1 turns batching off: every
   * completion uses `store.complete`, its writes in a transaction of their own.
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
   * `ctx.progress(value)` of a handler writes the task's progress at most once per this many ms per
   * task, 1..2³¹−1 (default 1 000; docs/contract.md#progress): values reported meanwhile are
   * coalesced (only the newest is written), and the last one is always written before the attempt's
   * end is reported. Each write is one fenced UPDATE (`store.reportProgress`).
   */
  readonly progressIntervalMs?: number;
  /**
   * The local queue: how many tasks the worker may claim AHEAD of its free slots, 0..10 000 (default
   * 0: off, each claim asks only for the free slots). With `prefetch` n a claim asks for up to
   * `concurrency + n − running − queued` tasks, and the loop claims again once the queue is down to
   * half of that room, so one claim (one statement) serves many tasks. Queued tasks are CLAIMED in
   * the store with their attempt counted: the worker renews all their leases in one `extendMany`
   * every `renewEveryMs`, never starts one whose lease could have run out (it hands it back with a
   * fenced `release`), and hands every queued task back at once on `stop()` (no failure counted;
   * docs/contract.md#local-queue). Off by default because queued tasks are held from other workers
   * (and count against `kindConcurrency` caps) while they wait; a good value for short handlers is
   * `2 × concurrency` to `4 × concurrency`.
   */
  readonly prefetch?: number;
  /**
   * Prune history on a schedule while the worker runs: `store.prune({ olderThanMs, batchSize })` at
   * start, then `everyMs` after each prune ended; stopped with the worker. Results are `pruned`
   * events, failures `error` events (operation `prune`). Default: no pruning. The store must have
   * `prune()` (every Postpone store does).
   */
  readonly prune?: PruneOptions;
  /**
   * Report due tasks of kinds nobody claims, in ms 1..2³¹−1 (default 60 000); `null` turns it off.
   * At the reclaim sweep, at most once per this period and first this long after `start()`, the
   * worker reads `store.unclaimedKinds({ dueForMs })` — the (queue, kind) pairs whose oldest task
   * has been due this long while none of them is CLAIMED — and, for the pairs it does not handle
   * itself (another queue, or a kind without a handler here), emits `unclaimedKinds` and logs a
   * `warn` line per pair naming the kind, the count, how long, its own kinds and the closest of them
   * (a likely typo); a pair's line is repeated at most every 10 periods while it stays. The tasks
   * are left alone. Best-effort: a failed read is an `error` event (operation `unclaimedKinds`).
   * @throws ValidationError INVALID_OPTION for anything but null or whole ms 1..2³¹−1
   */
  readonly unclaimedAfterMs?: number | null;
  /** A pino logger to log through (a child bound to the worker id is used). */
  readonly logger?: Logger;
  /** Log level: of the built-in logger (default `silent`), or of the child of `logger`. */
  readonly logLevel?: LevelWithSilent;
  /** Monotonic clock and timer (default `performance.now()` + `setTimeout`); tests pass `ManualPacing`. */
  readonly pacing?: Pacing;
}

export interface ResolvedOptions {
  readonly id: string;
  readonly claimKinds: 'handlers' | 'any';
  readonly queue: string;
  /** Null: no caps. */
  readonly kindConcurrency: Readonly<Record<string, number>> | null;
  readonly discovery: DiscoveryMode;
  readonly hybrid: ResolvedHybridOptions;
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly renewEveryMs: number;
  readonly pollIntervalMs: number;
  readonly reclaimEveryMs: number;
  readonly backoffBaseMs: number;
  readonly maxBackoffMs: number;
  readonly jitter: Jitter;
  readonly retryByKind: Readonly<Record<string, RetryPolicy>>;
  readonly random: RandomSource;
  readonly keepDone: boolean;
  readonly keepDoneByKind: Readonly<Record<string, boolean>>;
  readonly shutdownTimeoutMs: number;
  readonly handlerTimeoutMs: number | null;
  readonly abandonGraceMs: number;
  readonly completeBatchSize: number;
  readonly completeBatchDelayMs: number;
  readonly progressIntervalMs: number;
  /** Tasks claimed ahead of free slots (the local queue); 0: off. */
  readonly prefetch: number;
  /** Null: no scheduled prune. */
  readonly prune: ResolvedPruneOptions | null;
  /** Null: kinds nobody claims are not reported. */
  readonly unclaimedAfterMs: number | null;
  readonly logLevel: LevelWithSilent | undefined;
  readonly pacing: Pacing;
}

const STORE_METHODS = ['claim', 'extend', 'extendMany', 'complete', 'fail', 'release', 'reclaimExpired', 'getTask'] as const;
const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function invalid(field: string, message: string): ValidationError {
  return new ValidationError('INVALID_OPTION', field, message);
}

/** A default worker id: `<host>-<pid>-<6 hex>`. */
export function defaultWorkerId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

type Resolving = { -readonly [K in keyof ResolvedOptions]: ResolvedOptions[K] };

/**
 * One option: its value when not given (it may read the options before it in {@link RULES}), and
 * the check of a given value, which throws ValidationError naming `field` or returns the value.
 */
interface Rule<K extends keyof Resolving = keyof Resolving> {
  readonly name: K;
  readonly fallback: (resolved: Resolving) => Resolving[K];
  readonly check: (value: unknown, field: string, store: Record<string, unknown>) => Resolving[K];
}

const rule = <K extends keyof Resolving>(name: K, fallback: Rule<K>['fallback'], check: Rule<K>['check']): Rule => ({ name, fallback, check }) as Rule;
const positiveMs = (max: number) => (value: unknown, field: string) => validatePositiveMs(value, field, max);
const nonNegativeMs = (max: number) => (value: unknown, field: string) => validateNonNegativeMs(value, field, max);
const count = (max: number) => (value: unknown, field: string) => validatePositiveInt(value, field, max);
const defaults = WORKER_DEFAULTS;

/** Every option but `store`, `handlers` and `logger`, in resolution order. */
const RULES: readonly Rule[] = [
  rule('id', defaultWorkerId, validateWorkerId),
  rule('claimKinds', () => 'handlers', (value, field) => {
    if (value !== 'handlers' && value !== 'any') throw invalid(field, `must be 'handlers' or 'any', got ${JSON.stringify(value)}`);
    return value;
  }),
  rule('queue', () => DEFAULT_QUEUE, (value, field) => validateQueue(value, field)),
  rule('kindConcurrency', () => null, (value, field) => {
    const caps = validateKindLimits(value, field);
    return caps === null ? null : Object.freeze(Object.fromEntries(caps));
  }),
  rule('concurrency', () => defaults.concurrency, count(MAX_CONCURRENCY)),
  rule('leaseMs', () => defaults.leaseMs, positiveMs(MAX_TIMER_MS)),
  rule('renewEveryMs', (r) => Math.max(1, Math.floor(r.leaseMs / 3)), positiveMs(MAX_TIMER_MS)),
  rule('discovery', () => defaults.discovery, validateDiscovery),
  rule('hybrid', () => HYBRID_DEFAULTS, resolveHybridOptions),
  rule('pollIntervalMs', () => defaults.pollIntervalMs, positiveMs(MAX_TIMER_MS)),
  rule('reclaimEveryMs', (r) => Math.ceil(r.leaseMs / 2), positiveMs(MAX_TIMER_MS)),
  rule('backoffBaseMs', () => defaults.backoffBaseMs, nonNegativeMs(MAX_DELAY_MS)),
  rule('maxBackoffMs', () => defaults.maxBackoffMs, positiveMs(MAX_DELAY_MS)),
  rule('jitter', () => 'none', validateJitter),
  rule('retryByKind', () => Object.freeze({}), resolveRetryByKind),
  rule('random', () => Math.random, validateRandom),
  rule('keepDone', () => true, (value, field) => {
    if (typeof value !== 'boolean') throw invalid(field, `must be a boolean, got ${typeof value}`);
    return value;
  }),
  rule('keepDoneByKind', () => Object.freeze({}), resolveKeepDoneByKind),
  rule('shutdownTimeoutMs', () => defaults.shutdownTimeoutMs, nonNegativeMs(MAX_TIMER_MS)),
  rule('handlerTimeoutMs', () => defaults.handlerTimeoutMs, validateHandlerTimeout),
  rule('abandonGraceMs', (r) => Math.min(r.leaseMs, defaults.maxAbandonGraceMs), nonNegativeMs(MAX_TIMER_MS)),
  rule('completeBatchSize', () => defaults.completeBatchSize, count(MAX_COMPLETE_MANY)),
  rule('completeBatchDelayMs', () => defaults.completeBatchDelayMs, nonNegativeMs(MAX_TIMER_MS)),
  rule('progressIntervalMs', () => defaults.progressIntervalMs, positiveMs(MAX_TIMER_MS)),
  rule('prefetch', () => defaults.prefetch, (value, field) => (value === 0 ? 0 : validatePositiveInt(value, field, MAX_CONCURRENCY))),
  rule('prune', () => null, resolvePrune),
  rule('unclaimedAfterMs', () => defaults.unclaimedAfterMs, (value, field) => (value === null ? null : validatePositiveMs(value, field, MAX_TIMER_MS))),
  rule('logLevel', () => undefined, validateLogLevel),
  rule('pacing', () => systemPacing, validatePacing),
];

const WORKER_OPTION_NAMES: readonly string[] = ['store', 'handlers', 'logger', ...RULES.map((r) => r.name)];
const PRUNE_OPTION_NAMES: readonly string[] = ['olderThanMs', 'retention', 'everyMs', 'batchSize'];

/**
 * Validates every option and fills in the defaults.
 * @throws ValidationError INVALID_OPTION naming the field (e.g. `renewEveryMs: must be below leaseMs (1000), got 1000`;
 *         `concurrency` for a shared pool too small for it), INVALID_KIND for a bad handler name
 */
export function resolveOptions<Tx, M extends PayloadMap>(options: WorkerOptions<Tx, M>): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw invalid('options', 'must be an object');
  rejectUnknownFields(options, WORKER_OPTION_NAMES);
  const store = options.store as unknown as Record<string, unknown>;
  if (typeof store !== 'object' || store === null) throw invalid('store', 'must be a Store');
  for (const method of STORE_METHODS) {
    if (typeof store[method] !== 'function') throw invalid('store', `must be a Store (no ${method}() method)`);
  }
  validateHandlers(options.handlers);
  if (options.logger !== undefined && (typeof options.logger !== 'object' || options.logger === null || typeof options.logger.child !== 'function')) {
    throw invalid('logger', 'must be a pino Logger');
  }
  const given = options as unknown as Record<string, unknown>;
  const resolved = {} as Resolving;
  for (const { name, fallback, check } of RULES) {
    (resolved as Record<string, unknown>)[name] = given[name] === undefined ? fallback(resolved) : check(given[name], name, store);
  }
  const { leaseMs, renewEveryMs, concurrency, completeBatchSize, completeBatchDelayMs } = resolved;
  if (renewEveryMs >= leaseMs) throw invalid('renewEveryMs', `must be below leaseMs (${leaseMs}) so the lease is renewed before it runs out, got ${renewEveryMs}`);
  checkConnectionBudget(options.store as Store<unknown>, concurrency);
  if (completeBatchSize > 1 && typeof store.completeMany !== 'function') {
    throw invalid('store', 'must be a Store (no completeMany() method); or set completeBatchSize: 1');
  }
  if (completeBatchDelayMs >= leaseMs - renewEveryMs) {
    throw invalid('completeBatchDelayMs', `must be below leaseMs − renewEveryMs (${leaseMs - renewEveryMs}) so a queued completion cannot outlive its lease, got ${completeBatchDelayMs}`);
  }
  return resolved;
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

/** `null` (no time limit, explicitly) or whole ms 1..2³¹−1; 0 is refused with a hint, not read as "off". */
function validateHandlerTimeout(value: unknown, field: string): number | null {
  if (value === null) return null;
  if (value === 0) throw invalid(field, 'must be whole milliseconds 1..2147483647, or null to run handlers without a time limit, got 0');
  return validatePositiveMs(value, field, MAX_TIMER_MS);
}

function validateDiscovery(mode: unknown): DiscoveryMode {
  if (mode !== 'poll' && mode !== 'hybrid') throw invalid('discovery', `must be 'poll' or 'hybrid', got ${JSON.stringify(mode)}`);
  return mode;
}

/**
 * @throws ValidationError INVALID_OPTION naming `prune`, `prune.<field>` (bad value, unknown field) or
 *         `store` (no `prune()` method)
 */
function resolvePrune(options: unknown, _field: string, store: Record<string, unknown>): ResolvedPruneOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw invalid('prune', 'must be an object { olderThanMs, everyMs, batchSize? }');
  rejectUnknownFields(options, PRUNE_OPTION_NAMES, 'prune.');
  const o = options as Partial<PruneOptions>;
  if (o.olderThanMs === undefined && o.retention === undefined) {
    throw invalid('prune.olderThanMs', 'is required (or retention): how old finished history must be before it is deleted, in ms');
  }
  if (o.olderThanMs !== undefined && o.retention !== undefined) throw invalid('prune.retention', 'give olderThanMs or retention, not both');
  if (o.everyMs === undefined) throw invalid('prune.everyMs', 'is required: the period between prunes, in ms');
  const olderThanMs = o.olderThanMs === undefined ? null : validateNonNegativeMs(o.olderThanMs, 'prune.olderThanMs', MAX_DELAY_MS);
  let retention: HistoryRetention | null = null;
  if (o.retention !== undefined) {
    try {
      retention = validatePruneParams({ retention: o.retention }).retention;
    } catch (error) {
      // The same check as store.prune, the field named from the worker's options (`prune.retention.DONE`).
      if (ValidationError.isInstance(error)) throw new ValidationError(error.code as ValidationCode, `prune.${error.field}`, error.message.slice(error.field.length + 2));
      throw error;
    }
  }
  const everyMs = validatePositiveMs(o.everyMs, 'prune.everyMs', MAX_TIMER_MS);
  const batchSize = o.batchSize === undefined ? DEFAULT_PRUNE_BATCH : validatePositiveInt(o.batchSize, 'prune.batchSize', MAX_PRUNE_BATCH);
  if (typeof store.prune !== 'function') throw invalid('store', 'must be a Store with a prune() method when the prune option is set');
  return { olderThanMs, retention, everyMs, batchSize };
}

function validateJitter(jitter: unknown): Jitter {
  if (!JITTERS.includes(jitter as Jitter)) throw invalid('jitter', `must be one of ${JITTERS.join(', ')}, got ${JSON.stringify(jitter)}`);
  return jitter as Jitter;
}

/** @throws ValidationError INVALID_OPTION naming `retryByKind[<kind>].<field>`, INVALID_KIND for a bad kind name */
function resolveRetryByKind(map: unknown): Readonly<Record<string, RetryPolicy>> {
  if (typeof map !== 'object' || map === null || Array.isArray(map)) throw invalid('retryByKind', 'must be an object mapping kind to { maxAttempts?, baseMs?, capMs?, jitter? }');
  // fromEntries defines each kind as an own key: assigning would run the prototype setter for a kind
  // named "__proto__" (a valid kind name) and drop its policy silently.
  const out = Object.fromEntries(
    Object.entries(map).map(([kind, policy]) => {
      const field = `retryByKind[${JSON.stringify(kind)}]`;
      validateKind(kind, field);
      return [kind, Object.freeze(validateRetryPolicy(policy, field))];
    }),
  ) as Record<string, RetryPolicy>;
  return Object.freeze(out);
}

/** @throws ValidationError INVALID_OPTION naming `keepDoneByKind[<kind>]`, INVALID_KIND for a bad kind name */
function resolveKeepDoneByKind(map: unknown): Readonly<Record<string, boolean>> {
  if (typeof map !== 'object' || map === null || Array.isArray(map)) throw invalid('keepDoneByKind', 'must be an object mapping kind to a boolean');
  const out = Object.fromEntries(
    Object.entries(map).map(([kind, keep]) => {
      const field = `keepDoneByKind[${JSON.stringify(kind)}]`;
      validateKind(kind, field);
      if (typeof keep !== 'boolean') throw invalid(field, `must be a boolean, got ${typeof keep}`);
      return [kind, keep];
    }),
  ) as Record<string, boolean>;
  return Object.freeze(out);
}

function validateRandom(random: unknown): RandomSource {
  if (typeof random !== 'function') throw invalid('random', 'must be a function returning a number in [0, 1)');
  return random as RandomSource;
}

function validateWorkerId(id: unknown): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) throw invalid('id', 'must be a string of 1..200 characters');
  if (/[\u0000-\u001f\u007f]/.test(id)) throw invalid('id', 'must not contain control characters');
  return id;
}

function validateLogLevel(level: unknown): LevelWithSilent {
  if (typeof level !== 'string' || !LOG_LEVELS.includes(level)) throw invalid('logLevel', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  return level as LevelWithSilent;
}

function validatePacing(pacing: unknown): Pacing {
  const p = pacing as Partial<Pacing> | null;
  if (typeof p !== 'object' || p === null || typeof p.now !== 'function' || typeof p.sleep !== 'function') {
    throw invalid('pacing', 'must have now() and sleep(ms, signal) functions');
  }
  return p as Pacing;
}
