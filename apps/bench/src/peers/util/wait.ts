/**
 * Bounded waiting: every wait in the bench has a deadline, and polls rather than sleeping and hoping.
 */
import { setTimeout as delay } from 'node:timers/promises';

export class WaitTimeoutError extends Error {
  constructor(what: string, timeoutMs: number) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}`);
    this.name = 'WaitTimeoutError';
  }
}

export interface WaitOptions {
  /** Give up after this many ms. */
  readonly timeoutMs: number;
  /** Pause between checks, in ms (default 10). */
  readonly intervalMs?: number;
  /** Named in the timeout error. */
  readonly what: string;
}

/** Calls `check` until it returns a value other than `undefined`/`false`; `undefined` at the deadline. */
export async function waitUntil<T>(check: () => Promise<T | undefined | false> | T | undefined | false, options: Omit<WaitOptions, 'what'>): Promise<T | undefined> {
  const deadline = performance.now() + options.timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (performance.now() >= deadline) return undefined;
    await delay(options.intervalMs ?? 10);
  }
}

/**
 * Like {@link waitUntil}, but throws at the deadline.
 * @throws WaitTimeoutError when the deadline passes first.
 */
export async function waitFor<T>(check: () => Promise<T | undefined | false> | T | undefined | false, options: WaitOptions): Promise<T> {
  const value = await waitUntil(check, options);
  if (value === undefined) throw new WaitTimeoutError(options.what, options.timeoutMs);
  return value;
}

export { delay };
