/**
 * Small descriptive statistics over samples (milliseconds, rates, counts).
 *
 * Percentiles use the nearest-rank method on the sorted samples (Hyndman & Fan 1996, definition 1):
 * p99 of 300 samples is the 297th smallest value, never an interpolation between two runs.
 */

/** Nearest-rank percentile, `p` in [0, 100]. @throws RangeError for no samples or `p` out of range */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new RangeError('percentile of no samples');
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile expects 0..100, got ${p}`);
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

/** The median (mean of the two middle values for an even count). @throws RangeError for no samples */
export function median(samples: readonly number[]): number {
  if (samples.length === 0) throw new RangeError('median of no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Lateness-style summary of one run: p50, p99, max, min and the sample count. */
export interface Distribution {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly min: number;
}

/** Summarises samples; all fields NaN when there are none. */
export function distribution(samples: readonly number[]): Distribution {
  if (samples.length === 0) return { count: 0, p50: Number.NaN, p99: Number.NaN, max: Number.NaN, min: Number.NaN };
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const s of samples) {
    if (s < min) min = s;
    if (s > max) max = s;
  }
  return { count: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99), max, min };
}

/** Median and range of one figure over repeated rounds. */
export interface RoundSummary {
  readonly median: number;
  readonly low: number;
  readonly high: number;
  readonly rounds: number;
}

/** Median and range over rounds; NaN values (a round that could not measure) are left out. */
export function summarizeRounds(values: readonly number[]): RoundSummary {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return { median: Number.NaN, low: Number.NaN, high: Number.NaN, rounds: 0 };
  return { median: median(finite), low: Math.min(...finite), high: Math.max(...finite), rounds: finite.length };
}
