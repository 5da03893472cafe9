import { MAX_DELAY_MS } from './validate.js';

/** Default cap of the retry backoff: one hour. */
export const DEFAULT_MAX_BACKOFF_MS = 3_600_000;

/**
 * Retry delay before attempt `attempt + 1`: `baseMs × 2^(attempt−1)`, clamped (docs/contract.md#attempts).
 *
 * Never negative, NaN or Infinity; non-decreasing in `attempt`; at most `capMs`, and never above
 * {@link MAX_DELAY_MS} (100 years, the longest delay a store accepts), so `capMs = Infinity` means
 * "no cap of my own". A non-finite or negative `baseMs` counts as 0, an `attempt` below 1 (or not
 * finite) as 1; a cap that is NaN, zero or negative gives 0.
 *
 * @param baseMs  backoff base in milliseconds
 * @param attempt the attempt that just failed (1 for the first)
 * @param capMs   upper bound in milliseconds (default one hour)
 * @returns whole milliseconds in `[0, min(capMs, MAX_DELAY_MS)]`
 */
export function backoffMs(baseMs: number, attempt: number, capMs: number = DEFAULT_MAX_BACKOFF_MS): number {
  const cap = capMs > 0 ? Math.min(Math.floor(capMs), MAX_DELAY_MS) : 0;
  const base = Number.isFinite(baseMs) && baseMs > 0 ? baseMs : 0;
  const n = Number.isFinite(attempt) && attempt >= 1 ? Math.floor(attempt) : 1;
  if (base === 0 || cap === 0) return 0;
  // 2^1023 is the largest finite power of two; anything that large is past every cap anyway.
  const exponent = Math.min(n - 1, 1000);
  const raw = base * 2 ** exponent;
  return Number.isFinite(raw) ? Math.min(cap, Math.round(raw)) : cap;
}
