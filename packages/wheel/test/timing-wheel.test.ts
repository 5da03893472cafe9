import { describe, expect, it } from 'vitest';
import {
  isWheelError,
  TimingWheel,
  WheelCallbackError,
  WheelConfigError,
  WheelHorizonError,
  WheelReentryError,
  WheelTickError,
  type TimerHandle,
  type TimingWheelOptions,
} from '../src/index.js';

interface Fire {
  value: string;
  tick: number;
  firedAt: number;
}

/** A wheel that records every fire; `extra` runs inside onFire. */
function recordingWheel(
  options: Omit<TimingWheelOptions<string>, 'onFire'> = {},
  extra?: (value: string, firedAt: number, wheel: TimingWheel<string>) => void,
) {
  const fires: Fire[] = [];
  const wheel: TimingWheel<string> = new TimingWheel<string>({
    ...options,
    onFire: (value, firedAt, handle) => {
      fires.push({ value, tick: handle.tick, firedAt });
      extra?.(value, firedAt, wheel);
    },
  });
  return { wheel, fires };
}

/** Advances one tick at a time up to `tick`, so a fire's `firedAt` is checked tick by tick. */
function stepTo<T>(wheel: TimingWheel<T>, tick: number): void {
  for (let t = wheel.currentTick + 1; t <= tick; t++) wheel.advanceTo(t);
}

describe('configuration', () => {
  it('defaults to 3 levels of 64 slots, 1 ms ticks, horizon 64^3', () => {
    const { wheel } = recordingWheel();
    expect(wheel.levels).toBe(3);
    expect(wheel.slotsPerLevel).toBe(64);
    expect(wheel.tickMs).toBe(1);
    expect(wheel.startMs).toBe(0);
    expect(wheel.horizonTicks).toBe(262_144);
    expect(wheel.currentTick).toBe(0);
    expect(wheel.stats()).toEqual({ scheduled: 0, fired: 0, cancelled: 0, cascades: 0, size: 0 });
  });

  it('derives the horizon from a custom geometry', () => {
    expect(recordingWheel({ levels: 2, slotsPerLevel: 4 }).wheel.horizonTicks).toBe(16);
    expect(recordingWheel({ levels: 1, slotsPerLevel: 2 }).wheel.horizonTicks).toBe(2);
  });

  it.each([
    ['tickMs', { tickMs: 0 }],
    ['tickMs', { tickMs: -5 }],
    ['tickMs', { tickMs: Number.NaN }],
    ['tickMs', { tickMs: Number.POSITIVE_INFINITY }],
    ['levels', { levels: 0 }],
    ['levels', { levels: 1.5 }],
    ['slotsPerLevel', { slotsPerLevel: 1 }],
    ['slotsPerLevel', { slotsPerLevel: 3 }],
    ['slotsPerLevel', { slotsPerLevel: 100 }],
    ['slotsPerLevel', { slotsPerLevel: 64.5 }],
    ['startMs', { startMs: Number.NaN }],
    ['levels', { levels: 2, slotsPerLevel: 2 ** 27 }],
  ])('rejects invalid %s with a typed WheelConfigError', (field, options) => {
    let error: unknown;
    try {
      recordingWheel(options);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WheelConfigError);
    expect(error).toBeInstanceOf(RangeError);
    expect((error as WheelConfigError).code).toBe('WHEEL_CONFIG');
    expect((error as WheelConfigError).field).toBe(field);
  });
});

describe('scheduling arguments', () => {
  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2 ** 53])(
    'rejects tick %s with WheelTickError and schedules nothing',
    (tick) => {
      const { wheel } = recordingWheel();
      expect(() => wheel.scheduleAt(tick, 'x')).toThrow(WheelTickError);
      expect(() => wheel.scheduleAfter(tick, 'x')).toThrow(WheelTickError);
      expect(() => wheel.advanceTo(tick)).toThrow(WheelTickError);
      expect(() => wheel.advance(tick)).toThrow(WheelTickError);
      try {
        wheel.scheduleAt(tick, 'x');
      } catch (e) {
        expect(e).toBeInstanceOf(RangeError);
        expect((e as WheelTickError).code).toBe('WHEEL_TICK');
        expect((e as WheelTickError).field).toBe('tick');
        expect(Object.is((e as WheelTickError).value, tick)).toBe(true);
      }
      expect(wheel.stats()).toEqual({ scheduled: 0, fired: 0, cancelled: 0, cascades: 0, size: 0 });
    },
  );

  it('rejects delta = horizon with WheelHorizonError and accepts horizon - 1', () => {
    const { wheel } = recordingWheel();
    let error: unknown;
    try {
      wheel.scheduleAt(262_144, 'far');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WheelHorizonError);
    const horizon = error as WheelHorizonError;
    expect(horizon.code).toBe('WHEEL_HORIZON');
    expect(horizon.deltaTicks).toBe(262_144);
    expect(horizon.horizonTicks).toBe(262_144);
    expect(horizon.message).toBe('beyond wheel horizon: delta=262144');
    expect(() => wheel.scheduleAfter(262_144, 'far')).toThrow(WheelHorizonError);
    expect(wheel.size).toBe(0);
    expect(wheel.scheduleAt(262_143, 'edge').state).toBe('pending');
    expect(wheel.size).toBe(1);
  });

  it('measures the horizon from the current tick', () => {
    const { wheel, fires } = recordingWheel({ levels: 2, slotsPerLevel: 4 });
    wheel.advanceTo(100);
    expect(() => wheel.scheduleAt(116, 'x')).toThrow(WheelHorizonError);
    wheel.scheduleAt(115, 'edge');
    stepTo(wheel, 120);
    expect(fires).toEqual([{ value: 'edge', tick: 115, firedAt: 115 }]);
  });
});

