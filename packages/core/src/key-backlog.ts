/**
 * Per-key backlog (docs/contract.md#key-backlog): for one kind, per limit key (the `limitKey` a task
 * was scheduled with, docs/contract.md#per-key-concurrency), how many of its live tasks are due,
 * not yet due and CLAIMED, and how late its oldest due task is by the store's clock — the figures
 * that tell an operator which tenant a per-key limit is holding back.
 *
 * Types, the cursor and the input checks only (no I/O): `@postpone/memory` and `@postpone/postgres`
 * implement {@link KeyBacklogStore}, so every store refuses the same calls with the same
 * `ValidationError`.
 */
import { ValidationError } from './errors/errors.js';
import { rejectUnknownFields, validateKey, validateKind, validatePositiveInt } from './input/validate.js';

/** Keys per page when `limit` is not given. */
export const DEFAULT_KEY_BACKLOG_LIMIT = 100;
/** Largest `limit` of {@link KeyBacklogStore.keyBacklog}: the page bound. */
export const MAX_KEY_BACKLOG_LIMIT = 1_000;

/** What {@link KeyBacklogStore.keyBacklog} reads. */
export interface KeyBacklogParams {
  /** The kind whose keyed tasks are counted. */
  readonly kind: string;
  /** Keys per page, integer 1..{@link MAX_KEY_BACKLOG_LIMIT}; default {@link DEFAULT_KEY_BACKLOG_LIMIT}. */
  readonly limit?: number;
  /** The `nextCursor` of the previous page; null or absent for the first. */
  readonly cursor?: string | null;
}

/** One limit key's live tasks of the kind. */
export interface KeyBacklogEntry {
  readonly limitKey: string;
  /** SCHEDULED tasks whose due time has come (claimable but for limits). */
  readonly due: number;
  /** SCHEDULED tasks not yet due (a task held by a dependency counts here). */
  readonly notDue: number;
  /** CLAIMED tasks of the key (in every queue): what its per-key limit counts. */
  readonly claimed: number;
  /** Due time of the key's oldest due task, or null when none is due. */
  readonly oldestDueAt: Date | null;
  /** The store's clock minus {@link oldestDueAt} in ms (0 when none is due). */
  readonly latenessMs: number;
}

/** One page of {@link KeyBacklogStore.keyBacklog}. */
export interface KeyBacklogPage {
  readonly kind: string;
  /** Keys with at least one SCHEDULED or CLAIMED task, most `due` first, then by key (code-point order). */
  readonly entries: KeyBacklogEntry[];
  /** Opaque; pass it as `cursor` for the next page. Null when this page is the last. */
  readonly nextCursor: string | null;
}

/** {@link KeyBacklogParams} checked: the cursor decoded to the last entry of the previous page. */
export interface NormalizedKeyBacklogParams {
  readonly kind: string;
  readonly limit: number;
  /** Entries after (fewer `due`, or as many and a greater key) this one; null for the first page. */
  readonly after: { readonly due: number; readonly limitKey: string } | null;
}

const CURSOR_PREFIX = 'kb1:';
const FIELDS = ['kind', 'limit', 'cursor'] as const;

/** The cursor after `entry` (the last of a full page). */
export function encodeKeyBacklogCursor(entry: { readonly due: number; readonly limitKey: string }): string {
  return `${CURSOR_PREFIX}${entry.due}:${entry.limitKey}`;
}

/**
 * Checks the parameters of {@link KeyBacklogStore.keyBacklog}.
 * @throws ValidationError INVALID_OPTION (not an object, unknown field, `limit` not an integer 1..1 000, `cursor` not one this API made), INVALID_KIND
 */
export function validateKeyBacklogParams(params: unknown): NormalizedKeyBacklogParams {
  if (typeof params !== 'object' || params === null) throw new ValidationError('INVALID_OPTION', 'params', 'must be an object { kind, limit?, cursor? }');
  rejectUnknownFields(params as Record<string, unknown>, FIELDS);
  const p = params as { kind?: unknown; limit?: unknown; cursor?: unknown };
  const kind = validateKind(p.kind);
  const limit = p.limit === undefined ? DEFAULT_KEY_BACKLOG_LIMIT : validatePositiveInt(p.limit, 'limit', MAX_KEY_BACKLOG_LIMIT);
  return { kind, limit, after: p.cursor === undefined || p.cursor === null ? null : decodeCursor(p.cursor) };
}

function decodeCursor(cursor: unknown): { due: number; limitKey: string } {
  const bad = () => new ValidationError('INVALID_OPTION', 'cursor', 'is not a cursor of keyBacklog; pass the nextCursor of the previous page unchanged');
  if (typeof cursor !== 'string' || !cursor.startsWith(CURSOR_PREFIX)) throw bad();
  const rest = cursor.slice(CURSOR_PREFIX.length);
  const colon = rest.indexOf(':');
  const due = Number(rest.slice(0, colon));
  if (colon < 1 || !/^\d+$/.test(rest.slice(0, colon)) || !Number.isSafeInteger(due)) throw bad();
  try {
    return { due, limitKey: validateKey(rest.slice(colon + 1), 'cursor') };
  } catch {
    throw bad();
  }
}

/** Orders entries as a page does: most `due` first, then by key in code-point order (as SQL `collate "C"`). */
export function compareKeyBacklogEntries(a: { due: number; limitKey: string }, b: { due: number; limitKey: string }): number {
  return b.due - a.due || compareCodePoints(a.limitKey, b.limitKey);
}

/** Code-point order (UTF-8 byte order, as `collate "C"`); JavaScript's `<` compares UTF-16 code units, which differs above U+FFFF. */
function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const x = a[Symbol.iterator]();
  const y = b[Symbol.iterator]();
  for (;;) {
    const p = x.next();
    const q = y.next();
    if (p.done === true || q.done === true) return p.done === true ? (q.done === true ? 0 : -1) : 1;
    const d = (p.value.codePointAt(0) as number) - (q.value.codePointAt(0) as number);
    if (d !== 0) return d;
  }
}

/**
 * The store capability of the per-key backlog. Every store of this repository implements it (the
 * sharded front does not: see docs/contract.md#key-backlog).
 */
export interface KeyBacklogStore {
  /**
   * Per limit key of `kind`: due, not-yet-due and CLAIMED task counts and the oldest due task's
   * lateness (the store's clock: the database's on PostgreSQL). Keys with no SCHEDULED or CLAIMED task
   * are not listed; tasks without a limit key are not counted. Read-only, one statement; a page is a
   * snapshot of its own (counts move between pages; a key whose `due` count changed between two pages
   * may be listed twice or skipped). Cost on PostgreSQL: docs/contract.md#key-backlog.
   * @throws ValidationError (see {@link validateKeyBacklogParams}; nothing read), StoreClosedError, ConnectionLostError, StoreError
   */
  keyBacklog(params: KeyBacklogParams): Promise<KeyBacklogPage>;
}

/** True when `store` implements {@link KeyBacklogStore}. */
export function isKeyBacklogStore(store: unknown): store is KeyBacklogStore {
  return typeof (store as Partial<KeyBacklogStore> | null)?.keyBacklog === 'function';
}
