/**
 * Bounded waiting: every wait of the harness and its fault tools ends by a deadline, never by a
 * fixed sleep that "should be long enough".
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Thrown when a bounded wait reaches its deadline. */
export class WaitTimeoutError extends Error {
  constructor(what: string, timeoutMs: number, detail?: string) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}${detail ? `; ${detail}` : ''}`);
    this.name = 'WaitTimeoutError';
  }
}

export interface PollOptions {
  /** Give up after this many ms (monotonic clock). */
  readonly timeoutMs: number;
  /** Pause between two checks, in ms (default 20). */
  readonly intervalMs?: number;
  /** What is awaited, for the timeout message. */
  readonly what?: string;
}

/**
 * Calls `check` until it returns a value other than `undefined`/`false`, or the deadline passes.
 * The number of checks is bounded by `timeoutMs / intervalMs + 1`.
 *
 * @returns the first accepted value
 * @throws WaitTimeoutError at the deadline (with the last value seen)
 */
export async function pollUntil<T>(check: () => Promise<T | undefined | false> | T | undefined | false, options: PollOptions): Promise<T> {
  const intervalMs = options.intervalMs ?? 20;
  const deadline = performance.now() + options.timeoutMs;
  const maxChecks = Math.ceil(options.timeoutMs / Math.max(1, intervalMs)) + 1;
  let last: unknown;
  for (let i = 0; i < maxChecks; i++) {
    last = await check();
    if (last !== undefined && last !== false) return last as T;
    if (performance.now() >= deadline) break;
    await sleep(Math.min(intervalMs, Math.max(0, deadline - performance.now())));
  }
  throw new WaitTimeoutError(options.what ?? 'condition', options.timeoutMs, `last value: ${JSON.stringify(last)}`);
}

/**
 * Races a promise against a deadline.
 * @throws WaitTimeoutError when `timeoutMs` passes first (the promise keeps running)
 */
export async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WaitTimeoutError(what, timeoutMs)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
