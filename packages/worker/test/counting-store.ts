import type { Store } from '@postpone/core';

export interface StoreCalls {
  /** Claim queries sent, and how many of them claimed nothing. */
  claim: number;
  emptyClaims: number;
  /** Reads of near tasks (hybrid discovery's loads). */
  peekDue: number;
}

export interface CountingStore<Tx> {
  /** The real store behind a thin proxy: every call still runs against it. */
  readonly store: Store<Tx>;
  readonly calls: StoreCalls;
  /** While true, notifications are dropped before the worker sees them (as if lost on the way). */
  dropNotices: boolean;
}

/** Wraps a real store to count its claim and peekDue calls (and optionally drop notifications). */
export function countingStore<Tx>(store: Store<Tx>): CountingStore<Tx> {
  const calls: StoreCalls = { claim: 0, emptyClaims: 0, peekDue: 0 };
  const counting: CountingStore<Tx> = {
    calls,
    dropNotices: false,
    store: new Proxy(store, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop, target);
        if (typeof value !== 'function') return value;
        const bound = value.bind(target) as (...args: unknown[]) => Promise<unknown>;
        if (prop === 'claim') {
          return async (...args: unknown[]) => {
            calls.claim += 1;
            const tasks = (await bound(...args)) as unknown[];
            if (tasks.length === 0) calls.emptyClaims += 1;
            return tasks;
          };
        }
        if (prop === 'peekDue') {
          return (...args: unknown[]) => {
            calls.peekDue += 1;
            return bound(...args);
          };
        }
        if (prop === 'listen') {
          return (onNotice: (notice: unknown) => void, options?: unknown) =>
            bound((notice: unknown) => {
              if (!counting.dropNotices) onNotice(notice);
            }, options);
        }
        return bound;
      },
    }),
  };
  return counting;
}