describe('firing', () => {
  const boundaries = [
    1, 2, 63, 64, 65, 127, 128, 129, 4095, 4096, 4097, 4096 + 64, 4096 + 64 + 1, 2 * 4096, 2 * 4096 + 3 * 64,
    63 * 4096 + 63 * 64 + 63, 262_143,
  ];

  it.each([0, 1, 37, 63, 64, 4095, 4096, 4096 + 64 - 1])(
    'fires timers at slot-span boundaries exactly at their tick (start tick %i)',
    (start) => {
      const { wheel, fires } = recordingWheel();
      wheel.advanceTo(start);
      for (const delta of boundaries) wheel.scheduleAt(start + delta, `d${delta}`);
      // Absolute multiples of the spans, too.
      const absolute = [64, 4096, 64 * 64 + 64, 3 * 4096, 100 * 64, 262_143].filter(
        (t) => t > start && t - start < 262_144,
      );
      for (const t of absolute) wheel.scheduleAt(t, `a${t}`);
      stepTo(wheel, start + 262_143);
      expect(fires).toHaveLength(boundaries.length + absolute.length);
      for (const fire of fires) expect(fire.firedAt).toBe(fire.tick);
      expect(wheel.size).toBe(0);
    },
  );

  it('fires every (start, delta) pair of a small wheel exactly at its tick', () => {
    // 3 levels x 4 slots: horizon 64. Covers every wrap-around position of every level.
    for (let start = 0; start < 80; start++) {
      const { wheel, fires } = recordingWheel({ levels: 3, slotsPerLevel: 4 });
      wheel.advanceTo(start);
      for (let delta = 1; delta < 64; delta++) wheel.scheduleAt(start + delta, String(delta));
      stepTo(wheel, start + 63);
      expect(fires.map((f) => f.firedAt)).toEqual(fires.map((f) => f.tick));
      expect(fires.map((f) => f.tick)).toEqual(Array.from({ length: 63 }, (_, i) => start + i + 1));
    }
  });

  it('fires in tick order when one advanceTo jumps over many ticks', () => {
    const { wheel, fires } = recordingWheel();
    const ticks = [9000, 5, 4096, 64, 262_143, 70, 4160, 63];
    for (const t of ticks) wheel.scheduleAt(t, String(t));
    expect(wheel.advanceTo(300_000)).toBe(ticks.length);
    expect(fires.map((f) => f.tick)).toEqual([...ticks].sort((a, b) => a - b));
    for (const fire of fires) expect(fire.firedAt).toBe(fire.tick);
    expect(wheel.currentTick).toBe(300_000);
  });

  it('fires timers due now or in the past at the next advance, never losing them', () => {
    const { wheel, fires } = recordingWheel();
    wheel.advanceTo(500);
    wheel.scheduleAt(500, 'now');
    wheel.scheduleAt(3, 'past');
    wheel.scheduleAfter(0, 'zero-delay');
    expect(wheel.nextDueTick()).toBe(3);
    expect(wheel.advance(0)).toBe(3);
    expect(fires).toEqual([
      { value: 'now', tick: 500, firedAt: 500 },
      { value: 'past', tick: 3, firedAt: 500 },
      { value: 'zero-delay', tick: 500, firedAt: 500 },
    ]);
    wheel.scheduleAt(10, 'late');
    wheel.advanceTo(200); // the clock stepped back: no movement, overdue still fires
    expect(wheel.currentTick).toBe(500);
    expect(fires.at(-1)).toEqual({ value: 'late', tick: 10, firedAt: 500 });
  });

  it('fires a timer re-armed from its own callback exactly at its new tick', () => {
    const rearms = [1, 64, 4096, 64 * 64 + 64, 63, 4095, 262_143, 65];
    let i = 0;
    const { wheel, fires } = recordingWheel({}, (value, firedAt, w) => {
      const delay = rearms[i++];
      if (delay !== undefined) w.scheduleAt(firedAt + delay, value);
    });
    wheel.scheduleAt(7, 'r');
    const end = 7 + rearms.reduce((a, b) => a + b, 0);
    stepTo(wheel, end);
    expect(fires).toHaveLength(rearms.length + 1);
    for (const fire of fires) expect(fire.firedAt).toBe(fire.tick);
    expect(fires.at(-1)?.tick).toBe(end);
  });

  it('fires a timer re-armed for the current tick within the same tick, bounded per pass', () => {
    let count = 0;
    const { wheel, fires } = recordingWheel({}, (value, firedAt, w) => {
      if (++count < 100) w.scheduleAt(firedAt, value); // always "now": must not spin forever
    });
    wheel.scheduleAt(3, 'again');
    wheel.advanceTo(3);
    expect(fires.slice(0, 2)).toEqual([
      { value: 'again', tick: 3, firedAt: 3 },
      { value: 'again', tick: 3, firedAt: 3 },
    ]);
    expect(fires).toHaveLength(2); // one level-0 fire plus one overdue pass at tick 3
    wheel.advanceTo(10);
    expect(fires.length).toBeLessThanOrEqual(2 + 1 + 2 * 7);
  });
});

