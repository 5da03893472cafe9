/**
 * Input of `Store.completeMany`: many fenced completes in one call (docs/contract.md#transitions, complete, per item).
 * Validated here once, so every store refuses the same batches the same way, before anything is written.
 */
import { ValidationError } from './errors/errors.js';
import type { Json } from './input/json.js';
import type { TaskId } from './input/validate.js';
import { validateKeep, validateOwner } from './params.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, parseTaskId, validateAttempt, validateJson } from './input/validate.js';

/** Largest `completeMany` batch. */
export const MAX_COMPLETE_MANY = 10_000;

/** One complete of a batch: the fields of `CompleteParams`. `Tx` is the store's transaction handle, as for `complete`. */
export interface CompleteManyItem<Tx = unknown> {
  readonly id: TaskId;
  /** The fencing token received at claim. */
  readonly attempt: number;
  /** Worker identity kept with the DONE in history (`Completion.worker`). */
  readonly owner: string;
  /** JSON result stored on the task (default null). */
  readonly result?: unknown;
  /**
   * Keep the task in history once DONE (default true). False: DONE is the fenced delete of the live
   * row alone, no history row (docs/contract.md#done-not-kept).
   */
  readonly keep?: boolean;
  /**
   * The handler's own writes, as `CompleteParams.work`: run in the batch's transaction after the
   * fenced moves, only when this item's move hit (not for a stale, cancelled or DONE-again item), and
   * committed with its DONE or not at all. A batch with any `work` is one transaction per store node
   * (one for a single PostgreSQL server): when a `work` throws, that transaction rolls back whole
   * (its items stay CLAIMED, no writes of any of their works) and `completeMany` rethrows the error.
   */
  readonly work?: (tx: Tx) => Promise<void>;
}

/** A validated item, ready for a store. */
export interface NormalizedCompleteItem<Tx = unknown> {
  readonly id: TaskId;
  readonly attempt: number;
  readonly owner: string;
  readonly result: Json;
  /** The result as JSON text (what the PostgreSQL store sends). */
  readonly resultText: string;
  /** False: DONE is not kept (no history row). */
  readonly keep: boolean;
  /** The item's same-transaction writes, if any. */
  readonly work: ((tx: Tx) => Promise<void>) | undefined;
}

const ITEM_FIELDS: ReadonlySet<string> = new Set(['id', 'attempt', 'owner', 'result', 'keep', 'work']);

/**
 * Validates a completeMany batch, every item before any is written (all or nothing): an array of
 * 0..{@link MAX_COMPLETE_MANY} objects with only `id`, `attempt`, `owner`, `result`, `keep`, `work` (a
 * function), no id twice.
 * @throws ValidationError naming the first bad field as `items[i].field` (INVALID_TASK_ID, INVALID_OPTION,
 *   INVALID_RESULT); `items` INVALID_OPTION for a non-array or more than 10 000 items
 */
export function validateCompleteMany<Tx = unknown>(items: unknown, maxResultBytes: number = DEFAULT_MAX_PAYLOAD_BYTES): NormalizedCompleteItem<Tx>[] {
  if (!Array.isArray(items)) throw new ValidationError('INVALID_OPTION', 'items', 'must be an array');
  if (items.length > MAX_COMPLETE_MANY) {
    throw new ValidationError('INVALID_OPTION', 'items', `has ${items.length} items, the limit is ${MAX_COMPLETE_MANY}`);
  }
  const seen = new Map<TaskId, number>();
  return items.map((item: unknown, idx): NormalizedCompleteItem<Tx> => {
    const f = (name: string): string => `items[${idx}].${name}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new ValidationError('INVALID_OPTION', `items[${idx}]`, 'must be an object');
    const i = item as Record<string, unknown>;
    for (const key of Object.keys(i)) {
      if (!ITEM_FIELDS.has(key)) {
        throw new ValidationError('INVALID_OPTION', f(key), `is not a completeMany field (expected one of ${[...ITEM_FIELDS].join(', ')})`);
      }
    }
    const id = parseTaskId(i.id, f('id'));
    const first = seen.get(id);
    if (first !== undefined) throw new ValidationError('INVALID_OPTION', f('id'), `repeats the task of items[${first}]`);
    seen.set(id, idx);
    const attempt = validateAttempt(i.attempt, f('attempt'));
    const owner = validateOwner(i.owner, f('owner'));
    const { value, text } = validateJson(i.result === undefined ? null : i.result, f('result'), maxResultBytes, 'INVALID_RESULT');
    const keep = validateKeep(i.keep, f('keep'));
    if (i.work !== undefined && typeof i.work !== 'function') throw new ValidationError('INVALID_OPTION', f('work'), 'must be a function (tx) => Promise');
    return { id, attempt, owner, result: value, resultText: text, keep, work: i.work as ((tx: Tx) => Promise<void>) | undefined };
  });
}
