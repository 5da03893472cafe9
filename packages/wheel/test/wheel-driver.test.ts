import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  TimingWheel,
  WheelCallbackError,
  WheelConfigError,
  WheelDriver,
  type DriverTimers,
  type TimingWheelOptions,
} from '../src/index.js';

/** A fake clock and setTimeout: time moves only in `run`, and only one callback runs at a time. */
class FakeTimers implements DriverTimers {
  nowMs = 0;
  private nextId = 1;
  readonly pending = new Map<number, { callback: () => void; at: number; delayMs: number }>();
  readonly delays: number[] = [];

  set(callback: () => void, delayMs: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { callback, at: this.nowMs + delayMs, delayMs });
    this.delays.push(delayMs);
    return id;
  }

  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Runs due callbacks in time order until `untilMs`, moving the clock to each; bounded. */
  run(untilMs: number, maxCallbacks = 10_000): void {
    for (let i = 0; i < maxCallbacks; i++) {
      let first: [number, { callback: () => void; at: number }] | undefined;
      for (const entry of this.pending) if (!first || entry[1].at < first[1].at) first = entry;
      if (!first || first[1].at > untilMs) break;
      this.pending.delete(first[0]);
      this.nowMs = Math.max(this.nowMs, first[1].at);
      first[1].callback();
    }
    this.nowMs = Math.max(this.nowMs, untilMs);
  }
}

function setup(options: Partial<TimingWheelOptions<string>> = {}, onError?: (e: unknown) => void) {
  const timers = new FakeTimers();
  const fires: { value: string; firedAt: number; atMs: number }[] = [];
  const wheel = new TimingWheel<string>({
    tickMs: 10,
    startMs: 0,
    onFire: (value, firedAt) => fires.push({ value, firedAt, atMs: timers.nowMs }),
    ...options,
  });
  const driver = new WheelDriver({ wheel, now: () => timers.nowMs, timers, onError });
  return { timers, wheel, driver, fires };
}

