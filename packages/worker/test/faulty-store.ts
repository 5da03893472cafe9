import type { Store } from '@postpone/core';

type Method = 'claim' | 'extend' | 'complete' | 'completeMany' | 'fail' | 'release' | 'reclaimExpired' | 'getTask';

/**
 * Wraps a real store; `before[method]` runs before each call of that method and may throw (a fault)
 * or wait (a slow database). Everything else goes straight to the store.
 */
export function faultyStore<Tx>(store: Store<Tx>, before: Partial<Record<Method, (call: number) => void | Promise<void>>>): Store<Tx> {
  const calls = new Map<string, number>();
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      const bound = value.bind(target) as (...args: unknown[]) => Promise<unknown>;
      const hook = before[prop as Method];
      if (hook === undefined) return bound;
      return async (...args: unknown[]) => {
        const n = (calls.get(prop as string) ?? 0) + 1;
        calls.set(prop as string, n);
        await hook(n);
        return bound(...args);
      };
    },
  });
}
