/**
 * @postpone/memory — the in-memory Store, driven by core's pure `transition()`.
 *
 * ```ts
 * import { createMemoryStore } from '@postpone/memory';
 * const store = createMemoryStore({ clock: new TestClock() });
 * ```
 */
export { createMemoryStore, MemoryStore, type MemoryStoreOptions, type RawTaskPatch } from './memory-store.js';
export { MemoryTx } from './memory-tx.js';
export { leaseCheckHolds, LEASE_CHECK, SqlState } from './constraints.js';
export { MAX_CLAIM_LIMIT, MAX_ERROR_LENGTH, MAX_OWNER_LENGTH } from '@postpone/core';
