/**
 * Progress, awaiting a result and reschedule by id (issue #29; docs/contract.md#progress,
 * #awaiting-a-result, #reschedule): the parameters, their validation (shared by every store, so a
 * bad input is refused the same way everywhere, before anything is written) and the in-process
 * registry of `waitFor` callers that both the memory and the PostgreSQL stores use. No I/O.
 */
import { StoreClosedError, TaskNotFoundError, ValidationError, WaitTimeoutError } from './errors/errors.js';
import type { Json } from './input/json.js';
import { parseTaskId, rejectUnknownFields, type TaskId, validateAttempt, validateDelayMs, validateDueAt, validateJson } from './input/validate.js';
import { isTerminal, type TaskState } from './states.js';
import type { Task } from './task.js';

/** Largest progress value: 64 KiB of UTF-8 JSON. Progress is a status line, not a result: it is rewritten while the task runs. */
export const MAX_PROGRESS_BYTES = 65_536;

/** What `reportProgress` takes: the current attempt's progress (docs/contract.md#progress). */
export interface ProgressParams {
  readonly id: TaskId;
  /** The fencing token received at claim: only the current holder writes. */
  readonly attempt: number;
  /** Any JSON value up to {@link MAX_PROGRESS_BYTES}; it replaces the previous one. */
  readonly progress: unknown;
}

/**
 * A progress value: JSON `jsonb` accepts (as a payload), at most {@link MAX_PROGRESS_BYTES}.
 * @returns the value and its JSON text
 * @throws ValidationError INVALID_PROGRESS (not JSON, `field` names the offending path), PROGRESS_TOO_LARGE
 */
export function validateProgress(value: unknown, field = 'progress'): { value: Json; text: string } {
  return validateJson(value, field, MAX_PROGRESS_BYTES, 'INVALID_PROGRESS');
}

/** @throws ValidationError INVALID_OPTION (not an object, unknown field), INVALID_TASK_ID, INVALID_PROGRESS, PROGRESS_TOO_LARGE */
export function validateProgressParams(params: unknown): { id: TaskId; attempt: number; value: Json; text: string } {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) throw new ValidationError('INVALID_OPTION', 'params', 'reportProgress: must be an object');
  rejectUnknownFields(params, ['id', 'attempt', 'progress']);
  const p = params as Record<string, unknown>;
  const id = parseTaskId(p.id);
  const attempt = validateAttempt(p.attempt);
  return { id, attempt, ...validateProgress(p.progress) };
}

/** What `reschedule` takes: give `dueAt` or `delayMs`, exactly one; `payload` replaces the payload when given (null included). */
export interface RescheduleParams {
  /** The new due time (a valid Date, years 1..9999, at most 100 years after the store's now; a past one means due now). */
  readonly dueAt?: Date;
  /** The new due time as a delay from the store's now, whole ms 0..MAX_DELAY_MS (100 years). */
  readonly delayMs?: number;
  /** A new payload (any JSON up to the store's `maxPayloadBytes`); absent: the payload stays. */
  readonly payload?: unknown;
}

/**
 * What `reschedule` returns (docs/contract.md#reschedule): `RESCHEDULED` with the new due time;
 * `NOT_SCHEDULED` with the state the task is in (claimed, or finished — nothing changed);
 * `NOT_FOUND` when no task has the id.
 */
export type RescheduleResult =
  | { readonly outcome: 'RESCHEDULED'; readonly dueAt: Date }
  | { readonly outcome: 'NOT_SCHEDULED'; readonly state: TaskState }
  | { readonly outcome: 'NOT_FOUND' };

/**
 * Checks `reschedule`'s arguments, as schedule checks its own: a task id, exactly one of `dueAt`
 * (as `runAt`, against `nowMs`) and `delayMs`, and a payload when given.
 * @returns `dueAt` (null when `delayMs` counts from the store's now) and the payload's JSON text (null: unchanged)
 * @throws ValidationError INVALID_TASK_ID, INVALID_OPTION (not an object, unknown field), INVALID_DELAY (both or neither, a bad delay), INVALID_RUN_AT, INVALID_PAYLOAD, PAYLOAD_TOO_LARGE, UNSAFE_INTEGER
 */
export function validateReschedule(
  id: unknown,
  params: unknown,
  limits: { readonly maxPayloadBytes: number; readonly nowMs: number },
): { id: TaskId; dueAt: Date | null; delayMs: number; payload: { value: Json; text: string } | null } {
  const taskId = parseTaskId(id);
  if (typeof params !== 'object' || params === null || Array.isArray(params)) throw new ValidationError('INVALID_OPTION', 'params', 'reschedule: must be an object');
  rejectUnknownFields(params, ['dueAt', 'delayMs', 'payload']);
  const p = params as Record<string, unknown>;
  if ((p.dueAt === undefined) === (p.delayMs === undefined)) throw new ValidationError('INVALID_DELAY', 'delayMs', 'give dueAt or delayMs, exactly one');
  const dueAt = p.dueAt === undefined ? null : validateDueAt(p.dueAt, 'dueAt', limits.nowMs);
  const delayMs = p.delayMs === undefined ? 0 : validateDelayMs(p.delayMs);
  const payload = 'payload' in p && p.payload !== undefined ? validateJson(p.payload, 'payload', limits.maxPayloadBytes) : null;
  return { id: taskId, dueAt, delayMs, payload };
}

