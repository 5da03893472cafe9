/**
 * Batches with a callback (issue #29, docs/contract.md#batches): a group of tasks that, once sealed
 * and every member terminal, schedules ONE callback task with the counts of its DONE, DEAD and
 * CANCELLED members. Types, validation and the typed error shared by the stores.
 */
import { PostponeError } from './errors/index.js';
import { type NormalizedSchedule, type RetryPolicy, type ScheduleInput, type TaskId, validateSchedule, type ValidationLimits } from './input/index.js';
import { ValidationError } from './errors/index.js';
import type { ScheduledTask } from './store.js';

/** A batch id: the decimal text of a positive bigint, as a task id. */
export type BatchId = string;

/**
 * The callback task a batch schedules when it is sealed and every member is terminal: a schedule
 * input without `key`, `runAt` or `traceContext`. `payload` must be a JSON object (or absent): the
 * callback's payload is it with `batch: { id, total, done, dead, cancelled }` set (a `batch` field of
 * its own is replaced). `delayMs` counts from the moment the batch completes (database clock).
 */
export interface BatchCallback {
  readonly kind: string;
  readonly payload?: Readonly<Record<string, unknown>>;
  readonly queue?: string;
  readonly priority?: number;
  readonly maxAttempts?: number;
  readonly delayMs?: number;
}

/** The validated callback as the stores keep it (the batch row's `callback` JSON). */
export interface NormalizedBatchCallback {
  readonly kind: string;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly queue: string;
  readonly priority: number;
  readonly maxAttempts: number;
  readonly delayMs: number;
  /**
   * The callback task's own retry policy, as `schedule` gives a task: `{ maxAttempts }` when the
   * callback named `maxAttempts`, else null (the worker's policy for the kind applies). Absent in a
   * batch created before this field: null.
   */
  readonly retry?: RetryPolicy | null;
}

/** `OPEN`: members may be added; `SEALED`: no more members, callback not yet scheduled; `CALLED_BACK`: the callback task exists. */
export type BatchState = 'OPEN' | 'SEALED' | 'CALLED_BACK';

/** What `getBatch` and `sealBatch` return. Counts are of members; `remaining` = `total` − `done` − `dead` − `cancelled`. */
export interface BatchInfo {
  readonly id: BatchId;
  readonly state: BatchState;
  readonly total: number;
  readonly remaining: number;
  readonly done: number;
  readonly dead: number;
  readonly cancelled: number;
  readonly callback: NormalizedBatchCallback;
  readonly createdAt: Date;
  readonly sealedAt: Date | null;
  /** The callback task, once scheduled (then `state` is `CALLED_BACK`). */
  readonly callbackTaskId: TaskId | null;
  readonly calledBackAt: Date | null;
}

/** The batch fields merged into the callback's payload under `batch`. */
export interface BatchCounts {
  readonly id: BatchId;
  readonly total: number;
  readonly done: number;
  readonly dead: number;
  readonly cancelled: number;
}

/**
 * The store side of batches (memory, PostgreSQL). Separate from `Store` so a store without batches
 * (a custom one) still implements `Store`.
 */
export interface BatchStore {
  /** Creates an OPEN batch. @throws ValidationError for a bad callback (nothing written) */
  createBatch(params: { readonly callback: BatchCallback }): Promise<BatchId>;
  /**
   * Schedules `inputs` (as `scheduleMany` with `onConflict: 'keep'`) and makes every task this call
   * CREATED a member, in one transaction that holds the batch row's lock. An input whose dedup key a
   * live task holds (`created: false`) does not join.
   * @throws BatchError BATCH_NOT_FOUND, BATCH_SEALED (nothing written)
   */
  scheduleInBatch(batchId: BatchId, inputs: readonly ScheduleInput[]): Promise<ScheduledTask[]>;
  /** Seals the batch (idempotent); schedules the callback at once when every member is already terminal. @throws BatchError BATCH_NOT_FOUND */
  sealBatch(batchId: BatchId): Promise<BatchInfo>;
  /** The batch, or null. */
  getBatch(batchId: BatchId): Promise<BatchInfo | null>;
}

/** A batch that does not exist, is sealed (no member may join), or a store that has no batches. Nothing was written. */
export class BatchError extends PostponeError {
  readonly batchId: BatchId | null;
  constructor(code: 'BATCH_NOT_FOUND' | 'BATCH_SEALED' | 'BATCHES_UNSUPPORTED', batchId: BatchId | null, message: string) {
    super(code, message);
    this.name = 'BatchError';
    this.batchId = batchId;
  }
}

const CALLBACK_FIELDS = new Set(['kind', 'payload', 'queue', 'priority', 'maxAttempts', 'delayMs']);

/**
 * Validates `createBatch` params with the schedule rules (`validateSchedule`: kind, queue,
 * priority, maxAttempts, delayMs, payload size).
 * @throws ValidationError INVALID_OPTION (`callback` missing, an unknown field), INVALID_PAYLOAD (a payload that is no object), the schedule codes
 */
export function validateBatchParams(params: unknown, limits: ValidationLimits = {}): { readonly callback: NormalizedBatchCallback; readonly schedule: NormalizedSchedule } {
  if (typeof params !== 'object' || params === null) throw new ValidationError('INVALID_OPTION', 'params', 'must be an object { callback }');
  for (const key of Object.keys(params)) if (key !== 'callback') throw new ValidationError('INVALID_OPTION', key, 'is not a createBatch field (expected callback)');
  const cb = (params as { callback?: unknown }).callback;
  if (typeof cb !== 'object' || cb === null || Array.isArray(cb)) throw new ValidationError('INVALID_OPTION', 'callback', 'must be an object { kind, payload?, queue?, priority?, maxAttempts?, delayMs? }');
  for (const key of Object.keys(cb)) {
    if (!CALLBACK_FIELDS.has(key)) throw new ValidationError('INVALID_OPTION', `callback.${key}`, `is not a callback field (expected one of ${[...CALLBACK_FIELDS].join(', ')})`);
  }
  const payload = (cb as { payload?: unknown }).payload;
  if (payload !== undefined && (typeof payload !== 'object' || payload === null || Array.isArray(payload))) {
    throw new ValidationError('INVALID_PAYLOAD', 'callback.payload', 'must be a JSON object (the callback payload gets a batch field)');
  }
  const schedule = validateSchedule({ ...cb, payload: payload ?? {} }, limits, 'callback');
  const callback: NormalizedBatchCallback = {
    kind: schedule.kind,
    payload: schedule.payload as Record<string, unknown>,
    queue: schedule.queue,
    priority: schedule.priority,
    maxAttempts: schedule.maxAttempts,
    delayMs: schedule.delayMs,
    retry: schedule.retry,
  };
  return { callback, schedule };
}

/** The callback task's payload: the callback's payload with `batch` set to the counts. */
export function batchCallbackPayload(callback: NormalizedBatchCallback, counts: BatchCounts): Record<string, unknown> {
  return { ...callback.payload, batch: { id: counts.id, total: counts.total, done: counts.done, dead: counts.dead, cancelled: counts.cancelled } };
}

/** The state of a batch from its row. */
export function batchStateOf(sealed: boolean, callbackTaskId: TaskId | null): BatchState {
  return callbackTaskId !== null ? 'CALLED_BACK' : sealed ? 'SEALED' : 'OPEN';
}
