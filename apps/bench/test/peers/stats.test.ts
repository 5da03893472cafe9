/**
 * The statistics every section summarises with: nearest-rank percentiles, medians, one run's
 * distribution and the summary over rounds. No database, no timing assertions.
 */
import { describe, expect, it } from 'vitest';
import { distribution, median, percentile, summarizeRounds } from '../../src/peers/util/stats.js';

describe('stats', () => {
  it('uses nearest-rank percentiles and medians', () => {
    const samples = Array.from({ length: 300 }, (_, i) => i + 1);
    expect(percentile(samples, 50)).toBe(150);
    expect(percentile(samples, 99)).toBe(297);
    expect(percentile([5], 99)).toBe(5);
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(() => percentile([], 50)).toThrow(RangeError);
    expect(() => percentile([1], 101)).toThrow(RangeError);
  });

  it('summarises a run and rounds, leaving out rounds that measured nothing', () => {
    expect(distribution([10, -2, 30])).toEqual({ count: 3, p50: 10, p99: 30, max: 30, min: -2 });
    expect(distribution([]).count).toBe(0);
    expect(summarizeRounds([3, Number.NaN, 1, 2])).toEqual({ median: 2, low: 1, high: 3, rounds: 3 });
    expect(summarizeRounds([Number.NaN]).rounds).toBe(0);
  });
});
