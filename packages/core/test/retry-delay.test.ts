/**
 * retryDelayMs: the jitter bands of AWS Architecture Blog, "Exponential Backoff And Jitter"
 * (docs/contract.md#retry-policy), drawn from seeded sources (testkit's mulberry32), never Math.random.
 */
import fc from 'fast-check';
import { mulberry32 } from '@postpone/testkit';
import { describe, expect, it } from 'vitest';
import { backoffMs, type Jitter, MAX_DELAY_MS, retryDelayMs, validateRetryPolicy } from '../src/index.js';

/** A seeded source of uniform draws in [0, 1) (testkit's mulberry32). */
const seeded = (seed: number): (() => number) => mulberry32(seed);

describe('retryDelayMs', () => {
  it("'none' is backoffMs exactly and draws nothing", () => {
    const never = () => {
      throw new Error('drew a random number for jitter none');
    };
    for (let n = 1; n <= 30; n++) expect(retryDelayMs(100, n, 60_000, 'none', never)).toBe(backoffMs(100, n, 60_000));
  });

  it('full is in [0, d] and equal in [ceil(d/2), d], whole ms, for any seeded draw, base, failure count and cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 1, max: 80 }),
        fc.integer({ min: 1, max: MAX_DELAY_MS }),
        fc.constantFrom<Jitter>('full', 'equal'),
        fc.integer(),
        (base, n, cap, jitter, seed) => {
          const d = backoffMs(base, n, cap);
          const delay = retryDelayMs(base, n, cap, jitter, seeded(seed));
          expect(Number.isInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(jitter === 'full' ? 0 : Math.ceil(d / 2));
          expect(delay).toBeLessThanOrEqual(d);
          expect(delay).toBeLessThanOrEqual(cap);
        },
      ),
      { seed: 20_261_201, numRuns: 2_000 },
    );
  });

  it('the ends of the draw reach the ends of the band; a source out of range is clamped', () => {
    const d = backoffMs(1_000, 4, 60_000); // 8 000
    expect(retryDelayMs(1_000, 4, 60_000, 'full', () => 0)).toBe(0);
    expect(retryDelayMs(1_000, 4, 60_000, 'full', () => 1)).toBe(d);
    expect(retryDelayMs(1_000, 4, 60_000, 'equal', () => 0)).toBe(d / 2);
    expect(retryDelayMs(1_000, 4, 60_000, 'equal', () => 1)).toBe(d);
    expect(retryDelayMs(1_000, 4, 60_000, 'full', () => -5)).toBe(0);
    expect(retryDelayMs(1_000, 4, 60_000, 'full', () => Number.NaN)).toBe(0);
    expect(retryDelayMs(1_000, 4, 60_000, 'equal', () => 7)).toBe(d);
  });

  it('spreads: 1 000 seeded full-jitter draws of one failure cover the band (quartiles all hit)', () => {
    const random = seeded(7);
    const quartiles = new Set<number>();
    for (let i = 0; i < 1_000; i++) quartiles.add(Math.min(3, Math.floor(retryDelayMs(1_000, 3, 60_000, 'full', random) / 1_000)));
    expect([...quartiles].sort()).toEqual([0, 1, 2, 3]);
  });
});

describe('validateRetryPolicy', () => {
  it('keeps only the fields given and refuses bad ones by name', () => {
    expect(validateRetryPolicy({ jitter: 'full' })).toEqual({ jitter: 'full' });
    expect(validateRetryPolicy({ maxAttempts: 2, baseMs: 0, capMs: 1 }, 'p')).toEqual({ maxAttempts: 2, baseMs: 0, capMs: 1 });
    for (const [bad, field] of [
      [{ jitter: 'decorrelated' }, 'p.jitter'],
      [{ baseMs: 1.5 }, 'p.baseMs'],
      [{ capMs: 0 }, 'p.capMs'],
      [{ maxAttempts: 0 }, 'p.maxAttempts'],
      [{ other: 1 }, 'p.other'],
      [[], 'p'],
    ] as const) {
      expect(() => validateRetryPolicy(bad, 'p')).toThrow(expect.objectContaining({ field }));
    }
  });
});
