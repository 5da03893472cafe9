/**
 * Rate limits (docs/contract.md#rate-limits): at most `limit` claims (task starts) per `windowMs`
 * for every task of a kind, or of a queue, counted by the store's clock across every process.
 *
 * A limit is a durable row in the store, declared once with {@link RateLimitStore.setRateLimit} —
 * not a worker option: every claimer then applies the same limit, where per-worker options could
 * disagree (a worker started with an older configuration would claim past the limit of the others,
 * the trap of per-kind caps, docs/contract.md#kind-concurrency "Disagreeing caps").
 *
 * The window is sliding and exact: in EVERY interval `[t, t + windowMs)` of claim times at most
 * `limit` claims. The store keeps, per limit, the times of its `limit` most recent claims (a sliding
 * log); a claim at time `b` may take `limit − (logged claims later than b − windowMs)` tasks of the
 * limit. Keeping only the `limit` most recent is enough: if at least `limit` logged claims are later
 * than `b − windowMs`, the `limit` most recent all are, so the room is 0 either way. Claims logged at
 * a time later than `b` (a claimer whose transaction started later but committed first) are counted
 * too, so the bound holds for every window containing `b`.
 *
 * Types, input checks and that arithmetic only (no I/O): `@postpone/memory` and `@postpone/postgres`
 * implement {@link RateLimitStore} (the PostgreSQL store in SQL, `rateLimitClaimRooms` in `@postpone/postgres`).
 */
import { ValidationError } from './errors/errors.js';
import { rejectUnknownFields, validateKind, validatePositiveInt, validateQueue } from './input/validate.js';

/** Largest `limit` of a rate limit: the sliding log holds that many claim times per limit. */
export const MAX_RATE_LIMIT = 10_000;
/** Longest window of a rate limit: one day. */
export const MAX_RATE_WINDOW_MS = 86_400_000;

/** What a rate limit counts: every task of one kind (in any queue), or every task of one queue (of any kind). */
export type RateLimitScope = { readonly kind: string; readonly queue?: undefined } | { readonly queue: string; readonly kind?: undefined };

/** A rate limit to declare: its scope, at most `limit` claims per `windowMs`. */
export type RateLimitInput = RateLimitScope & {
  /** Claims per window, integer 1..{@link MAX_RATE_LIMIT}. */
  readonly limit: number;
  /** The sliding window, whole ms 1..{@link MAX_RATE_WINDOW_MS}. */
  readonly windowMs: number;
};

/** A stored rate limit, with its use at the store's now. */
export interface RateLimitRecord {
  readonly scope: 'kind' | 'queue';
  /** The kind or the queue. */
  readonly name: string;
  readonly limit: number;
  readonly windowMs: number;
  /** Claims in the window ending now (`(now − windowMs, now]`, later ones too). */
  readonly used: number;
  /** When the next claim may take a task of this limit: now when `used < limit`, else when the oldest counted claim leaves the window. */
  readonly reopensAt: Date;
}

/** A rate limit's scope, checked: `{ scope, name }`. */
export interface RateLimitKey {
  readonly scope: 'kind' | 'queue';
  readonly name: string;
}

/**
 * Checks a scope: exactly one of `kind` (as `validateKind`) or `queue` (as `validateQueue`).
 * @throws ValidationError INVALID_OPTION naming `scope` when both or neither are given; INVALID_KIND / INVALID_QUEUE
 */
export function validateRateLimitScope(input: unknown, field = 'scope'): RateLimitKey {
  if (typeof input !== 'object' || input === null) throw new ValidationError('INVALID_OPTION', field, 'must be an object with kind or queue');
  const { kind, queue } = input as { kind?: unknown; queue?: unknown };
  if ((kind === undefined) === (queue === undefined)) throw new ValidationError('INVALID_OPTION', field, 'give exactly one of kind or queue');
  return kind !== undefined ? { scope: 'kind', name: validateKind(kind) } : { scope: 'queue', name: validateQueue(queue) };
}

/**
 * Checks a rate limit to declare.
 * @throws ValidationError INVALID_OPTION (unknown field, scope, `limit` not an integer 1..10 000, `windowMs` not whole ms 1..86 400 000), INVALID_KIND, INVALID_QUEUE
 */