describe('WheelDriver', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sleeps only while something is pending, until the next due tick', () => {
    const { timers, wheel, driver, fires } = setup();
    driver.start();
    expect(driver.running).toBe(true);
    expect(timers.pending.size).toBe(0); // idle: no wake-ups
    wheel.scheduleAt(wheel.tickForDueTime(95), 'a'); // tick 10 = 100 ms
    driver.wake();
    expect(timers.delays).toEqual([100]);
    timers.run(99);
    expect(fires).toEqual([]);
    timers.run(100);
    expect(fires).toEqual([{ value: 'a', firedAt: 10, atMs: 100 }]);
    expect(timers.pending.size).toBe(0);
  });

  it('wake replaces a longer sleep with a shorter one and keeps a single pending sleep', () => {
    const { timers, wheel, driver, fires } = setup();
    wheel.scheduleAt(50, 'late');
    driver.start();
    expect([...timers.pending.values()].map((p) => p.delayMs)).toEqual([500]);
    timers.run(120);
    wheel.scheduleAt(wheel.tickForDueTime(200), 'early');
    driver.wake();
    expect([...timers.pending.values()].map((p) => p.delayMs)).toEqual([80]);
    timers.run(1000);
    expect(fires.map((f) => [f.value, f.atMs])).toEqual([
      ['early', 200],
      ['late', 500],
    ]);
  });

  it('wakes at once (delay 0) for due work and catches up in tick order after a clock jump', () => {
    const { timers, wheel, driver, fires } = setup();
    driver.start();
    timers.nowMs = 10_000; // the process was suspended; the wheel is still at tick 0
    wheel.scheduleAt(7, 'missed-while-suspended');
    wheel.scheduleAt(3, 'earlier');
    wheel.scheduleAt(2000, 'later');
    driver.wake();
    expect([...timers.pending.values()].map((p) => p.delayMs)).toEqual([0]);
    timers.run(10_000);
    expect(fires.map((f) => [f.value, f.firedAt])).toEqual([
      ['earlier', 3],
      ['missed-while-suspended', 7],
    ]);
    expect(wheel.currentTick).toBe(1000);
    wheel.scheduleAt(400, 'overdue'); // before the current tick: fires on the next callback
    driver.wake();
    expect([...timers.pending.values()].map((p) => p.delayMs)).toEqual([0]);
    timers.run(20_000);
    expect(fires.slice(2).map((f) => [f.value, f.firedAt, f.atMs])).toEqual([
      ['overdue', 1000, 10_000],
      ['later', 2000, 20_000],
    ]);
  });

  it('never sleeps longer than maxSleepMs', () => {
    const timers = new FakeTimers();
    const fired: number[] = [];
    const wheel = new TimingWheel<string>({ tickMs: 1000, onFire: (_v, tick) => fired.push(tick) });
    const driver = new WheelDriver({ wheel, now: () => timers.nowMs, timers, maxSleepMs: 60_000 });
    wheel.scheduleAt(200_000, 'x'); // 200 000 s away
    driver.start();
    timers.run(200_000_000);
    expect(fired).toEqual([200_000]);
    expect(Math.max(...timers.delays)).toBe(60_000);
    expect(timers.delays.length).toBeLessThanOrEqual(Math.ceil(200_000_000 / 60_000) + 1);
  });

  it('reports callback errors to onError and keeps running', () => {
    const errors: unknown[] = [];
    const timers = new FakeTimers();
    const fired: string[] = [];
    const wheel = new TimingWheel<string>({
      tickMs: 10,
      onFire: (value) => {
        fired.push(value);
        if (value === 'bad') throw new Error('boom');
      },
    });
    const driver = new WheelDriver({ wheel, now: () => timers.nowMs, timers, onError: (e) => errors.push(e) });
    wheel.scheduleAt(1, 'bad');
    wheel.scheduleAt(2, 'good');
    driver.start();
    timers.run(100);
    expect(fired).toEqual(['bad', 'good']);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(WheelCallbackError);
  });

  it('without onError, rethrows from the timer callback after re-arming', () => {
    const timers = new FakeTimers();
    const wheel = new TimingWheel<string>({
      tickMs: 10,
      onFire: (value) => {
        if (value === 'bad') throw new Error('boom');
      },
    });
    const driver = new WheelDriver({ wheel, now: () => timers.nowMs, timers });
    wheel.scheduleAt(1, 'bad');
    wheel.scheduleAt(2, 'good');
    driver.start();
    expect(() => timers.run(10)).toThrow(WheelCallbackError);
    expect(timers.pending.size).toBe(1); // re-armed for 'good'
    timers.run(100);
    expect(wheel.size).toBe(0);
  });

  it('stop cancels the sleep; wake is then a no-op; start resumes', () => {
    const { timers, wheel, driver, fires } = setup();
    wheel.scheduleAt(5, 'x');
    driver.start();
    driver.stop();
    expect(driver.running).toBe(false);
    expect(timers.pending.size).toBe(0);
    driver.wake();
    expect(timers.pending.size).toBe(0);
    timers.run(1000);
    expect(fires).toEqual([]);
    driver.start();
    expect(fires.map((f) => f.firedAt)).toEqual([5]);
  });

  it('supports re-arming and wake from inside onFire', () => {
    const timers = new FakeTimers();
    const fired: number[] = [];
    let driver: WheelDriver<string> | undefined;
    const wheel: TimingWheel<string> = new TimingWheel<string>({
      tickMs: 10,
      onFire: (value, tick) => {
        fired.push(tick);
        if (fired.length < 4) {
          wheel.scheduleAt(tick + 64, value);
          driver?.wake();
        }
      },
    });
    driver = new WheelDriver({ wheel, now: () => timers.nowMs, timers });
    wheel.scheduleAt(1, 'r');
    driver.start();
    timers.run(100_000);
    expect(fired).toEqual([1, 65, 129, 193]);
    expect(timers.pending.size).toBe(0);
  });

  it('rejects an invalid maxSleepMs', () => {
    const wheel = new TimingWheel<string>({ onFire: () => {} });
    for (const maxSleepMs of [0, 1.5, 2 ** 31, Number.NaN]) {
      expect(() => new WheelDriver({ wheel, now: () => 0, maxSleepMs })).toThrow(WheelConfigError);
    }
  });

  it('uses the global setTimeout by default (vitest fake timers, no real sleep)', () => {
    vi.useFakeTimers({ now: 0 });
    const fired: number[] = [];
    const wheel = new TimingWheel<string>({ tickMs: 5, onFire: (_v, tick) => fired.push(tick) });
    const driver = new WheelDriver({ wheel, now: () => Date.now() });
    wheel.scheduleAt(20, 'x');
    driver.start();
    vi.advanceTimersByTime(99);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([20]);
    driver.stop();
  });
});
