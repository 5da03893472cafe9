/**
 * Limits and checks of store-call parameters shared by every store, so they never drift apart.
 */
import { MAX_ERROR_LENGTH } from './errors/describe-thrown.js';
import { ValidationError } from './errors/errors.js';
import { parseTaskId, rejectUnknownFields, type TaskId, validateAttempt, validateDelayMs, validateDueAt, validateMaxAttempts } from './input/validate.js';

/** Longest accepted worker identity, in characters. */
export const MAX_OWNER_LENGTH = 200;
/** Largest claim batch (Store contract, ClaimParams.limit). */
export const MAX_CLAIM_LIMIT = 10_000;
/** Default and largest batch of reclaimExpired / peekDue. */
export const DEFAULT_BATCH_LIMIT = 1_000;
export const MAX_BATCH_LIMIT = 10_000;

/** A worker identity: 1..200 characters without `\u0000` (PostgreSQL `text` cannot store it, §8.3). */
export function validateOwner(owner: unknown, field = 'owner'): string {
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > MAX_OWNER_LENGTH || owner.includes('\u0000')) {
    throw new ValidationError('INVALID_OPTION', field, `must be a string of 1..${MAX_OWNER_LENGTH} characters without \\u0000`);
  }
  return owner;
}

/**
 * The text recorded in `last_error`: the first 2 000 characters, `\u0000` replaced by U+FFFD
 * (PostgreSQL `text` cannot store NUL, §8.3).
 */
export function errorText(error: unknown, field = 'error'): string {
  if (typeof error !== 'string') throw new ValidationError('INVALID_OPTION', field, `must be a string, got ${typeof error}`);
  return error.slice(0, MAX_ERROR_LENGTH).replaceAll('\u0000', '\ufffd');
}

/**
 * The `keep` flag of a complete (docs/contract.md#done-not-kept): absent or true keeps the DONE task
 * in history (the default), false drops it. `field` names it in the error.
 * @throws ValidationError INVALID_OPTION for anything but a boolean or undefined
 */
export function validateKeep(keep: unknown, field = 'keep'): boolean {
  if (keep === undefined) return true;
  if (typeof keep !== 'boolean') throw new ValidationError('INVALID_OPTION', field, `must be a boolean, got ${typeof keep}`);
  return keep;
}

/**
 * The retry fields of FailParams (docs/contract.md#retry-policy): `retryable` (boolean, default true)
 * and `maxAttempts` (integer 1..2³¹−1, or absent for the row's).
 * @throws ValidationError INVALID_OPTION naming `retryable`, INVALID_MAX_ATTEMPTS naming `maxAttempts`
 */
export function validateFailRetry(params: { readonly retryable?: unknown; readonly maxAttempts?: unknown }): { retryable?: boolean; maxAttempts?: number } {
  const { retryable, maxAttempts } = params;
  if (retryable !== undefined && typeof retryable !== 'boolean') throw new ValidationError('INVALID_OPTION', 'retryable', `must be a boolean, got ${typeof retryable}`);
  return {
    ...(retryable === false ? { retryable } : {}),
    ...(maxAttempts === undefined ? {} : { maxAttempts: validateMaxAttempts(maxAttempts) }),
  };
}

/**
 * Checks SnoozeParams: a task id, an attempt, and exactly one of `dueAt` (valid Date, years 1..9999,
 * at most MAX_DELAY_MS — 100 years — after `nowMs`, the store's now, as `runAt` of schedule) or
 * `delayMs` (whole ms 0..MAX_DELAY_MS).
 * @throws ValidationError INVALID_OPTION (`params` not an object, see {@link checkCallParams}; `attempt`; an unknown field), INVALID_TASK_ID, INVALID_RUN_AT (`dueAt`), INVALID_DELAY (`delayMs`, or both/neither given)
 */
export function validateSnoozeParams(params: unknown, nowMs: number = Date.now()): { id: TaskId; attempt: number; dueAt: Date | null; delayMs: number } {
  const p = checkCallParams('snooze', params) as Record<string, unknown>;
  const id = parseTaskId(p.id);
  const attempt = validateAttempt(p.attempt);
  if ((p.dueAt === undefined) === (p.delayMs === undefined)) throw new ValidationError('INVALID_DELAY', 'delayMs', 'give dueAt or delayMs, exactly one');
  if (p.dueAt !== undefined) return { id, attempt, dueAt: validateDueAt(p.dueAt, 'dueAt', nowMs), delayMs: 0 };
  return { id, attempt, dueAt: null, delayMs: validateDelayMs(p.delayMs) };
}

/**
 * The fields each store call takes (the parameter types of `Store` in `./store.ts`). Anything else is
 * refused, so a misspelt option (`queues` for `queue`) never silently changes what a call takes or
 * writes (docs/contract.md#input-errors).
 */
export const CALL_FIELDS = Object.freeze({
  claim: ['owner', 'limit', 'leaseMs', 'kinds', 'queue', 'kindLimits', 'onRateLimited'],
  extend: ['id', 'attempt', 'leaseMs'],
  complete: ['id', 'attempt', 'owner', 'result', 'work', 'keep'],
  fail: ['id', 'attempt', 'error', 'backoffMs', 'retryable', 'maxAttempts'],
  release: ['id', 'attempt'],
  snooze: ['id', 'attempt', 'dueAt', 'delayMs'],
  reclaimExpired: ['limit'],
  peekDue: ['withinMs', 'limit', 'kinds', 'queue'],
} as const);

/**
 * Checks the parameter object of a store call: an object (or, for `reclaimExpired`, omitted) with no
 * field outside {@link CALL_FIELDS}. Every store calls it first.
 * @returns the object (`{}` for an omitted optional one)
 * @throws ValidationError INVALID_OPTION naming `params` (not an object) or the unknown field
 */
export function checkCallParams<T>(call: keyof typeof CALL_FIELDS, params: T): T {
  if (params === undefined && call === 'reclaimExpired') return {} as T;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) throw new ValidationError('INVALID_OPTION', 'params', `${call}: must be an object`);
  rejectUnknownFields(params, CALL_FIELDS[call]);
  return params;
}
