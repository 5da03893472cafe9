/**
 * The pure parts of hybrid discovery: the database clock estimate and the reading of notices. No
 * store, no timers.
 */
import { describe, expect, it } from 'vitest';
import { DatabaseClock } from '../src/database-clock.js';
import { readNotice } from '../src/notices.js';

describe('DatabaseClock', () => {
  it('takes the lower bound of each sample (now − receivedAt) and keeps the tightest', () => {
    const clock = new DatabaseClock();
    expect(clock.known).toBe(false);
    expect(() => clock.toMonotonic(0)).toThrow(/no sample/);
    // The database read 1 000 500 somewhere between monotonic 100 and 110: offset in [1 000 390, 1 000 400].
    clock.sample(1_000_500, 100, 110);
    expect(clock.offsetMs).toBe(1_000_390);
    // A faster round trip narrows it: [1 000 396, 1 000 398].
    clock.sample(1_000_598, 200, 202);
    expect(clock.offsetMs).toBe(1_000_396);
    // A slow one does not widen it.
    clock.sample(1_000_700, 300, 350);
    expect(clock.offsetMs).toBe(1_000_396);
    expect(clock.toMonotonic(1_001_000)).toBe(604);
    expect(clock.toDatabase(604)).toBe(1_001_000);
  });

  it('drops older samples when a sample proves the database clock stepped back', () => {
    const clock = new DatabaseClock();
    clock.sample(10_000, 0, 2);
    expect(clock.offsetMs).toBe(9_998);
    // Upper bound 5 000 − 100 = 4 900 < 9 998: the clocks moved apart by about 5 s.
    clock.sample(5_000, 100, 104);
    expect(clock.offsetMs).toBe(4_896);
  });

  it('remembers only the last `keep` samples', () => {
    const clock = new DatabaseClock(2);
    clock.sample(1_000, 0, 0); // an exact sample: offset 1 000
    clock.sample(1_105, 100, 110); // [995, 1 005]: consistent with 1 000
    expect(clock.offsetMs).toBe(1_000);
    clock.sample(1_205, 200, 210); // [995, 1 005] again: the exact sample has aged out
    expect(clock.offsetMs).toBe(995);
  });
});

describe('readNotice', () => {
  it('accepts the store notices and ignores anything else', () => {
    expect(readNotice({ op: 'scheduled', id: '7', dueAt: new Date(5) })).toEqual({ op: 'scheduled', id: '7', dueAtMs: 5 });
    expect(readNotice({ op: 'cancelled', id: '7', dueAt: new Date(5) })).toEqual({ op: 'cancelled', id: '7' });
    for (const junk of [null, 'x', { op: 'claimed', id: '1', dueAt: new Date(0) }, { op: 'scheduled', id: '', dueAt: new Date(0) }, { op: 'scheduled', id: '1', dueAt: new Date(Number.NaN) }, { op: 'scheduled', id: '1', dueAt: 5 }]) {
      expect(readNotice(junk)).toBeNull();
    }
  });
});