describe('cancel', () => {
  it('is O(1), idempotent, and a cancelled timer never fires', () => {
    const { wheel, fires } = recordingWheel();
    const a = wheel.scheduleAt(5000, 'a'); // level 2
    const b = wheel.scheduleAt(70, 'b'); // level 1
    const c = wheel.scheduleAt(3, 'c'); // level 0
    const d = wheel.scheduleAt(0, 'd'); // overdue
    expect(wheel.cancel(a)).toBe(true);
    expect(wheel.cancel(a)).toBe(false);
    expect(wheel.cancel(d)).toBe(true);
    expect(a.state).toBe('cancelled');
    wheel.advanceTo(64); // b cascaded to level 0
    expect(wheel.cancel(b)).toBe(true);
    expect(wheel.cancel(c)).toBe(false); // already fired
    expect(c.state).toBe('fired');
    wheel.advanceTo(10_000);
    expect(fires.map((f) => f.value)).toEqual(['c']);
    expect(wheel.stats()).toEqual({ scheduled: 4, fired: 1, cancelled: 3, cascades: 1, size: 0 });
  });

  it('refuses handles of another wheel and foreign objects', () => {
    const one = recordingWheel().wheel;
    const two = recordingWheel().wheel;
    const handle = one.scheduleAt(10, 'x');
    expect(two.cancel(handle)).toBe(false);
    expect(two.cancel({ tick: 10, value: 'x', state: 'pending' } as TimerHandle<string>)).toBe(false);
    expect(handle.state).toBe('pending');
    expect(one.cancel(handle)).toBe(true);
  });

  it('cancels a timer due at the same tick from inside a callback', () => {
    const handles: TimerHandle<string>[] = [];
    const results: boolean[] = [];
    const { wheel, fires } = recordingWheel({}, (value, _firedAt, w) => {
      if (value === 'first') results.push(w.cancel(handles[1] as TimerHandle<string>));
    });
    handles.push(wheel.scheduleAt(4096, 'first'), wheel.scheduleAt(4096, 'second'), wheel.scheduleAt(4096, 'third'));
    wheel.advanceTo(4096);
    expect(results).toEqual([true]);
    expect(fires.map((f) => f.value)).toEqual(['first', 'third']);
    expect(wheel.size).toBe(0);
  });
});

describe('stats and nextDueTick', () => {
  it('counts cascades: a timer cascades at most levels - 1 times', () => {
    const { wheel, fires } = recordingWheel();
    wheel.scheduleAt(4096 + 64 + 1, 'x'); // level 2 -> level 1 at 4096 -> level 0 at 4160
    wheel.advanceTo(4096);
    expect(wheel.stats().cascades).toBe(1);
    wheel.advanceTo(5000);
    expect(fires).toEqual([{ value: 'x', tick: 4161, firedAt: 4161 }]);
    expect(wheel.stats()).toEqual({ scheduled: 1, fired: 1, cancelled: 0, cascades: 2, size: 0 });
  });

  it('reports the earliest pending tick across levels and the overdue list', () => {
    const { wheel } = recordingWheel();
    expect(wheel.nextDueTick()).toBeUndefined();
    const level1 = wheel.scheduleAt(64, 'level1');
    wheel.advanceTo(60);
    wheel.scheduleAt(70, 'level0');
    expect(wheel.nextDueTick()).toBe(64); // a coarse-level timer earlier than the level-0 one
    wheel.cancel(level1);
    expect(wheel.nextDueTick()).toBe(70);
    wheel.scheduleAt(60 + 262_143, 'far');
    wheel.scheduleAt(60 + 5000, 'mid');
    expect(wheel.nextDueTick()).toBe(70);
    wheel.advanceTo(70);
    expect(wheel.nextDueTick()).toBe(5060);
    wheel.scheduleAt(12, 'overdue');
    expect(wheel.nextDueTick()).toBe(12);
    wheel.advance(0);
    wheel.advanceTo(5060);
    expect(wheel.nextDueTick()).toBe(262_203);
    wheel.advanceTo(262_203);
    expect(wheel.nextDueTick()).toBeUndefined();
  });

  it('jumps over an empty stretch in O(1)', () => {
    const { wheel, fires } = recordingWheel();
    wheel.advanceTo(1e15);
    expect(wheel.currentTick).toBe(1e15);
    wheel.scheduleAfter(4097, 'x');
    wheel.advanceTo(1e15 + 10_000);
    expect(fires).toEqual([{ value: 'x', tick: 1e15 + 4097, firedAt: 1e15 + 4097 }]);
  });
});

