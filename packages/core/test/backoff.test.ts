import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffMs, DEFAULT_MAX_BACKOFF_MS, MAX_DELAY_MS } from '../src/index.js';

const anyDouble = fc.oneof(fc.double(), fc.integer({ min: -10, max: 2_000 }), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, -0));

describe('backoffMs', () => {
  it('is 200, 400, 800 ms for base 200 and attempts 1, 2, 3', () => {
    expect([1, 2, 3].map((attempt) => backoffMs(200, attempt))).toEqual([200, 400, 800]);
  });

  it('is capped at one hour by default and at capMs when given', () => {
    expect(DEFAULT_MAX_BACKOFF_MS).toBe(3_600_000);
    expect(backoffMs(200, 100)).toBe(DEFAULT_MAX_BACKOFF_MS);
    expect(backoffMs(200, 5, 1_000)).toBe(1_000);
    expect(backoffMs(200, 1_000_000)).toBe(DEFAULT_MAX_BACKOFF_MS);
  });

  it('treats bad inputs as documented: attempt < 1 as 1, base <= 0 or non-finite as 0', () => {
    expect(backoffMs(200, 0)).toBe(200);
    expect(backoffMs(200, Number.NaN)).toBe(200);
    expect(backoffMs(-5, 3)).toBe(0);
    expect(backoffMs(Number.POSITIVE_INFINITY, 3)).toBe(0);
    expect(backoffMs(200, 3, -1)).toBe(0);
  });

  it('is never negative, NaN or Infinity, is whole, and stays within the cap', () => {
    fc.assert(
      fc.property(anyDouble, anyDouble, anyDouble, (base, attempt, cap) => {
        const ms = backoffMs(base, attempt, cap);
        expect(Number.isInteger(ms)).toBe(true);
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThanOrEqual(cap > 0 ? Math.min(Math.floor(cap), MAX_DELAY_MS) : 0);
        const defaultCapped = backoffMs(base, attempt);
        expect(Number.isInteger(defaultCapped) && defaultCapped >= 0 && defaultCapped <= DEFAULT_MAX_BACKOFF_MS).toBe(true);
      }),
    );
  });

  it('is non-decreasing in attempt', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        fc.integer({ min: -5, max: 2_000 }),
        fc.integer({ min: 0, max: 2_000 }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        (base, attempt, more, cap) => {
          expect(backoffMs(base, attempt + more, cap)).toBeGreaterThanOrEqual(backoffMs(base, attempt, cap));
        },
      ),
    );
  });

  it('doubles per attempt below the cap', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 20 }), (base, attempt) => {
        expect(backoffMs(base, attempt + 1, Number.MAX_SAFE_INTEGER)).toBe(2 * backoffMs(base, attempt, Number.MAX_SAFE_INTEGER));
      }),
    );
  });
});

describe('backoff never exceeds what a store accepts', () => {
  it('caps at MAX_DELAY_MS even when asked for no cap', () => {
    expect(backoffMs(3e12, 2, Number.MAX_SAFE_INTEGER)).toBe(MAX_DELAY_MS);
    expect(backoffMs(1_000, 60, Infinity)).toBe(MAX_DELAY_MS);
    expect(backoffMs(1_000, 3, Infinity)).toBe(4_000);
  });
});
