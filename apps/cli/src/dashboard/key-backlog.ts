/**
 * The dashboard's per-key backlog view (docs/contract.md#key-backlog): for each kind with a per-key
 * concurrency limit (`listKeyConcurrency`), its limit and its top keys by due tasks (`keyBacklog`),
 * bounded: at most {@link DASHBOARD_BACKLOG_KINDS} kinds × {@link DASHBOARD_BACKLOG_KEYS} keys, one
 * `keyBacklog` statement per kind. A store without these methods (the sharded front) shows none.
 * Keys are user data: the page writes them with `textContent` only.
 */
import { isKeyBacklogStore, isKeyLimitStore, type KeyBacklogEntry } from '@postpone/core';

/** Most key-limited kinds the view reads (by kind name). */
export const DASHBOARD_BACKLOG_KINDS = 20;
/** Keys per kind the view shows: the most due first. */
export const DASHBOARD_BACKLOG_KEYS = 10;

export interface KindKeyBacklog {
  readonly kind: string;
  /** CLAIMED tasks per limit key (the declaration). */
  readonly limit: number;
  /** The top keys, most due first. */
  readonly entries: readonly KeyBacklogEntry[];
  /** True when the kind has more keys than shown. */
  readonly more: boolean;
}

export interface KeyBacklogView {
  /** False when the store has no per-key backlog (nothing is read). */
  readonly supported: boolean;
  readonly kinds: readonly KindKeyBacklog[];
  /** True when more than {@link DASHBOARD_BACKLOG_KINDS} kinds have a per-key limit. */
  readonly moreKinds: boolean;
}

/** The view for `GET /api/key-backlog`. */
export async function keyBacklogView(store: unknown): Promise<KeyBacklogView> {
  if (!isKeyLimitStore(store) || !isKeyBacklogStore(store)) return { supported: false, kinds: [], moreKinds: false };
  const limits = await store.listKeyConcurrency();
  const shown = limits.slice(0, DASHBOARD_BACKLOG_KINDS);
  const kinds = await Promise.all(
    shown.map(async ({ kind, limit }) => {
      const page = await store.keyBacklog({ kind, limit: DASHBOARD_BACKLOG_KEYS });
      return { kind, limit, entries: page.entries, more: page.nextCursor !== null };
    }),
  );
  return { supported: true, kinds, moreKinds: limits.length > shown.length };
}
