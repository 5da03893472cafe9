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

/** One complete of a batch: the fields of `CompleteParams` without `work` (same-transaction writes need `complete`). */
export interface CompleteManyItem {
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
}

/** A validated item, ready for a store. */
export interface NormalizedCompleteItem {
  readonly id: TaskId;
  readonly attempt: number;
  readonly owner: string;
  readonly result: Json;
  /** The result as JSON text (what the PostgreSQL store sends). */
  readonly resultText: string;
  /** False: DONE is not kept (no history row). */
  readonly keep: boolean;
}

const ITEM_FIELDS: ReadonlySet<string> = new Set(['id', 'attempt', 'owner', 'result', 'keep']);

/**
 * Validates a completeMany batch, every item before any is written (all or nothing): an array of
 * 0..{@link MAX_COMPLETE_MANY} objects with only `id`, `attempt`, `owner`, `result`, `keep`, no id twice.
 * @throws ValidationError naming the first bad field as `items[i].field` (INVALID_TASK_ID, INVALID_OPTION,
 *   INVALID_RESULT); `items` INVALID_OPTION for a non-array or more than 10 000 items
 */
export function validateCompleteMany(items: unknown, maxResultBytes: number = DEFAULT_MAX_PAYLOAD_BYTES): NormalizedCompleteItem[] {
  if (!Array.isArray(items)) throw new ValidationError('INVALID_OPTION', 'items', 'must be an array');
  if (items.length > MAX_COMPLETE_MANY) {
    throw new ValidationError('INVALID_OPTION', 'items', `has ${items.length} items, the limit is ${MAX_COMPLETE_MANY}`);
  }
  const seen = new Map<TaskId, number>();
  return items.map((item: unknown, idx): NormalizedCompleteItem => {
    const f = (name: string): string => `items[${idx}].${name}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new ValidationError('INVALID_OPTION', `items[${idx}]`, 'must be an object');
    const i = item as Record<string, unknown>;
    for (const key of Object.keys(i)) {
      if (!ITEM_FIELDS.has(key)) {
        throw new ValidationError('INVALID_OPTION', f(key), `is not a completeMany field (expected one of ${[...ITEM_FIELDS].join(', ')}; use complete for work)`);
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
    return { id, attempt, owner, result: value, resultText: text, keep };
  });
}