export function validateRateLimit(input: unknown): RateLimitKey & { readonly limit: number; readonly windowMs: number } {
  if (typeof input !== 'object' || input === null) throw new ValidationError('INVALID_OPTION', 'rateLimit', 'must be an object { kind | queue, limit, windowMs }');
  rejectUnknownFields(input as Record<string, unknown>, ['kind', 'queue', 'limit', 'windowMs'], 'rateLimit.');
  const key = validateRateLimitScope(input);
  const { limit, windowMs } = input as { limit?: unknown; windowMs?: unknown };
  return { ...key, limit: intOption(limit, 'limit', MAX_RATE_LIMIT), windowMs: intOption(windowMs, 'windowMs', MAX_RATE_WINDOW_MS) };
}

function intOption(n: unknown, field: string, max: number): number {
  try {
    return validatePositiveInt(n, field, max);
  } catch (error) {
    throw new ValidationError('INVALID_OPTION', field, `must be an integer 1..${max}, got ${typeof n === 'number' || typeof n === 'string' ? String(n) : typeof n}`, { cause: error });
  }
}

/**
 * The room of a limit at `nowMs`: `limit` less the logged claims later than `nowMs − windowMs`,
 * never below 0; and when the room is 0, the time it becomes 1 (the `limit`-th most recent claim
 * plus the window). `log` holds claim times in ms, any order.
 */
export function rateLimitRoom(log: readonly number[], nowMs: number, limit: number, windowMs: number): { room: number; reopensAtMs: number } {
  const recent = log.filter((t) => t > nowMs - windowMs).sort((a, b) => b - a);
  const room = Math.max(0, limit - recent.length);
  return { room, reopensAtMs: room > 0 ? nowMs : (recent[limit - 1] as number) + windowMs };
}

/** The log after `count` claims at `nowMs`: the `limit` most recent claim times. */
export function rateLimitRecord(log: readonly number[], nowMs: number, count: number, limit: number): number[] {
  return [...log, ...Array.from({ length: count }, () => nowMs)].sort((a, b) => b - a).slice(0, limit);
}

/** Passed to a claim's `onRateLimited` (`ClaimParams`): everything the claim may take is held back by rate limits. */
export interface RateLimited {
  /** Ms from the store's clock until the earliest limit that held the claim back lets a task through again. */
  readonly reopensInMs: number;
}

/**
 * The store capability rate limits rest on. Every store of this repository implements it; the
 * PostgreSQL store applies a limit in every claim that may take tasks of its scope (docs/contract.md#rate-limits).
 */
export interface RateLimitStore {
  /**
   * Declares (or changes) the rate limit of a kind or a queue; durable, for every process. A changed
   * `limit` or `windowMs` applies to the next claim; the claims already logged stay counted.
   * @throws ValidationError (see {@link validateRateLimit}; nothing written), StoreClosedError, ConnectionLostError, StoreError
   */
  setRateLimit(input: RateLimitInput): Promise<RateLimitRecord>;
  /**
   * Removes the rate limit of a kind or a queue. @returns true when one was removed
   * @throws ValidationError (see {@link validateRateLimitScope}), StoreClosedError, ConnectionLostError, StoreError
   */
  deleteRateLimit(scope: RateLimitScope): Promise<boolean>;
  /** Every rate limit with its use now, by scope then name. */
  listRateLimits(): Promise<RateLimitRecord[]>;
}

/** True when `store` implements {@link RateLimitStore}. */
export function isRateLimitStore(store: unknown): store is RateLimitStore {
  const s = store as Partial<RateLimitStore> | null;
  return typeof s?.setRateLimit === 'function' && typeof s.deleteRateLimit === 'function' && typeof s.listRateLimits === 'function';
}

/**
 * Checks a claim's `onRateLimited`: a function or undefined.
 * @throws ValidationError INVALID_OPTION naming `onRateLimited`
 */
export function validateOnRateLimited(value: unknown): ((limited: RateLimited) => void) | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new ValidationError('INVALID_OPTION', 'onRateLimited', `must be a function, got ${value === null ? 'null' : typeof value}`);
  return value as (limited: RateLimited) => void;
}

/** Calls a claim's `onRateLimited`; what it throws is dropped (the claim has committed, its answer must still reach the caller). */
export function notifyRateLimited(callback: (limited: RateLimited) => void, limited: RateLimited): void {
  try {
    callback(limited);
  } catch {
    // The caller's callback failed; the claim's own result stands.
  }
}
