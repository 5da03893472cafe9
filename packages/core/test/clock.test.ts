import { describe, expect, it } from 'vitest';
import { systemClock, TestClock } from '../src/index.js';

describe('TestClock', () => {
  it('starts at 2030-01-01T00:00:00Z by default, or where told', () => {
    expect(new TestClock().now()).toBe(Date.UTC(2030, 0, 1));
    expect(new TestClock(1_000).now()).toBe(1_000);
    expect(new TestClock(new Date(5_000)).now()).toBe(5_000);
  });

  it('moves only when ticked or set', () => {
    const clock = new TestClock(0);
    expect(clock.now()).toBe(0);
    clock.tick(250);
    clock.tick(0);
    expect(clock.now()).toBe(250);
    clock.setTime(new Date(10_000));
    expect(clock.now()).toBe(10_000);
    clock.setTime(20);
    expect(clock.now()).toBe(20);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])('refuses tick(%s) and stays put', (ms) => {
    const clock = new TestClock(100);
    expect(() => clock.tick(ms)).toThrow(RangeError);
    expect(clock.now()).toBe(100);
  });
});

describe('systemClock', () => {
  it('reads Date.now() and is frozen', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
    expect(Object.isFrozen(systemClock)).toBe(true);
  });
});
