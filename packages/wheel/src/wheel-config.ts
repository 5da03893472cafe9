/**
 * Options of a {@link TimingWheel} and their validation. Pure: no clock is read here.
 */
import { WheelConfigError } from './errors.js';
import type { TimerHandle } from './timer-list.js';

export interface TimingWheelOptions<T> {
  /**
   * Called once for every timer that fires, in tick order, synchronously inside `advanceTo`.
   * `firedAtTick` equals the timer's `tick` unless it was scheduled for a tick that had already
   * passed. It may schedule and cancel timers (re-arming is allowed); it must not call `advance*`.
   */
  onFire: (value: T, firedAtTick: number, handle: TimerHandle<T>) => void;
  /** Length of one tick in milliseconds; finite and > 0. Default 1. */
  tickMs?: number;
  /** Number of levels (wheels); integer >= 1. Default 3. */
  levels?: number;
  /** Slots per level; a power of two >= 2. Default 64. */
  slotsPerLevel?: number;
  /** The time (ms, any finite base, e.g. `performance.now()`) that tick 0 stands for. Default 0. */
  startMs?: number;
}

/** Validated, derived geometry of a wheel. */
export interface WheelConfig {
  readonly tickMs: number;
  readonly levels: number;
  readonly slotsPerLevel: number;
  readonly startMs: number;
  /** `spans[l]` = ticks covered by one slot of level l = `slotsPerLevel ** l`. */
  readonly spans: readonly number[];
  /** `slotsPerLevel ** levels`: a timer's delta from the current tick must be below this. */
  readonly horizonTicks: number;
}

const MAX_HORIZON = 2 ** 52;

/**
 * Validates options and derives spans and horizon.
 * @throws {WheelConfigError} naming the offending option.
 */
export function resolveWheelConfig(options: Omit<TimingWheelOptions<unknown>, 'onFire'>): WheelConfig {
  const { tickMs = 1, levels = 3, slotsPerLevel = 64, startMs = 0 } = options;
  if (!(typeof tickMs === 'number' && Number.isFinite(tickMs) && tickMs > 0)) {
    throw new WheelConfigError('tickMs', `expected a finite number > 0, got ${String(tickMs)}`);
  }
  if (!(Number.isSafeInteger(levels) && levels >= 1)) {
    throw new WheelConfigError('levels', `expected an integer >= 1, got ${String(levels)}`);
  }
  if (!(Number.isSafeInteger(slotsPerLevel) && slotsPerLevel >= 2 && Number.isInteger(Math.log2(slotsPerLevel)))) {
    throw new WheelConfigError('slotsPerLevel', `expected a power of two >= 2, got ${String(slotsPerLevel)}`);
  }
  if (!(typeof startMs === 'number' && Number.isFinite(startMs))) {
    throw new WheelConfigError('startMs', `expected a finite number, got ${String(startMs)}`);
  }
  if (Math.log2(slotsPerLevel) * levels > Math.log2(MAX_HORIZON)) {
    throw new WheelConfigError('levels', `slotsPerLevel ** levels must not exceed 2^52, got ${slotsPerLevel}^${levels}`);
  }
  const spans: number[] = [];
  for (let l = 0, span = 1; l < levels; l++, span *= slotsPerLevel) spans.push(span);
  return { tickMs, levels, slotsPerLevel, startMs, spans, horizonTicks: slotsPerLevel ** levels };
}