/** Options of `waitFor`. */
export interface WaitForOptions {
  /** Give up after this many ms with `WaitTimeoutError` (whole ms 1..2³¹−1; default: wait until the signal aborts or the task finishes). */
  readonly timeoutMs?: number;
  /** Stop waiting when it aborts: `waitFor` rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
}

/** Largest `timeoutMs`: what `setTimeout` can hold (2³¹−1 ms, about 24.8 days). */
export const MAX_WAIT_TIMEOUT_MS = 2_147_483_647;

/** @throws ValidationError INVALID_TASK_ID, INVALID_OPTION naming `timeoutMs`, `signal` or an unknown field */
export function validateWaitFor(id: unknown, options: unknown): { id: TaskId; timeoutMs: number | null; signal: AbortSignal | null } {
  const taskId = parseTaskId(id);
  if (options === undefined) return { id: taskId, timeoutMs: null, signal: null };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new ValidationError('INVALID_OPTION', 'options', 'waitFor: must be an object');
  rejectUnknownFields(options, ['timeoutMs', 'signal']);
  const o = options as Record<string, unknown>;
  const t = o.timeoutMs;
  if (t !== undefined && (typeof t !== 'number' || !Number.isInteger(t) || t < 1 || t > MAX_WAIT_TIMEOUT_MS)) {
    throw new ValidationError('INVALID_OPTION', 'timeoutMs', `must be an integer 1..${MAX_WAIT_TIMEOUT_MS} (ms)`);
  }
  const signal = o.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new ValidationError('INVALID_OPTION', 'signal', 'must be an AbortSignal');
  return { id: taskId, timeoutMs: (t as number | undefined) ?? null, signal: (signal as AbortSignal | undefined) ?? null };
}

interface Waiter {
  readonly resolve: (task: Task) => void;
  readonly reject: (error: unknown) => void;
  /** The task was seen live (SCHEDULED or CLAIMED) by a read after this waiter registered. */
  seen: boolean;
  /** The task's first read since registration is still to come. */
  fresh: boolean;
  cleanup: () => void;
}

/**
 * The `waitFor` callers of one store, by task id (in-process). A store registers a caller with
 * {@link add}, then tells the registry what it read or heard with {@link settle}; timeouts and
 * abort signals are handled here. Never throws into a store's code; every caller's promise settles
 * exactly once.
 */
export class TaskWaiters {
  readonly #byId = new Map<TaskId, Set<Waiter>>();
  /** Called when the registry goes from empty to non-empty, and back. */
  readonly #onChange: (pending: number) => void;

  constructor(onChange: (pending: number) => void = () => {}) {
    this.#onChange = onChange;
  }

  /** Task ids with at least one caller waiting. */
  ids(): TaskId[] {
    return [...this.#byId.keys()];
  }

  /** Ids whose callers have not had a read since they registered. */
  freshIds(): TaskId[] {
    return [...this.#byId].filter(([, set]) => [...set].some((w) => w.fresh)).map(([id]) => id);
  }

  get size(): number {
    return this.#byId.size;
  }

  has(id: TaskId): boolean {
    return this.#byId.has(id);
  }

  /**
   * Registers a caller of `waitFor(id)`; the promise settles through {@link settle}, the timeout,
   * the signal or {@link closeAll}. A signal already aborted rejects at once with its reason.
   */
  add(id: TaskId, timeoutMs: number | null, signal: AbortSignal | null): Promise<Task> {
    return new Promise<Task>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => finish(() => reject(signal?.reason));
      const waiter: Waiter = {
        resolve: (task) => finish(() => resolve(task)),
        reject: (error) => finish(() => reject(error)),
        seen: false,
        fresh: true,
        cleanup: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        },
      };
      let done = false;
      const finish = (settleIt: () => void) => {
        if (done) return;
        done = true;
        waiter.cleanup();
        this.#remove(id, waiter);
        settleIt();
      };
      let set = this.#byId.get(id);
      if (set === undefined) {
        set = new Set();
        this.#byId.set(id, set);
      }
      set.add(waiter);
      if (timeoutMs !== null) timer = setTimeout(() => finish(() => reject(new WaitTimeoutError(id, timeoutMs))), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.#byId.size === 1 && set.size === 1) this.#onChange(1);
    });
  }

  /**
   * What a read found for `id`: a terminal task resolves every caller; a live one marks them as
   * having seen it; none (`null`) rejects with `TaskNotFoundError` — `vanished` for a caller that
   * had seen it live (DONE not kept, or pruned).
   */
  settle(id: TaskId, task: Task | null): void {
    const set = this.#byId.get(id);
    if (set === undefined) return;
    for (const waiter of [...set]) {
      waiter.fresh = false;
      if (task === null) waiter.reject(new TaskNotFoundError(id, waiter.seen));
      else if (isTerminal(task.state)) waiter.resolve(structuredClone(task));
      else waiter.seen = true;
    }
  }

  /** Rejects every caller with `StoreClosedError` (the store closed). */
  closeAll(): void {
    for (const set of [...this.#byId.values()]) for (const waiter of [...set]) waiter.reject(new StoreClosedError('store closed while waiting for a task'));
  }

  #remove(id: TaskId, waiter: Waiter): void {
    const set = this.#byId.get(id);
    if (!set?.delete(waiter) || set.size > 0) return;
    this.#byId.delete(id);
    if (this.#byId.size === 0) this.#onChange(0);
  }
}
