/**
 * Per-key concurrency and fair share (docs/contract.md#per-key-concurrency): a kind declared with
 * {@link KeyLimitStore.setKeyConcurrency} has at most `limit` CLAIMED tasks per (kind, limitKey) —
 * the `limitKey` a task was scheduled with (a tenant, an API key) — counted across every process and
 * queue, and its claims rotate among the keys with due work (round-robin: per key its first due
 * tasks, merged by per-key rank), so one key's backlog cannot hold back another key's due task.
 *
 * A declaration is a durable row, set once (a deploy script, `postpone limits keys set`), not a worker
 * option, for the reason rate limits give (docs/contract.md#rate-limits): every claimer then applies
 * the same limit.
 *
 * Types and input checks only (no I/O): `@postpone/memory` and `@postpone/postgres` implement
 * {@link KeyLimitStore}.
 */
import { ValidationError } from './errors/errors.js';
import { rejectUnknownFields, validateKind, validatePositiveInt } from './input/validate.js';

/** Largest per-key concurrency limit. */
export const MAX_KEY_CONCURRENCY = 1_000_000;

/** A per-key concurrency limit to declare: at most `limit` CLAIMED tasks of `kind` per limit key. */
export interface KeyConcurrencyInput {
  readonly kind: string;
  /** CLAIMED tasks per (kind, limitKey), integer 1..{@link MAX_KEY_CONCURRENCY}. */
  readonly limit: number;
}

/** A stored per-key concurrency limit. */
export interface KeyConcurrencyRecord {
  readonly kind: string;
  readonly limit: number;
}

/**
 * Checks a declaration.
 * @throws ValidationError INVALID_OPTION (not an object, unknown field, `limit` not an integer 1..1 000 000), INVALID_KIND
 */
export function validateKeyConcurrency(input: unknown): KeyConcurrencyRecord {
  if (typeof input !== 'object' || input === null) throw new ValidationError('INVALID_OPTION', 'keyConcurrency', 'must be an object { kind, limit }');
  rejectUnknownFields(input as Record<string, unknown>, ['kind', 'limit'], 'keyConcurrency.');
  const { kind, limit } = input as { kind?: unknown; limit?: unknown };
  const name = validateKind(kind);
  try {
    return { kind: name, limit: validatePositiveInt(limit, 'limit', MAX_KEY_CONCURRENCY) };
  } catch (error) {
    throw new ValidationError('INVALID_OPTION', 'limit', `must be an integer 1..${MAX_KEY_CONCURRENCY}, got ${typeof limit === 'number' || typeof limit === 'string' ? String(limit) : typeof limit}`, {
      cause: error,
    });
  }
}

/**
 * Checks the target of {@link KeyLimitStore.deleteKeyConcurrency}: `{ kind }`.
 * @throws ValidationError INVALID_OPTION (not an object, unknown field), INVALID_KIND
 */
export function validateKeyConcurrencyKind(input: unknown): string {
  if (typeof input !== 'object' || input === null) throw new ValidationError('INVALID_OPTION', 'target', 'must be an object { kind }');
  rejectUnknownFields(input as Record<string, unknown>, ['kind'], 'target.');
  return validateKind((input as { kind?: unknown }).kind);
}

/**
 * The store capability per-key concurrency rests on. Every store of this repository implements it;
 * the PostgreSQL store applies a declaration in every claim that may take tasks of its kind.
 */
export interface KeyLimitStore {
  /**
   * Declares (or changes) the per-key concurrency limit of a kind; durable, for every process. A
   * lowered limit claims nothing of a key until its CLAIMED tasks fall below it (nothing is taken back).
   * @throws ValidationError (see {@link validateKeyConcurrency}; nothing written), StoreClosedError, ConnectionLostError, StoreError
   */
  setKeyConcurrency(input: KeyConcurrencyInput): Promise<KeyConcurrencyRecord>;
  /**
   * Removes a kind's per-key limit. @returns true when one was removed
   * @throws ValidationError (see {@link validateKeyConcurrencyKind}), StoreClosedError, ConnectionLostError, StoreError
   */
  deleteKeyConcurrency(target: { readonly kind: string }): Promise<boolean>;
  /** Every per-key limit, by kind. */
  listKeyConcurrency(): Promise<KeyConcurrencyRecord[]>;
}

/** True when `store` implements {@link KeyLimitStore}. */
export function isKeyLimitStore(store: unknown): store is KeyLimitStore {
  const s = store as Partial<KeyLimitStore> | null;
  return typeof s?.setKeyConcurrency === 'function' && typeof s.deleteKeyConcurrency === 'function' && typeof s.listKeyConcurrency === 'function';
}
