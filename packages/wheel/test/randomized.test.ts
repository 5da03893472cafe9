/**
 * Differential test: random schedule / cancel / advance / re-arm sequences on the wheel and on a
 * reference priority queue (heap-js). Seeded, so every run is the same.
 */
import { Heap } from 'heap-js';
import { describe, expect, it } from 'vitest';
import { TimingWheel, type TimerHandle } from '../src/index.js';
import { mulberry32, randomInt } from '@postpone/testkit';

interface Expected {
  id: number;
  /** The tick the timer must fire at. */
  due: number;
}

const byDueThenId = (a: Expected, b: Expected) => a.due - b.due || a.id - b.id;

function runScenario(seed: number, levels: number, slotsPerLevel: number, ops: number) {
  const random = mulberry32(seed);
  const horizon = slotsPerLevel ** levels;
  const reference = new Heap<Expected>(byDueThenId);
  /** id -> { tick, due } of pending timers. */
  const live = new Map<number, { tick: number; due: number }>();
  const handles = new Map<number, TimerHandle<number>>();
  const cancelledIds = new Set<number>();
  const fires: Expected[] = [];
  let nextId = 0;
  let cancelled = 0;
  let draining = false;

  const randomDelta = (): number => {
    const r = random();
    if (r < 0.3) {
      // Near a slot-span boundary of some level.
      const span = slotsPerLevel ** randomInt(random, 1, levels - 1 || 1);
      return Math.min(horizon - 1, Math.max(1, span * randomInt(random, 1, slotsPerLevel - 1) + randomInt(random, -1, 1)));
    }
    if (r < 0.6) return randomInt(random, 1, Math.min(horizon - 1, 2 * slotsPerLevel));
    return randomInt(random, 1, horizon - 1);
  };

  const schedule = (tick: number): void => {
    const id = nextId++;
    const due = Math.max(tick, wheel.currentTick);
    handles.set(id, wheel.scheduleAt(tick, id));
    live.set(id, { tick, due });
    reference.push({ id, due });
  };

  const cancelRandom = (): void => {
    // Mostly a recent id (likely pending), else any id ever scheduled (often fired or cancelled).
    if (nextId === 0) return;
    const recent = random() < 0.7;
    const id = recent ? nextId - 1 - randomInt(random, 0, Math.min(nextId - 1, 20)) : randomInt(random, 0, nextId - 1);
    const wasLive = live.has(id);
    expect(wheel.cancel(handles.get(id) as TimerHandle<number>)).toBe(wasLive);
    if (wasLive) {
      live.delete(id);
      cancelledIds.add(id);
      cancelled++;
    }
  };

  const wheel: TimingWheel<number> = new TimingWheel<number>({
    levels,
    slotsPerLevel,
    onFire: (id, firedAt) => {
      fires.push({ id, due: firedAt });
      const entry = live.get(id);
      expect(entry?.due).toBe(firedAt);
      live.delete(id);
      const r = draining ? 1 : random();
      if (r < 0.25) schedule(firedAt + randomDelta()); // re-arm
      else if (r < 0.35) cancelRandom(); // may hit a timer of this very tick
    },
  });

  for (let op = 0; op < ops; op++) {
    const r = random();
    if (r < 0.5) {
      const past = random() < 0.05;
      schedule(past ? Math.max(0, wheel.currentTick - randomInt(random, 0, 5)) : wheel.currentTick + randomDelta());
    } else if (r < 0.65) {
      cancelRandom();
    } else {
      // nextDueTick matches the reference minimum.
      let min: number | undefined;
      for (const { tick } of live.values()) min = min === undefined ? tick : Math.min(min, tick);
      expect(wheel.nextDueTick()).toBe(min);

      const s = random();
      const step = s < 0.3 ? randomInt(random, 0, 2) : s < 0.8 ? randomInt(random, 1, 3 * slotsPerLevel) : randomInt(random, 1, horizon);
      const target = wheel.currentTick + step;
      const before = fires.length;
      wheel.advanceTo(target);
      const actual = fires.slice(before);
      for (let i = 1; i < actual.length; i++) {
        expect((actual[i] as Expected).due).toBeGreaterThanOrEqual((actual[i - 1] as Expected).due);
      }
      const expected: Expected[] = [];
      for (let guard = reference.size(); guard > 0; guard--) {
        const top = reference.peek();
        if (!top || top.due > target) break;
        reference.pop();
        if (!cancelledIds.has(top.id)) expected.push(top);
      }
      expect([...actual].sort(byDueThenId)).toEqual(expected);
      for (const { due } of live.values()) expect(due).toBeGreaterThan(target);
    }
    expect(wheel.size).toBe(live.size);
  }
  draining = true;
  wheel.advanceTo(wheel.currentTick + horizon);
  expect(live.size).toBe(0);
  const stats = wheel.stats();
  expect(stats).toMatchObject({ scheduled: nextId, fired: fires.length, cancelled, size: 0 });
  expect(stats.fired + stats.cancelled).toBe(nextId);
  expect(new Set(fires.map((f) => f.id)).size).toBe(fires.length);
  return { scheduled: nextId, fired: fires.length, cancelled, cascades: stats.cascades };
}

describe('randomized against a reference priority queue', () => {
  it.each([
    [1, 3, 64],
    [2, 3, 8],
    [3, 2, 16],
    [4, 4, 2],
    [5, 1, 32],
    [0x5eed, 3, 4],
  ])('seed %i: %i levels x %i slots', (seed, levels, slots) => {
    const result = runScenario(seed, levels, slots, 3000);
    expect(result.fired).toBeGreaterThan(100);
    expect(result.cancelled).toBeGreaterThan(10);
    if (levels > 1) expect(result.cascades).toBeGreaterThan(0);
  });
});
