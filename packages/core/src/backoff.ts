import { type Jitter, MAX_DELAY_MS } from './input/validate.js';

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

/** A source of uniform random numbers in `[0, 1)`, like `Math.random` (tests pass a seeded one). */
export type RandomSource = () => number;

/**
 * Retry delay after failure number `failures` with jitter, per AWS Architecture Blog, "Exponential
 * Backoff And Jitter" (Marc Brooker, 2015; docs/contract.md#retry-policy). With
 * `d = backoffMs(baseMs, failures, capMs)`:
 * - `'none'`:  `d`;
 * - `'full'`:  `random_between(0, d)` — `round(r × d)`, in `[0, d]`;
 * - `'equal'`: `d/2 + random_between(0, d/2)` — `ceil(d/2) + round(r × floor(d/2))`, in `[ceil(d/2), d]`.
 * `r = random()` is clamped to `[0, 1]` (a source returning NaN counts as 0), so the result is
 * always a whole number of ms in the band, never negative, never above the cap.
 * @returns whole milliseconds in `[0, min(capMs, MAX_DELAY_MS)]`
 */
export function retryDelayMs(baseMs: number, failures: number, capMs: number, jitter: Jitter, random: RandomSource): number {
  const d = backoffMs(baseMs, failures, capMs);
  if (jitter === 'none' || d === 0) return d;
  const drawn = random();
  const r = drawn > 0 ? Math.min(drawn, 1) : 0;
  if (jitter === 'full') return Math.round(r * d);
  return Math.ceil(d / 2) + Math.round(r * Math.floor(d / 2));
}
