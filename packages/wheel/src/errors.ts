/**
 * Typed errors of `@postpone/wheel`. Every error the wheel throws carries a stable `code`.
 *
 * `isWheelError(e)` works across duplicated copies of this package (a `Symbol.for` marker),
 * unlike `instanceof`.
 */
const MARKER = Symbol.for('postpone.wheel.error');

export type WheelErrorCode = 'WHEEL_HORIZON' | 'WHEEL_TICK' | 'WHEEL_CONFIG' | 'WHEEL_CALLBACK' | 'WHEEL_REENTRY';

/** The fields every wheel error shares. */
export interface WheelErrorShape {
  readonly code: WheelErrorCode;
  readonly message: string;
}

/** True for any error thrown by this package (any copy of it). */
export function isWheelError(error: unknown): error is Error & WheelErrorShape {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[MARKER] === true;
}

/**
 * A timer was scheduled `deltaTicks` ahead of the current tick, at or beyond the horizon
 * (`slotsPerLevel ** levels` ticks). Nothing was scheduled. Keep such a task in the durable
 * store and load it into the wheel once it comes within the horizon.
 */
export class WheelHorizonError extends Error {
  readonly [MARKER] = true;
  readonly code = 'WHEEL_HORIZON' as const;
  /** Ticks between the current tick and the requested tick. */
  readonly deltaTicks: number;
  /** The wheel's horizon in ticks; accepted deltas are `< horizonTicks`. */
  readonly horizonTicks: number;

  constructor(deltaTicks: number, horizonTicks: number) {
    super(`beyond wheel horizon: delta=${deltaTicks}`);
    this.name = 'WheelHorizonError';
    this.deltaTicks = deltaTicks;
    this.horizonTicks = horizonTicks;
  }
}

/**
 * A tick, delay or time argument was negative, fractional, non-finite or beyond
 * `Number.MAX_SAFE_INTEGER`. Nothing changed.
 */
export class WheelTickError extends RangeError {
  readonly [MARKER] = true;
  readonly code = 'WHEEL_TICK' as const;
  /** The argument name, e.g. `tick`, `delayTicks`, `ms`. */
  readonly field: string;
  readonly value: unknown;

  constructor(field: string, value: unknown, expected: string) {
    super(`${field}: expected ${expected}, got ${String(value)}`);
    this.name = 'WheelTickError';
    this.field = field;
    this.value = value;
  }
}

/** A constructor option is invalid (e.g. `tickMs <= 0`, `slotsPerLevel` not a power of two). */
export class WheelConfigError extends RangeError {
  readonly [MARKER] = true;
  readonly code = 'WHEEL_CONFIG' as const;
  /** The option name, e.g. `tickMs`. */
  readonly field: string;

  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = 'WheelConfigError';
    this.field = field;
  }
}

/**
 * One or more `onFire` callbacks threw while the wheel processed `tick`. Every timer due at that
 * tick was still fired (none is lost); the wheel stopped after that tick, so `currentTick === tick`
 * and a later `advanceTo` continues from there.
 */
export class WheelCallbackError extends AggregateError {
  readonly [MARKER] = true;
  readonly code = 'WHEEL_CALLBACK' as const;
  /** The tick being processed when the callbacks threw. */
  readonly tick: number;

  constructor(errors: readonly unknown[], tick: number) {
    super(errors, `${errors.length} onFire callback(s) threw at tick ${tick}`);
    this.name = 'WheelCallbackError';
    this.tick = tick;
  }
}

/** `advanceTo`/`advance` was called from inside an `onFire` callback of the same wheel. */
export class WheelReentryError extends Error {
  readonly [MARKER] = true;
  readonly code = 'WHEEL_REENTRY' as const;

  constructor() {
    super('advance called from inside an onFire callback');
    this.name = 'WheelReentryError';
  }
}
