/**
 * Input of `Store.extendMany`: one lease renewal for many attempts (docs/contract.md#transitions,
 * extend, per item). Validated here once, so every store refuses the same batches the same way.
 */
import { ValidationError } from './errors/errors.js';
import type { TaskId } from './input/validate.js';
import { parseTaskId, validateAttempt, validatePositiveMs } from './input/validate.js';

/** Largest `extendMany` batch. */
export const MAX_EXTEND_MANY = 10_000;

/** One attempt whose lease `extendMany` renews. */
export interface ExtendManyItem {
  readonly id: TaskId;
  /** The fencing token received at claim. */
  readonly attempt: number;
}

export interface ExtendManyParams {
  /** The attempts to renew, 0..{@link MAX_EXTEND_MANY}, no id twice. */
  readonly items: readonly ExtendManyItem[];
  /** New lease length from the store's now, in ms (positive). */
  readonly leaseMs: number;
}

const ITEM_FIELDS: ReadonlySet<string> = new Set(['id', 'attempt']);
const PARAM_FIELDS: ReadonlySet<string> = new Set(['items', 'leaseMs']);

/**
 * Validates an extendMany call, every item before anything is written.
 * @returns the items normalized and the lease in ms
 * @throws ValidationError naming the first bad field (`items[i].id` INVALID_TASK_ID, `items[i].attempt`,
 *   `items`, `leaseMs` INVALID_OPTION)
 */
export function validateExtendMany(params: unknown): { items: ExtendManyItem[]; leaseMs: number } {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) throw new ValidationError('INVALID_OPTION', 'params', 'extendMany: must be an object');
  const p = params as Record<string, unknown>;
  for (const key of Object.keys(p)) if (!PARAM_FIELDS.has(key)) throw new ValidationError('INVALID_OPTION', key, 'is not an extendMany field (expected items, leaseMs)');
  const leaseMs = validatePositiveMs(p.leaseMs, 'leaseMs');
  const items = p.items;
  if (!Array.isArray(items)) throw new ValidationError('INVALID_OPTION', 'items', 'must be an array');
  if (items.length > MAX_EXTEND_MANY) throw new ValidationError('INVALID_OPTION', 'items', `has ${items.length} items, the limit is ${MAX_EXTEND_MANY}`);
  const seen = new Map<TaskId, number>();
  const out = items.map((item: unknown, idx): ExtendManyItem => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new ValidationError('INVALID_OPTION', `items[${idx}]`, 'must be an object');
    const i = item as Record<string, unknown>;
    for (const key of Object.keys(i)) if (!ITEM_FIELDS.has(key)) throw new ValidationError('INVALID_OPTION', `items[${idx}].${key}`, 'is not an extendMany item field (expected id, attempt)');
    const id = parseTaskId(i.id, `items[${idx}].id`);
    const first = seen.get(id);
    if (first !== undefined) throw new ValidationError('INVALID_OPTION', `items[${idx}].id`, `repeats the task of items[${first}]`);
    seen.set(id, idx);
    return { id, attempt: validateAttempt(i.attempt, `items[${idx}].attempt`) };
  });
  return { items: out, leaseMs };
}
