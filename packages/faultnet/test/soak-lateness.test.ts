import { describe, expect, it } from 'vitest';
import type { ClaimRecord, FaultWindow } from '../src/index.js';
import { latenessByDueBucket, splitLateness } from '../src/index.js';

const claim = (id: string, dueAtMs: number, lateMs: number, attempt = 1): ClaimRecord => ({
  worker: 'w',
  id,
  attempt,
  dueAtMs,
  claimedAtMs: dueAtMs + lateMs,
  leaseUntilMs: dueAtMs + lateMs + 2_000,
});

describe('soak lateness split by fault windows', () => {
  it('puts a claim inside when its due time is in [start, end + grace] or it is a re-claim, else outside', () => {
    const windows: FaultWindow[] = [
      { kind: 'stop', startMs: 10_000, endMs: 11_000 },
      // overlaps the first once the grace is added: merged, not counted twice
      { kind: 'kill', startMs: 12_000, endMs: 12_500 },
      { kind: 'restart', startMs: 50_000, endMs: 55_000 },
    ];
    const claims = [
      claim('a', 9_999, 10), // just before the first window: outside
      claim('b', 10_000, 3_000), // at its start: inside
      claim('c', 13_000, 2_500), // end 11 000 + grace 2 000 = 13 000, and in the kill's: inside
      claim('d', 14_501, 20), // after 12 500 + 2 000: outside
      claim('e', 30_000, 4_000, 2), // a re-claim, due outside any window: inside
      claim('f', 57_000, 7_000), // 55 000 + 2 000: inside
      claim('g', 60_000, 30), // outside
    ];
    const s = splitLateness(claims, windows, 2_000);
    expect(s.outside).toEqual({ claims: 3, p50Ms: 20, p99Ms: 30, maxMs: 30 });
    expect(s.inside).toEqual({ claims: 4, p50Ms: 3_000, p99Ms: 7_000, maxMs: 7_000 });
    // covered: [10 000, 14 500] and [50 000, 57 000] = 11 500 ms of the 50 001 ms from the first due to the last
    expect(s.coveredShare).toBeCloseTo(11_500 / 50_001, 6);
  });

  it('with no fault window every first claim is outside', () => {
    const s = splitLateness([claim('a', 1_000, 5), claim('b', 2_000, 7)], [], 2_000);
    expect(s.inside.claims).toBe(0);
    expect(Number.isNaN(s.inside.p99Ms)).toBe(true);
    expect(s.outside).toEqual({ claims: 2, p50Ms: 5, p99Ms: 7, maxMs: 7 });
    expect(s.coveredShare).toBe(0);
  });

  it('buckets first claims by due time from the first due time', () => {
    const buckets = latenessByDueBucket([claim('a', 1_000, 5), claim('b', 10_999, 9), claim('c', 11_000, 100), claim('d', 11_500, 800, 2)], 10_000);
    expect(buckets).toEqual([
      { fromMs: 0, figures: { claims: 2, p50Ms: 5, p99Ms: 9, maxMs: 9 } },
      { fromMs: 10_000, figures: { claims: 1, p50Ms: 100, p99Ms: 100, maxMs: 100 } },
    ]);
  });
});
