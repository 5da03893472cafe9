import { MAX_DELAY_MS } from '@postpone/input';

/** Default cap of the retry backoff: one hour. */
export const DEFAULT_MAX_BACKOFF_MS = 3_600_000;

/**
 * Retry delay after failure number `failures`: `baseMs × 2^(failures−1)`, clamped (docs/contract.md#attempts).
 *
 * Based on the failure count (`ClaimedTask.failures` + 1 for the attempt that just failed), not
 * on `attempt`: a hand-back (release) is not a failure, so it neither uses up an attempt nor
 * lengthens the next retry delay. Without releases the two counts are equal.
 *
 * Never negative, NaN or Infinity; non-decreasing in `failures`; at most `capMs`, and never above
 * {@link MAX_DELAY_MS} (100 years, the longest delay a store accepts), so `capMs = Infinity` means
 * "no cap of my own". A non-finite or negative `baseMs` counts as 0, `failures` below 1 (or not
 * finite) as 1; a cap that is NaN, zero or negative gives 0.
 *
 * @param baseMs   backoff base in milliseconds
 * @param failures the failures so far, counting the one just reported (1 for the first)
 * @param capMs    upper bound in milliseconds (default one hour)
 * @returns whole milliseconds in `[0, min(capMs, MAX_DELAY_MS)]`
 */
export function backoffMs(baseMs: number, failures: number, capMs: number = DEFAULT_MAX_BACKOFF_MS): number {
  const cap = capMs > 0 ? Math.min(Math.floor(capMs), MAX_DELAY_MS) : 0;
  const base = Number.isFinite(baseMs) && baseMs > 0 ? baseMs : 0;
  const n = Number.isFinite(failures) && failures >= 1 ? Math.floor(failures) : 1;
  if (base === 0 || cap === 0) return 0;
  // 2^1023 is the largest finite power of two; anything that large is past every cap anyway.
  const exponent = Math.min(n - 1, 1000);
  const raw = base * 2 ** exponent;
  return Number.isFinite(raw) ? Math.min(cap, Math.round(raw)) : cap;
}
