/**
 * A store with some methods replaced: the harness's way to instrument a real store or swap in a
 * broken variant, without touching the product's code. Methods not overridden are the store's own
 * (bound to it).
 */
import type { Store } from '@postpone/core';

export function overrideStore<Tx>(store: Store<Tx>, overrides: Partial<Pick<Store<Tx>, keyof Store<Tx>>>): Store<Tx> {
  return new Proxy(store, {
    get(target, property) {
      if (Object.hasOwn(overrides, property)) return (overrides as Record<PropertyKey, unknown>)[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
