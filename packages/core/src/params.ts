/**
 * Limits and checks of store-call parameters shared by every store, so they never drift apart.
 */
import { MAX_ERROR_LENGTH, ValidationError } from '@postpone/errors';

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
