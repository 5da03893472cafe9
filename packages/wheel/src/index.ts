/**
 * @postpone/wheel — a hierarchical timing wheel (Varghese & Lauck, SOSP 1987; IEEE/ACM ToN 1997)
 * and a small driver that paces it from an injectable clock; the hybrid worker's cache of near tasks
 * on it (`TaskWheel`); and the worker's monotonic pacing (clock, sleep, bounded waits, a manual clock
 * for tests). No I/O besides timers, no dependencies.
 *
 * In Postpone the wheel is only a cache of tasks due within its horizon; the store stays the source
 * of truth (docs/contract.md#discovery): after a crash the wheel is rebuilt from the store.
 */
export { TimingWheel, type WheelStats } from './timing-wheel.js';
export type { TimingWheelOptions } from './wheel-config.js';
export type { TimerHandle, TimerState } from './timer-list.js';
export { WheelDriver, type DriverTimers, type WheelDriverOptions } from './wheel-driver.js';
export {
  isWheelError,
  WheelCallbackError,
  WheelConfigError,
  WheelHorizonError,
  WheelReentryError,
  WheelTickError,
  type WheelErrorCode,
  type WheelErrorShape,
} from './errors.js';
export { TaskWheel, type LoadWindow, type TaskWheelOptions, type WaitingTask } from './task-wheel.js';
export { MAX_TIMER_MS, startTimer, systemPacing, type Pacing } from './pacing.js';
export { ManualPacing } from './manual-pacing.js';
export { anySignal, raceTimer, settle, type Settled, TIMED_OUT, whenAborted } from './wait.js';
