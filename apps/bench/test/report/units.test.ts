/**
 * Section selection and the report's number formatting and peer comparison. No database, no timing
 * assertions.
 */
import { describe, expect, it } from 'vitest';
import { SECTIONS, selectSections } from '../../src/report/config.js';
import { medianRange, num, table, times } from '../../src/report/format.js';
import { bestPeer, ratio } from '../../src/report/summary.js';

describe('sections', () => {
  it('expands groups, keeps the canonical order, applies --skip, rejects unknown names', () => {
    expect(selectSections(undefined, undefined)).toEqual([...SECTIONS]);
    expect(selectSections(['idle', 'seed'], undefined)).toEqual(['partial-index', 'poll', 'idle']);
    expect(selectSections(['peers'], ['ceiling'])).toEqual(['throughput', 'lateness', 'idle', 'network']);
    expect(() => selectSections(['nope'], undefined)).toThrow(/unknown section/);
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
