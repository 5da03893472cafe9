import { overrideStore, type Store } from '@postpone/core';

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
    store: overrideStore(store, {
      claim: async (params) => {
        calls.claim += 1;
        const tasks = await store.claim(params);
        if (tasks.length === 0) calls.emptyClaims += 1;
        return tasks;
      },
      peekDue: (params) => {
        calls.peekDue += 1;
        return store.peekDue(params);
      },
      ...(typeof (store as { listen?: unknown }).listen === 'function'
        ? {
            listen: (onNotice: (notice: unknown) => void, options?: unknown) =>
              (store as unknown as { listen: (n: (notice: unknown) => void, o?: unknown) => Promise<unknown> }).listen((notice) => {
                if (!counting.dropNotices) onNotice(notice);
              }, options),
          }
        : {}),
    }),
  };
  return counting;
}
