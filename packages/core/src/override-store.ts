/**
 * A store with some methods replaced, for instrumentation and fault injection (counting claims,
 * reporting queries, slowing or failing a call, swapping in a broken variant as a negative control).
 * Every method not overridden is the store's own, bound to it; nothing is mocked. Pure: no I/O.
 */
import type { Store } from './store.js';

/** Replacements by method name; a replacement may call the original through the store itself. */
export type StoreOverrides<Tx> = Partial<Store<Tx>> & { readonly [method: string]: unknown };

/**
 * @param store the real store
 * @param overrides methods to use instead of the store's own (also optional ones such as `listen`)
 * @returns a Proxy that answers with `overrides[name]` where given, else the store's member
 */
export function overrideStore<S extends Store<Tx>, Tx = unknown>(store: S, overrides: StoreOverrides<Tx>): S {
  return new Proxy(store, {
    get(target, property) {
      if (Object.hasOwn(overrides, property)) return (overrides as Record<PropertyKey, unknown>)[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
