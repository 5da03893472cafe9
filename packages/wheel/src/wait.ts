/**
 * Waits that never reject: a call's outcome as a value, an abort as a promise, a promise raced
 * against a {@link Pacing} timer, and one signal for many.
 */
import type { Pacing } from './pacing.js';

/** The outcome of a call, as a value: it never rejects. */
export type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** Calls `fn` and settles its result; a synchronous throw (of any value) becomes `{ ok: false }`. */
export async function settle<T>(fn: () => T | PromiseLike<T>): Promise<Settled<Awaited<T>>> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Resolves when `signal` aborts (never, if it never does). */
export function whenAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * Races a promise that never rejects against `ms` of `pacing` time; the timer is cleared as soon as
 * either side wins. Also resolves with {@link TIMED_OUT} when `stop` aborts (callers check `stop`).
 */
export async function raceTimer<T>(pacing: Pacing, promise: Promise<T>, ms: number, stop?: AbortSignal): Promise<T | typeof TIMED_OUT> {
  const timer = new AbortController();
  const onStop = () => timer.abort();
  stop?.addEventListener('abort', onStop, { once: true });
  try {
    return await Promise.race([promise, pacing.sleep(ms, timer.signal).then((): typeof TIMED_OUT => TIMED_OUT)]);
  } finally {
    timer.abort();
    stop?.removeEventListener('abort', onStop);
  }
}

/**
 * A signal that aborts as soon as any of `signals` does. Call `dispose` when done with it, so the
 * long-lived inputs (e.g. the worker's stop signal) do not collect listeners.
 */
export function anySignal(signals: readonly AbortSignal[]): { readonly signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  for (const s of signals) {
    if (s.aborted) {
      controller.abort();
      return { signal: controller.signal, dispose: () => {} };
    }
  }
  for (const s of signals) s.addEventListener('abort', onAbort, { once: true });
  const dispose = () => {
    for (const s of signals) s.removeEventListener('abort', onAbort);
  };
  return { signal: controller.signal, dispose };
}
