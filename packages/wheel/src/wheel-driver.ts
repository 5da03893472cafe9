/**
 * Paces a {@link TimingWheel} from a clock: sleeps until the wheel's next due tick, then advances
 * the wheel to the tick of "now". Clock and timer functions are injected, so tests drive it with a
 * fake clock and never sleep.
 *
 * It sleeps only while something is pending (no idle wake-ups) and never longer than `maxSleepMs`
 * (default 2^31 − 1 ms, the largest delay `setTimeout` honours). After scheduling a timer that may
 * be earlier than the current sleep, call {@link WheelDriver.wake}.
 */
import type { TimingWheel } from './timing-wheel.js';
import { WheelConfigError } from './errors.js';

/** A setTimeout-like pair. `set` must call `callback` once, no earlier than `delayMs` from now. */
export interface DriverTimers {
  set(callback: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

export interface WheelDriverOptions<T> {
  wheel: TimingWheel<T>;
  /** Current time in ms, on the same base as the wheel's `startMs` (e.g. `performance.now()`). */
  now: () => number;
  /** Default: the global `setTimeout` / `clearTimeout`. */
  timers?: DriverTimers;
  /** Longest single sleep, ms; an integer in [1, 2^31 − 1]. Default 2^31 − 1. */
  maxSleepMs?: number;
  /**
   * Receives errors thrown while advancing (e.g. a `WheelCallbackError`). The driver keeps running.
   * Default: rethrow from the timer callback (an uncaught exception).
   */
  onError?: (error: unknown) => void;
}

const MAX_TIMEOUT_MS = 2 ** 31 - 1;

const globalTimers: DriverTimers = {
  set: (callback, delayMs) => setTimeout(callback, delayMs),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export class WheelDriver<T> {
  private readonly wheel: TimingWheel<T>;
  private readonly now: () => number;
  private readonly timers: DriverTimers;
  private readonly maxSleepMs: number;
  private readonly onError: ((error: unknown) => void) | undefined;
  private sleep: unknown = undefined;
  private sleeping = false;
  private started = false;

  /** @throws {WheelConfigError} if `maxSleepMs` is not an integer in [1, 2^31 − 1]. */
  constructor(options: WheelDriverOptions<T>) {
    const { maxSleepMs = MAX_TIMEOUT_MS } = options;
    if (!(Number.isSafeInteger(maxSleepMs) && maxSleepMs >= 1 && maxSleepMs <= MAX_TIMEOUT_MS)) {
      throw new WheelConfigError('maxSleepMs', `expected an integer in [1, ${MAX_TIMEOUT_MS}], got ${String(maxSleepMs)}`);
    }
    this.wheel = options.wheel;
    this.now = options.now;
    this.timers = options.timers ?? globalTimers;
    this.maxSleepMs = maxSleepMs;
    this.onError = options.onError;
  }

  /** True between `start()` and `stop()`. */
  get running(): boolean {
    return this.started;
  }

  /** Advances the wheel to now (firing what is due) and starts sleeping until the next due tick. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.onTimer();
  }

  /** Cancels the pending sleep. Timers stay in the wheel; `start()` resumes. */
  stop(): void {
    this.started = false;
    this.cancelSleep();
  }

  /**
   * Re-computes the sleep after the wheel changed (e.g. an earlier timer was scheduled). Never fires
   * timers synchronously: due work runs from the timer callback. No-op when stopped.
   */
  wake(): void {
    if (this.started) this.arm();
  }

  private onTimer(): void {
    this.sleeping = false;
    this.sleep = undefined;
    let failure: { error: unknown } | undefined;
    try {
      this.wheel.advanceTo(this.wheel.tickForTime(this.now()));
    } catch (error) {
      failure = { error };
    }
    if (this.started) this.arm();
    if (failure) {
      if (this.onError) this.onError(failure.error);
      else throw failure.error;
    }
  }

  /** Replaces the pending sleep with one that ends at the wheel's next due tick (if any). */
  private arm(): void {
    this.cancelSleep();
    const next = this.wheel.nextDueTick();
    if (next === undefined) return;
    const nowMs = this.now();
    let delayMs = 0;
    if (next > this.wheel.tickForTime(nowMs)) {
      // At least 1 ms: the due tick has not begun by the wheel's own mapping, so never spin.
      const untilDue = Math.ceil(this.wheel.timeForTick(next) - nowMs);
      delayMs = Math.min(this.maxSleepMs, Math.max(1, untilDue));
    }
    this.sleeping = true;
    this.sleep = this.timers.set(() => this.onTimer(), delayMs);
  }

  private cancelSleep(): void {
    if (this.sleeping) this.timers.clear(this.sleep);
    this.sleeping = false;
    this.sleep = undefined;
  }
}
