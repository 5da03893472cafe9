import { overrideStore, type Store } from '@postpone/core';

type Method = 'claim' | 'extend' | 'extendMany' | 'complete' | 'completeMany' | 'fail' | 'release' | 'reclaimExpired' | 'getTask';

/**
 * Wraps a real store; `before[method]` runs before each call of that method and may throw (a fault)
 * or wait (a slow database). Everything else goes straight to the store.
 */
export function faultyStore<Tx>(store: Store<Tx>, before: Partial<Record<Method, (call: number) => void | Promise<void>>>): Store<Tx> {
  const overrides: Record<string, unknown> = {};
  for (const [method, hook] of Object.entries(before)) {
    const original = (store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[method]!.bind(store);
    let calls = 0;
    overrides[method] = async (...args: unknown[]) => {
      calls += 1;
      await hook(calls);
      return original(...args);
    };
  }
  return overrideStore(store, overrides);
}