describe('callback failures', () => {
  it('fires every timer of the failing tick, stops after it, and reports a WheelCallbackError', () => {
    const boom = new Error('boom');
    const { wheel, fires } = recordingWheel({}, (value) => {
      if (value === 'bad') throw boom;
    });
    wheel.scheduleAt(5, 'a');
    wheel.scheduleAt(5, 'bad');
    wheel.scheduleAt(5, 'c');
    wheel.scheduleAt(6, 'd');
    let error: unknown;
    try {
      wheel.advanceTo(10);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WheelCallbackError);
    expect((error as WheelCallbackError).code).toBe('WHEEL_CALLBACK');
    expect((error as WheelCallbackError).tick).toBe(5);
    expect((error as WheelCallbackError).errors).toEqual([boom]);
    expect(fires.map((f) => f.value)).toEqual(['a', 'bad', 'c']);
    expect(wheel.currentTick).toBe(5);
    expect(wheel.advanceTo(10)).toBe(1);
    expect(fires.map((f) => f.value)).toEqual(['a', 'bad', 'c', 'd']);
  });

  it('refuses to advance from inside onFire', () => {
    const { wheel } = recordingWheel({}, (_value, _firedAt, w) => {
      w.advance();
    });
    wheel.scheduleAt(1, 'x');
    try {
      wheel.advance();
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(WheelCallbackError);
      expect((e as WheelCallbackError).errors[0]).toBeInstanceOf(WheelReentryError);
      expect(((e as WheelCallbackError).errors[0] as WheelReentryError).code).toBe('WHEEL_REENTRY');
    }
    expect(wheel.advance(3)).toBe(0); // the wheel is usable afterwards
  });
});

describe('time mapping', () => {
  it('maps ms to ticks relative to startMs: floor for now, ceil for due times', () => {
    const { wheel } = recordingWheel({ tickMs: 10, startMs: 1000 });
    expect(wheel.tickForTime(1000)).toBe(0);
    expect(wheel.tickForTime(1009.9)).toBe(0);
    expect(wheel.tickForTime(1010)).toBe(1);
    expect(wheel.tickForTime(999)).toBe(0);
    expect(wheel.tickForDueTime(1000)).toBe(0);
    expect(wheel.tickForDueTime(1001)).toBe(1);
    expect(wheel.tickForDueTime(1010)).toBe(1);
    expect(wheel.tickForDueTime(1010.5)).toBe(2);
    expect(wheel.tickForDueTime(-5000)).toBe(0);
    expect(wheel.timeForTick(3)).toBe(1030);
    expect(wheel.timeForTick(wheel.tickForDueTime(1234))).toBeGreaterThanOrEqual(1234);
    expect(() => wheel.tickForTime(Number.NaN)).toThrow(WheelTickError);
    expect(() => wheel.tickForDueTime(Number.POSITIVE_INFINITY)).toThrow(WheelTickError);
    expect(() => wheel.timeForTick(-1)).toThrow(WheelTickError);
  });
});

describe('errors', () => {
  it('marks every wheel error with a code', () => {
    const errors = [
      new WheelHorizonError(10, 8),
      new WheelTickError('tick', -1, 'x'),
      new WheelConfigError('tickMs', 'x'),
      new WheelCallbackError([], 1),
      new WheelReentryError(),
    ];
    expect(errors.map((e) => [isWheelError(e), e.code])).toEqual([
      [true, 'WHEEL_HORIZON'],
      [true, 'WHEEL_TICK'],
      [true, 'WHEEL_CONFIG'],
      [true, 'WHEEL_CALLBACK'],
      [true, 'WHEEL_REENTRY'],
    ]);
    expect(isWheelError(new Error('x'))).toBe(false);
    expect(isWheelError(undefined)).toBe(false);
  });
});
