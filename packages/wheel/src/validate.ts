/** Argument checks shared by the wheel and its driver. Each throws a typed error, never coerces. */
import { WheelTickError } from './errors.js';

/**
 * Asserts a non-negative safe integer (a tick, or a delay in ticks).
 * @throws {WheelTickError} for negative, fractional, non-finite or unsafe values.
 */
export function assertTickValue(field: string, value: number): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new WheelTickError(field, value, 'a non-negative safe integer');
  }
}

/**
 * Asserts a finite number of milliseconds.
 * @throws {WheelTickError} for NaN, ±Infinity or non-numbers.
 */
export function assertFiniteMs(field: string, value: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new WheelTickError(field, value, 'a finite number of milliseconds');
  }
}
