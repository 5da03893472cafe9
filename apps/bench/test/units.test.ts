/**
 * The bench's pure parts: statistics, section selection, the derived clock_timestamp() claim, the
 * two timer queues on the same input, and number formatting. No database, no timing assertions.
 */
import { describe, expect, it } from 'vitest';
import { selectSections, SECTIONS } from '../src/config.js';
import { runHeap, runWheel, timerQueueInput } from '../src/curves/timer-queues.js';
import { medianRange, num, table, times } from '../src/report/format.js';
import { bestPeer, ratio } from '../src/report/summary.js';
import { claimSql, clockTimestampClaimSql } from '../src/seed/claim-variants.js';
import { distribution, median, percentile, summarizeRounds } from '../src/util/stats.js';

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

describe('sections', () => {
  it('expands groups, keeps the canonical order, applies --skip, rejects unknown names', () => {
    expect(selectSections(undefined, undefined)).toEqual([...SECTIONS]);
    expect(selectSections(['idle', 'seed'], undefined)).toEqual(['partial-index', 'poll', 'idle']);
    expect(selectSections(['peers'], ['ceiling'])).toEqual(['throughput', 'lateness', 'idle']);
    expect(() => selectSections(['nope'], undefined)).toThrow(/unknown section/);
  });
});

describe('claim variants', () => {
  it('derives the clock_timestamp() claim from the store statement, changing only the due predicate', () => {
    const now = claimSql('bench_x');
    const clock = clockTimestampClaimSql('bench_x');
    expect(now).toMatch(/due_at <= coalesce\(\$1::timestamptz, now\(\)\)/);
    expect(clock).toMatch(/due_at <= coalesce\(\$1::timestamptz, clock_timestamp\(\)\)/);
    expect(clock).not.toMatch(/due_at <= coalesce\(\$1::timestamptz, now\(\)\)/);
    expect(clock.length - now.length).toBe('clock_timestamp()'.length - 'now()'.length);
  });
});

describe('timer queues', () => {
  it('fire exactly the timers not cancelled, on the same seeded input', () => {
    const input = timerQueueInput(5_000, { spanTicks: 10_000, seed: 7 });
    expect(input.cancels.length).toBeGreaterThan(500);
    expect(new Set(input.cancels).size).toBe(input.cancels.length);
    const wheel = runWheel(input);
    const heap = runHeap(input);
    expect(wheel.fired).toBe(5_000 - input.cancels.length);
    expect(heap.fired).toBe(wheel.fired);
    expect(heap.ops).toBe(wheel.ops);
    expect(timerQueueInput(100, { seed: 7 }).dueTicks).toEqual(timerQueueInput(100, { seed: 7 }).dueTicks);
  });
});

describe('report formatting', () => {
  it('formats numbers, ratios, ranges and tables', () => {
    expect(num(12_345)).toBe('12\u202f345');
    expect(num(2)).toBe('2');
    expect(num(0.0421)).toBe('0.042');
    expect(num(Number.NaN)).toBe('—');
    expect(times(1.523)).toBe('1.52×');
    expect(times(Number.POSITIVE_INFINITY)).toBe('—');
    expect(medianRange({ median: 10, low: 9, high: 12, rounds: 3 })).toBe('10 (9–12)');
    expect(medianRange({ median: 10, low: 10, high: 10, rounds: 1 })).toBe('10');
    expect(table(['a', 'b'], [['1', 'x|y']])).toBe('| a | b |\n| --- | --- |\n| 1 | x\\|y |');
  });

  it('picks the best peer, never Postpone, and skips non-finite values', () => {
    const rows = [
      { system: 'postpone', v: 100 },
      { system: 'graphile-worker', v: 50 },
      { system: 'pg-boss', v: Number.NaN },
      { system: 'pg-boss', v: 70 },
    ];
    expect(bestPeer(rows, (r) => r.v, true)?.v).toBe(70);
    expect(bestPeer(rows, (r) => r.v, false)?.v).toBe(50);
    expect(ratio(3, 0)).toBeNaN();
    expect(ratio(3, 2)).toBe(1.5);
  });
});
