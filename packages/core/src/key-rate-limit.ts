/**
 * Per-key rate limits (docs/contract.md#per-key-rate-limits): a kind declared with
 * {@link KeyRateLimitStore.setKeyRateLimit} gives every `limitKey` of that kind (a tenant, an API
 * key, the `limitKey` a task was scheduled with) at most `limit` claims (task starts) in EVERY interval
 * `[t, t + windowMs)` of claim times, by the store's clock, across every process. Tasks of the kind
 * without a limit key are not limited by it. It works beside the kind's per-key concurrency
 * (docs/contract.md#per-key-concurrency), per-kind caps, kind and queue rate limits and pauses: the
 * room of a key is the least of them.
 *
 * The window is the sliding log of kind and queue rate limits (`./rate-limit.ts` says why keeping the
 * `limit` most recent claim times of a key is enough), kept per (kind, limitKey).
 *
 * A declaration is a durable row, set once (a deploy script, `postpone limits key-rates set`), not a
 * worker option, for the reason rate limits give (docs/contract.md#rate-limits): every claimer then
 * applies the same limit.
 *
 * Types and input checks only (no I/O): `@postpone/memory` and `@postpone/postgres` implement
 * {@link KeyRateLimitStore}.
 */
import { ValidationError } from './errors/errors.js';
import { rejectUnknownFields, validateKind, validatePositiveInt } from './input/validate.js';
import { MAX_RATE_LIMIT, MAX_RATE_WINDOW_MS } from './rate-limit.js';

/** A per-key rate limit to declare: at most `limit` claims of `kind` per limit key in every `windowMs`. */
export interface KeyRateLimitInput {
  readonly kind: string;
  /** Claims per window per key, integer 1..10 000 (`MAX_RATE_LIMIT`). */
  readonly limit: number;
  /** The sliding window, whole ms 1..86 400 000 (`MAX_RATE_WINDOW_MS`). */
  readonly windowMs: number;
}

/** A stored per-key rate limit. */
export interface KeyRateLimitRecord {
  readonly kind: string;
  readonly limit: number;
  readonly windowMs: number;
  /** Limit keys of the kind whose window is full now (no claim of them may start before it reopens). */
  readonly heldKeys: number;
}

/**
 * Checks a declaration.
 * @throws ValidationError INVALID_OPTION (not an object, unknown field, `limit` not an integer 1..10 000, `windowMs` not whole ms 1..86 400 000), INVALID_KIND
 */
export function validateKeyRateLimit(input: unknown): { readonly kind: string; readonly limit: number; readonly windowMs: number } {
  if (typeof input !== 'object' || input === null) throw new ValidationError('INVALID_OPTION', 'keyRateLimit', 'must be an object { kind, limit, windowMs }');
  rejectUnknownFields(input as Record<string, unknown>, ['kind', 'limit', 'windowMs'], 'keyRateLimit.');
  const { kind, limit, windowMs } = input as { kind?: unknown; limit?: unknown; windowMs?: unknown };
  return { kind: validateKind(kind), limit: intOption(limit, 'limit', MAX_RATE_LIMIT), windowMs: intOption(windowMs, 'windowMs', MAX_RATE_WINDOW_MS) };
}

/**
 * Checks the target of {@link KeyRateLimitStore.deleteKeyRateLimit}: `{ kind }`.
 * @throws ValidationError INVALID_OPTION (not an object, unknown field), INVALID_KIND
 */
export function validateKeyRateLimitKind(input: unknown): string {
  if (typeof input !== 'object' || input === null) throw new ValidationError('INVALID_OPTION', 'target', 'must be an object { kind }');
  rejectUnknownFields(input as Record<string, unknown>, ['kind'], 'target.');
  return validateKind((input as { kind?: unknown }).kind);
}

function intOption(n: unknown, field: string, max: number): number {
  try {
    return validatePositiveInt(n, field, max);
  } catch (error) {
    throw new ValidationError('INVALID_OPTION', field, `must be an integer 1..${max}, got ${typeof n === 'number' || typeof n === 'string' ? String(n) : typeof n}`, { cause: error });
  }
}

/**
 * The store capability per-key rate limits rest on. Every store of this repository implements it
 * (the Citus dialect of the PostgreSQL store refuses declarations, `KEY_RATE_LIMITS_UNSUPPORTED`).
 *
 * Held back: a task whose key has no room is not claimed; it stays SCHEDULED, due time unchanged, no
 * attempt used. A claim's `onRateLimited` is also called when the claim names its `kinds`, every one
 * has a per-key rate limit, it took fewer tasks than its `limit`, and afterwards every due task of
 * those kinds in its queue (paused kinds aside) has a limit key whose window is full; `reopensInMs`
 * is then until the earliest of: a full key's window reopening, the next task of those kinds not yet
 * due becoming due (docs/contract.md#per-key-rate-limits).
 */
export interface KeyRateLimitStore {
  /**
   * Declares (or changes) the per-key rate limit of a kind; durable, for every process. A changed
   * `limit` or `windowMs` applies to the next claim; the claims already logged stay counted.
   * @throws ValidationError (see {@link validateKeyRateLimit}; nothing written; `KEY_RATE_LIMITS_UNSUPPORTED` on Citus), StoreClosedError, ConnectionLostError, StoreError
   */
  setKeyRateLimit(input: KeyRateLimitInput): Promise<KeyRateLimitRecord>;
  /**
   * Removes a kind's per-key rate limit and its logs. @returns true when one was removed
   * @throws ValidationError (see {@link validateKeyRateLimitKind}), StoreClosedError, ConnectionLostError, StoreError
   */
  deleteKeyRateLimit(target: { readonly kind: string }): Promise<boolean>;
  /** Every per-key rate limit, by kind, with its keys held now. */
  listKeyRateLimits(): Promise<KeyRateLimitRecord[]>;
}

/** True when `store` implements {@link KeyRateLimitStore}. */
export function isKeyRateLimitStore(store: unknown): store is KeyRateLimitStore {
  const s = store as Partial<KeyRateLimitStore> | null;
  return typeof s?.setKeyRateLimit === 'function' && typeof s.deleteKeyRateLimit === 'function' && typeof s.listKeyRateLimits === 'function';
}
