/**
 * A store that counts the claim statements it sends, empty ones included. It wraps a real store
 * (a Proxy that forwards every call); nothing is mocked.
 */
import { type ClaimedTask, type ClaimParams, overrideStore, type Store } from '@postpone/core';

export interface ClaimCounts {
  /** Claim statements sent. */
  claims: number;
  /** Of which returned no task. */
  empty: number;
}

/** Wraps `store`; `counts` grows with every `claim` call that answered. */
export function countClaims<Tx>(store: Store<Tx>): { store: Store<Tx>; counts: ClaimCounts } {
  const counts: ClaimCounts = { claims: 0, empty: 0 };
  const claim = async (params: ClaimParams): Promise<ClaimedTask[]> => {
    const tasks = await store.claim(params);
    counts.claims++;
    if (tasks.length === 0) counts.empty++;
    return tasks;
  };
  const wrapped = overrideStore(store, { claim });
  return { store: wrapped, counts };
}
