/**
 * Pause and resume a queue or a kind across the fleet (issue #28, docs/contract.md#pause-and-resume):
 * the shapes of `Store.pause`, `Store.resume` and `Store.listPaused`, and the input checks every store
 * runs first, so a bad call is refused the same way everywhere before anything is written.
 *
 * A pause is a durable row — scope `queue` or `kind`, and a name — that the claim itself reads: a
 * task of a paused queue, or of a paused kind (in every queue), is not claimed. It stays SCHEDULED,
 * its due time and attempts unchanged; a task already CLAIMED runs to its end (complete, fail, renew
 * and reclaim ignore pauses). `peekDue` does not list paused tasks, so a timing wheel holds no timer
 * for them. Resuming deletes the row; the next claim takes the tasks that fell due meanwhile.
 */
import { ValidationError } from './errors/errors.js';
import { rejectUnknownFields, validateKind, validateQueue } from './input/validate.js';

/** What a pause row holds back: every task of one queue, or every task of one kind (in every queue). */
export type PauseScope = 'queue' | 'kind';

/** `{ queue }` or `{ kind }`: exactly one. */
export type PauseTarget = { readonly queue: string; readonly kind?: undefined } | { readonly kind: string; readonly queue?: undefined };

export interface PauseOptions {
  /** Why, for operators (`postpone paused`, the dashboard): 1..{@link MAX_PAUSE_TEXT} characters. */
  readonly reason?: string;
  /** Who paused (a user, a deploy), 1..{@link MAX_PAUSE_TEXT} characters. */
  readonly by?: string;
}

/** One pause row. */
export interface PausedEntry {
  readonly scope: PauseScope;
  /** The queue's or the kind's name. */
  readonly name: string;
  /** The store's clock when the pause was written. */
  readonly pausedAt: Date;
  readonly pausedBy: string | null;
  readonly reason: string | null;
}

/** Longest `reason` and `by`. */
export const MAX_PAUSE_TEXT = 500;

/** Validated target of pause / resume. */
export interface NormalizedPauseTarget {
  readonly scope: PauseScope;
  readonly name: string;
}

/** C0 and C1 control characters and DEL, except tab and newline (a reason may have lines). */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/**
 * Checks the target of `pause` / `resume`: an object with exactly one of `queue` (as `schedule`'s,
 * core `validateQueue`) and `kind` (core `validateKind`).
 * @throws ValidationError INVALID_OPTION (not an object, neither or both, unknown field), INVALID_QUEUE, INVALID_KIND
 */
export function validatePauseTarget(target: unknown): NormalizedPauseTarget {
  if (typeof target !== 'object' || target === null || Array.isArray(target)) {
    throw new ValidationError('INVALID_OPTION', 'target', 'must be an object { queue } or { kind }');
  }
  rejectUnknownFields(target, ['queue', 'kind']);
  const { queue, kind } = target as { queue?: unknown; kind?: unknown };
  if ((queue === undefined) === (kind === undefined)) throw new ValidationError('INVALID_OPTION', 'target', 'give exactly one of queue and kind');
  return queue !== undefined ? { scope: 'queue', name: validateQueue(queue) } : { scope: 'kind', name: validateKind(kind) };
}

/**
 * Checks the options of `pause`: `undefined`, or `{ reason?, by? }`, each a string of
 * 1..{@link MAX_PAUSE_TEXT} characters without control characters (tab and newline allowed).
 * @throws ValidationError INVALID_OPTION naming `options`, `options.reason` or `options.by`
 */
export function validatePauseOptions(options: unknown): { readonly reason: string | null; readonly by: string | null } {
  if (options === undefined) return { reason: null, by: null };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new ValidationError('INVALID_OPTION', 'options', 'must be an object { reason?, by? }');
  rejectUnknownFields(options, ['reason', 'by'], 'options.');
  const text = (value: unknown, field: string): string | null => {
    if (value === undefined) return null;
    if (typeof value !== 'string' || value.trim().length === 0 || value.length > MAX_PAUSE_TEXT || CONTROL.test(value) || /[\ud800-\udfff]/.test(value.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) {
      throw new ValidationError('INVALID_OPTION', field, `must be a string of 1..${MAX_PAUSE_TEXT} characters, not only white space, without control characters or lone surrogates`);
    }
    return value;
  };
  const { reason, by } = options as { reason?: unknown; by?: unknown };
  return { reason: text(reason, 'options.reason'), by: text(by, 'options.by') };
}

/** Orders pause rows as every store lists them: queues first, then kinds, each by name (code unit order, as PostgreSQL's `collate "C"`). */
export function comparePaused(a: { readonly scope: PauseScope; readonly name: string }, b: { readonly scope: PauseScope; readonly name: string }): number {
  if (a.scope !== b.scope) return a.scope === 'queue' ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
