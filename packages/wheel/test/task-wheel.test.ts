/**
 * The hybrid worker's task wheel: placement and the merge rules of a load. No store, no timers.
 */
import { describe, expect, it } from 'vitest';
import { TaskWheel } from '../src/task-wheel.js';

describe('TaskWheel', () => {
  function wheel(now: { t: number }, fired: string[]) {
    return new TaskWheel({ tickMs: 4, levels: 3, slotsPerLevel: 64, now: () => now.t, onFire: (id) => fired.push(id) });
  }

  it('fires a timer at the first tick not before its time, moves it when placed again, and forgets removed ones', () => {
    const now = { t: 1_000 };
    const fired: string[] = [];
    const w = wheel(now, fired);
    expect(w.place('a', 0, 1_009)).toBe(true); // tick ceil(9 / 4) = 3 → 1 012
    expect(w.place('b', 0, 1_020)).toBe(true);
    expect(w.place('c', 0, 1_030)).toBe(true);
    expect(w.nextFireAt()).toBe(1_012);
    expect(w.place('b', 0, 1_008)).toBe(true); // moved earlier
    expect(w.remove('c')).toBe(true);
    expect(w.remove('c')).toBe(false);
    now.t = 1_011;
    expect(w.advance()).toBe(1); // b at 1 008
    expect(fired).toEqual(['b']);
    now.t = 1_012;
    w.advance();
    now.t = 5_000;
    w.advance();
    expect(fired).toEqual(['b', 'a']);
    expect(w.size).toBe(0);
    expect(w.nextFireAt()).toBeUndefined();
  });

  it('retime moves every timer to its new fire time (a refined clock offset), earlier or later, and keeps the load merge as it was', () => {
    const now = { t: 1_000 };
    const fired: string[] = [];
    const w = wheel(now, fired);
    w.place('a', 100, 1_100);
    w.place('b', 200, 1_200);
    const token = w.beginLoad();
    // The offset grew by 40 ms: each timer fires 40 ms earlier.
    expect(w.retime((due) => 1_000 + due - 40)).toBe(2);
    expect(w.retime((due) => 1_000 + due - 40)).toBe(0);
    expect(w.nextFireAt()).toBe(1_060);
    // Placed before the load was sent: a load that no longer lists 'b' still drops it.
    w.finishLoad(token, [{ id: 'a', dueAtMs: 100 }], { throughMs: 500, inclusive: true }, (due) => 1_000 + due - 40);
    expect(w.has('b')).toBe(false);
    now.t = 1_059;
    w.advance();
    expect(fired).toEqual([]);
    now.t = 1_060;
    w.advance();
    expect(fired).toEqual(['a']);
  });

  it('fires a time already past at the next advance', () => {
    const now = { t: 500 };
    const fired: string[] = [];
    const w = wheel(now, fired);
    now.t = 900;
    w.place('late', 0, 100);
    expect(w.nextFireAt()).toBeLessThanOrEqual(900);
    w.advance();
    expect(fired).toEqual(['late']);
  });

  it('refuses a time beyond its horizon (after catching up with now)', () => {
    const now = { t: 0 };
    const w = wheel(now, []);
    expect(w.horizonMs).toBe(64 ** 3 * 4);
    expect(w.place('far', 0, w.horizonMs + 10)).toBe(false);
    expect(w.has('far')).toBe(false);
    // The wheel has not been advanced for a long time: placing catches it up first.
    now.t = 10 * w.horizonMs;
    expect(w.place('near', 0, now.t + 1_000)).toBe(true);
  });

  it('merges a load: drops timers it no longer lists inside its window, keeps what came during it', () => {
    const now = { t: 0 };
    const fired: string[] = [];
    const w = wheel(now, fired);
    const fireTime = (dueAtMs: number) => dueAtMs;
    w.place('claimed-elsewhere', 100, 100);
    w.place('beyond-window', 900, 900);
    const token = w.beginLoad();
    w.place('noticed-during-load', 150, 150); // a notification newer than the read
    w.remove('cancelled-during-load'); // a cancel newer than the read
    w.place('moved-during-load', 300, 300);
    const result = w.finishLoad(
      token,
      [
        { id: 'listed', dueAtMs: 200 },
        { id: 'cancelled-during-load', dueAtMs: 250 },
        { id: 'moved-during-load', dueAtMs: 120 }, // the read predates the move: the notification wins
      ],
      { throughMs: 500, inclusive: true },
      fireTime,
    );
    expect(result).toEqual({ placed: 1, dropped: 1 });
    expect(['claimed-elsewhere', 'beyond-window', 'noticed-during-load', 'cancelled-during-load', 'moved-during-load', 'listed'].filter((id) => w.has(id))).toEqual([
      'beyond-window',
      'noticed-during-load',
      'moved-during-load',
      'listed',
    ]);
    now.t = 250;
    w.advance();
    expect(fired).toEqual(['noticed-during-load', 'listed']);
  });

  it('a cut load (at its limit) proves nothing about tasks due at or after its last due time', () => {
    const now = { t: 0 };
    const w = wheel(now, []);
    w.place('same-ms-as-last', 300, 300);
    w.place('earlier-missing', 100, 100);
    const token = w.beginLoad();
    w.finishLoad(token, [{ id: 'last', dueAtMs: 300 }], { throughMs: 300, inclusive: false }, (ms) => ms);
    expect(w.has('same-ms-as-last')).toBe(true);
    expect(w.has('earlier-missing')).toBe(false);
    expect(w.has('last')).toBe(true);
  });
});
