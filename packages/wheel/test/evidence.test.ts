/**
 * Evidence cases (docs/contract.md#evidence) for the wheel (`model=in-process-wheel`): each records one CASE line
 * and asserts the same invariants, so a violation both prints FAIL and fails the test.
 */
import { recordCase } from '@postpone/testkit';
import { describe, expect, it } from 'vitest';
import { TimingWheel, WheelHorizonError, type TimerHandle } from '../src/index.js';
import { mulberry32, randomInt } from '@postpone/testkit';
import { cloneStore, countBy, createStore, ModelWorker, runWorker } from './support/restart-model.js';

const MODEL = 'in-process-wheel';
const LEVELS = 3;
const SLOTS = 64;
const HORIZON = SLOTS ** LEVELS; // 262 144 ticks

describe('evidence: wheel', () => {
  it('wheel_fire_exact_tick', () => {
    const seed = 1987;
    const random = mulberry32(seed);
    const timers = 20_000;
    const fireCount = new Array<number>(timers).fill(0);
    const dueTick: number[] = [];
    let wrongTick = 0;
    const wheel = new TimingWheel<number>({
      levels: LEVELS,
      slotsPerLevel: SLOTS,
      onFire: (i, firedAt) => {
        fireCount[i] = (fireCount[i] ?? 0) + 1;
        if (firedAt !== dueTick[i]) wrongTick++;
      },
    });

    const handles: TimerHandle<number>[] = [];
    /** tick -> timers to cancel while the wheel is at that tick (always before they are due). */
    const cancelAt = new Map<number, number[]>();
    for (let i = 0; i < timers; i++) {
      const tick = randomInt(random, 1, HORIZON - 1);
      dueTick.push(tick);
      handles.push(wheel.scheduleAt(tick, i));
      if (random() < 0.2) {
        const at = randomInt(random, 0, tick - 1);
        cancelAt.set(at, [...(cancelAt.get(at) ?? []), i]);
      }
    }

    let cancelled = 0;
    let cancelRefused = 0;
    const cancelledSet = new Set<number>();
    for (let tick = 0; tick < HORIZON; tick++) {
      for (const i of cancelAt.get(tick) ?? []) {
        if (wheel.cancel(handles[i] as TimerHandle<number>)) {
          cancelled++;
          cancelledSet.add(i);
        } else cancelRefused++;
      }
      wheel.advance(1);
    }

    let fired = 0;
    let missed = 0;
    let dup = 0;
    let firedAfterCancel = 0;
    for (let i = 0; i < timers; i++) {
      const n = fireCount[i] ?? 0;
      fired += n;
      if (n > 1) dup++;
      if (n === 0 && !cancelledSet.has(i)) missed++;
      if (n > 0 && cancelledSet.has(i)) firedAfterCancel++;
    }
    const { cascades, size: remaining } = wheel.stats();
    const pass =
      wrongTick === 0 && missed === 0 && dup === 0 && remaining === 0 && cancelRefused === 0 && firedAfterCancel === 0 && fired + cancelled === timers;
    recordCase('wheel_fire_exact_tick', pass, {
      model: MODEL,
      seed,
      timers,
      fired,
      cancelled,
      wrongTick,
      missed,
      dup,
      cascades,
      remaining,
    });
    expect(wrongTick).toBe(0);
    expect(missed).toBe(0);
    expect(dup).toBe(0);
    expect(remaining).toBe(0);
    expect(cancelRefused).toBe(0);
    expect(firedAfterCancel).toBe(0);
    expect(fired + cancelled).toBe(timers);
    expect(cancelled).toBeGreaterThan(timers * 0.15);
    expect(cascades).toBeGreaterThan(0);
  });

  it('wheel_horizon_rejected', () => {
    const fired: number[] = [];
    const wheel = new TimingWheel<string>({
      levels: LEVELS,
      slotsPerLevel: SLOTS,
      onFire: (_value, tick) => fired.push(tick),
    });
    let rejection: unknown;
    try {
      wheel.scheduleAt(HORIZON, 'at-span');
    } catch (error) {
      rejection = error;
    }
    const rejected =
      rejection instanceof WheelHorizonError &&
      rejection.code === 'WHEEL_HORIZON' &&
      rejection.deltaTicks === HORIZON &&
      rejection.horizonTicks === HORIZON;
    let accepted = false;
    try {
      accepted = wheel.scheduleAt(HORIZON - 1, 'at-span-minus-1').state === 'pending';
    } catch {
      accepted = false;
    }
    wheel.advanceTo(HORIZON);
    const firesAtItsTick = fired.length === 1 && fired[0] === HORIZON - 1;
    const pass = rejected && accepted && firesAtItsTick && wheel.size === 0;
    recordCase('wheel_horizon_rejected', pass, {
      model: MODEL,
      scheduleAtSpan: rejection instanceof Error ? rejection.message : 'accepted',
      scheduleAtSpanMinus1: accepted ? 'accepted' : 'rejected',
    });
    expect(rejection).toBeInstanceOf(WheelHorizonError);
    expect(rejected).toBe(true);
    expect((rejection as Error).message).toBe('beyond wheel horizon: delta=262144');
    expect(accepted).toBe(true);
    expect(fired).toEqual([HORIZON - 1]);
  });

  it('wheel_restart_needs_durable', () => {
    const seed = 1997;
    const tasks = 2000;
    const dueRangeMs = 3 * HORIZON; // the store holds tasks far beyond one wheel horizon
    const crashAtTick = HORIZON + 12_345; // 1 ms per tick, worker started at 0
    const loadEveryMs = 4096;
    const store = createStore(mulberry32(seed), tasks, dueRangeMs, [500, 2500]);
    const endMs = dueRangeMs + 2500 + 1;

    // Before the crash: one worker, wheel loaded from the store as tasks come within the horizon.
    const before = new ModelWorker(store, 0, { loadFromStore: true, recoverOrphans: false, loadEveryMs });
    runWorker(before, 0, crashAtTick);
    const inWheelAtCrash = countBy(store, (t) => t.state === 'SCHEDULED' && before.loaded.has(t.id));
    const notYetLoaded = countBy(store, (t) => t.state === 'SCHEDULED' && !before.loaded.has(t.id));
    const firedNotCommittedAtCrash = countBy(store, (t) => t.state === 'RUNNING');
    const committedAtCrash = countBy(store, (t) => t.state === 'DONE');
    // The crash: `before` (its wheel and its pending commits) is dropped; only `store` survives.

    // Control: an empty wheel restarted without reloading already-known tasks from the store.
    const controlStore = cloneStore(store);
    runWorker(new ModelWorker(controlStore, crashAtTick, { loadFromStore: false, recoverOrphans: false, loadEveryMs }), crashAtTick, endMs);
    const neverWithoutRebuild = countBy(controlStore, (t) => t.executions === 0);

    // Rebuild: a new wheel from the store (due within the horizon and not committed), to the end.
    runWorker(new ModelWorker(store, crashAtTick, { loadFromStore: true, recoverOrphans: true, loadEveryMs }), crashAtTick, endMs);
    const never = countBy(store, (t) => t.executions === 0);
    const executedTwice = countBy(store, (t) => t.executions === 2);
    const moreThanTwice = countBy(store, (t) => t.executions > 2);
    const done = countBy(store, (t) => t.state === 'DONE');

    const pass =
      never === 0 &&
      moreThanTwice === 0 &&
      executedTwice === firedNotCommittedAtCrash &&
      firedNotCommittedAtCrash > 0 &&
      done === tasks &&
      neverWithoutRebuild > 0;
    recordCase('wheel_restart_needs_durable', pass, {
      model: MODEL,
      seed,
      tasks,
      crashAtTick,
      inWheelAtCrash,
      notYetLoaded,
      firedNotCommittedAtCrash,
      afterRebuild_never: never,
      afterRebuild_executedTwice: executedTwice,
      moreThanTwice,
      neverWithoutRebuild,
    });
    expect(inWheelAtCrash + notYetLoaded + firedNotCommittedAtCrash + committedAtCrash).toBe(tasks);
    expect(inWheelAtCrash).toBeGreaterThan(0);
    expect(notYetLoaded).toBeGreaterThan(0);
    expect(firedNotCommittedAtCrash).toBeGreaterThan(0);
    expect(never).toBe(0);
    expect(moreThanTwice).toBe(0);
    expect(executedTwice).toBe(firedNotCommittedAtCrash);
    expect(done).toBe(tasks);
    expect(neverWithoutRebuild).toBeGreaterThan(0);
    // Without the rebuild, exactly the tasks that lived only in the lost wheel or only in the store never run.
    expect(neverWithoutRebuild).toBe(inWheelAtCrash + notYetLoaded);
  });
});
