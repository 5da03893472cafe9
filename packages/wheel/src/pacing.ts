/**
 * The worker's own sense of time: a monotonic clock and a timer. It only paces the worker (lease
 * renewal, polling, shutdown and handler time limits); due times and lease deadlines are judged by the
 * store's clock (docs/contract.md#promise-1).
 *
 * The default reads `performance.now()` (monotonic, immune to wall-clock steps; HTML Living Standard
 * "High Resolution Time") and waits with `setTimeout`. Tests inject {@link ManualPacing}.
 */
import { performance } from 'node:perf_hooks';

/** Largest duration a timer can wait: 2³¹−1 ms (Node.js `setTimeout`, HTML Living Standard timers). */
export const MAX_TIMER_MS = 2_147_483_647;

export interface Pacing {
  /** Monotonic milliseconds from an arbitrary origin; never goes backwards. */
  now(): number;
  /**
   * Resolves after `ms` milliseconds, or as soon as `signal` aborts (it never rejects; check
   * `signal.aborted` afterwards). `ms <= 0` resolves on the next turn.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** `performance.now()` and `setTimeout`. Timers are unref'd only by the caller's choice: they keep the process alive while a worker runs. */
export const systemPacing: Pacing = Object.freeze({
  now: () => performance.now(),
  sleep: (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', done, { once: true });
    }),
});

/**
 * Calls `fn` once after `ms` of `pacing` time unless the returned cancel function is called first
 * (cancelling after it fired, or twice, does nothing). On {@link systemPacing} this is one
 * `setTimeout` and no promise; any other pacing (a test's {@link Pacing}) is driven through its
 * `sleep`. `fn` must not throw: it runs as a timer callback, where a throw is uncaught.
 * @param ms delay in ms, clamped to 0..{@link MAX_TIMER_MS}
 * @returns the cancel function
 */
export function startTimer(pacing: Pacing, ms: number, fn: () => void): () => void {
  const delayMs = Math.min(MAX_TIMER_MS, Math.max(0, ms));
  if (pacing === systemPacing) {
    const timer = setTimeout(fn, delayMs);
    return () => clearTimeout(timer);
  }
  const cancel = new AbortController();
  void pacing.sleep(delayMs, cancel.signal).then(() => {
    if (!cancel.signal.aborted) fn();
  });
  return () => cancel.abort();
}
