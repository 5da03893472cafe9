/**
 * Bulk operations (docs/contract.md#bulk-operations): `cancelMany`, `retryMany`, `rescheduleMany` and
 * `deleteMany` act on every task a {@link BulkFilter} selects, in batches, each batch its own short
 * transaction, and return counts per outcome. Their parameter and result shapes, and the checks every
 * store runs first, so a bad call is refused the same way everywhere (a {@link ValidationError})
 * before anything is read or written.
 *
 * Two ways to select:
 * - by `ids` (alone): each id gets exactly one outcome, the one the single-task operation gives
 *   (`cancel`, `retry`, a reschedule fenced on SCHEDULED, a delete of history); the counts add up
 *   to the number of distinct ids.
 * - by filter (kinds, queue, states, key prefix, due range, finish range): the tasks that match
 *   when their batch runs, in the states the operation acts on ({@link BULK_STATES}); tasks scheduled
 *   after the call began are left alone. A filter that names nothing is refused unless `all: true`.
 */
import { ValidationError } from './errors/errors.js';
import { compareTaskIds, MAX_KEY_LENGTH, parseTaskId, rejectUnknownFields, type TaskId, validateDelayMs, validateDueAt, validateKind, validateQueue, validateRunAt } from './input/validate.js';
import { CancelOutcome, TaskState } from './states.js';

/** The four bulk operations. */
export type BulkOperation = 'cancel' | 'retry' | 'reschedule' | 'delete';

/**
 * The states each operation acts on, and the default of {@link BulkFilter.states}:
 * cancel SCHEDULED (→ CANCELLED) and CLAIMED (→ cancel requested); retry DEAD (and CANCELLED when
 * `states` names it); reschedule SCHEDULED; delete the history (DONE, CANCELLED, DEAD).
 */
export const BULK_STATES: Readonly<Record<BulkOperation, readonly TaskState[]>> = Object.freeze({
  cancel: Object.freeze([TaskState.SCHEDULED, TaskState.CLAIMED]),
  retry: Object.freeze([TaskState.DEAD, TaskState.CANCELLED]),
  reschedule: Object.freeze([TaskState.SCHEDULED]),
  delete: Object.freeze([TaskState.DONE, TaskState.CANCELLED, TaskState.DEAD]),
});
/** `retryMany` without `states` retries DEAD tasks only. */
const DEFAULT_STATES: Readonly<Record<BulkOperation, readonly TaskState[]>> = { ...BULK_STATES, retry: [TaskState.DEAD] };

/** Default and largest batch of a bulk operation (rows locked per transaction). */
export const DEFAULT_BULK_BATCH = 1_000;
export const MAX_BULK_BATCH = 10_000;
/** Most ids one bulk call may name. */
export const MAX_BULK_IDS = 10_000;
/** Most kinds one bulk filter may name. */
export const MAX_BULK_KINDS = 100;

/**
 * Which tasks a bulk operation acts on. Every field narrows (they are ANDed); `ids` stands alone.
 * Times are compared as `from <= t < before`.
 */
export interface BulkFilter {
  /** Exactly these tasks (1..{@link MAX_BULK_IDS}); not with any other field. */
  readonly ids?: readonly TaskId[];
  /** Tasks of one of these kinds (1..{@link MAX_BULK_KINDS}). */
  readonly kinds?: readonly string[];
  /** Tasks of this queue. */
  readonly queue?: string;
  /** A subset of the operation's {@link BULK_STATES} (default: all of them; retry: DEAD). Does not count as a narrowing field. */
  readonly states?: readonly TaskState[];
  /** Tasks whose dedup key starts with this text (1..256 characters; tasks without a key never match). */
  readonly keyPrefix?: string;
  /** Tasks due at or after this time. */
  readonly dueFrom?: Date;
  /** Tasks due strictly before this time. */
  readonly dueBefore?: Date;
  /** Finished at or after this time (history only: retry, delete). */
  readonly finishedFrom?: Date;
  /** Finished strictly before this time (history only: retry, delete). */
  readonly finishedBefore?: Date;
  /** `true`: the filter may name nothing (every task in the operation's states). */
  readonly all?: true;
}

/** Options of every bulk operation. */
export interface BulkOptions {
  /** Rows per batch, 1..{@link MAX_BULK_BATCH} (default {@link DEFAULT_BULK_BATCH}); each batch is its own short transaction. */
  readonly batchSize?: number;
  /** `true`: count what the call would do (the same counts), change nothing. */
  readonly dryRun?: boolean;
}

/** `rescheduleMany`: the new due time, `dueAt` or `delayMs` (from the store's now), exactly one. */
export interface RescheduleManyOptions extends BulkOptions {
  /** Absolute due time, at most 100 years after now; a past one means due now. */
  readonly dueAt?: Date;
  /** Due this many ms after the store's now (whole ms 0..100 years). */
  readonly delayMs?: number;
}

/** `retryMany`: when the new tasks are due (as `retry`): `delayMs` from now (default 0) or `runAt`. */
export interface RetryManyOptions extends BulkOptions {
  readonly delayMs?: number;
  readonly runAt?: Date;
}

/** Counts per outcome of a bulk call; `batches` transactions (or reads, with `dryRun`) were run. */
export interface BulkResult<O extends string> {
  readonly counts: Readonly<Record<O, number>>;
  readonly batches: number;
  readonly dryRun: boolean;
}

/** The five outcomes of `cancel`, each counted: CANCELLED (was SCHEDULED; moved to history), REQUESTED (was CLAIMED), ALREADY_CANCELLED, TOO_LATE (DONE or DEAD), NOT_FOUND. */
export type CancelManyResult = BulkResult<CancelOutcome>;
/**
 * RETRIED: a new SCHEDULED task was made (as `retry`); ALREADY_RETRIED: it had been retried before
 * (no third task); NOT_RETRYABLE: SCHEDULED, CLAIMED or DONE (ids only); NOT_FOUND (ids only).
 */
export type RetryManyOutcome = 'RETRIED' | 'ALREADY_RETRIED' | 'NOT_RETRYABLE' | 'NOT_FOUND';
export type RetryManyResult = BulkResult<RetryManyOutcome>;
/** RESCHEDULED: its due time changed; NOT_SCHEDULED: CLAIMED or finished, unchanged (ids only); NOT_FOUND (ids only). */
export type RescheduleManyOutcome = 'RESCHEDULED' | 'NOT_SCHEDULED' | 'NOT_FOUND';
export type RescheduleManyResult = BulkResult<RescheduleManyOutcome>;
/** DELETED: a history row (and any legacy effect row) is gone; NOT_FINISHED: SCHEDULED or CLAIMED, kept (ids only); NOT_FOUND (ids only). */
export type DeleteManyOutcome = 'DELETED' | 'NOT_FINISHED' | 'NOT_FOUND';
export interface DeleteManyResult extends BulkResult<DeleteManyOutcome> {
  /** Rows of the legacy `effect` table deleted with the tasks (written only by PostgreSQL code before its migration 13; 0 on the memory store). */
  readonly effectsDeleted: number;
}

/** The outcomes of each operation, in the order results list them. */
export const BULK_OUTCOMES = Object.freeze({
  cancel: Object.freeze(Object.values(CancelOutcome)),
  retry: Object.freeze(['RETRIED', 'ALREADY_RETRIED', 'NOT_RETRYABLE', 'NOT_FOUND'] as const),
  reschedule: Object.freeze(['RESCHEDULED', 'NOT_SCHEDULED', 'NOT_FOUND'] as const),
  delete: Object.freeze(['DELETED', 'NOT_FINISHED', 'NOT_FOUND'] as const),
});

/** Counts of every outcome of `op`, all zero. */
export function emptyBulkCounts<O extends string>(outcomes: readonly O[]): Record<O, number> {
  return Object.fromEntries(outcomes.map((o) => [o, 0])) as Record<O, number>;
}

/** A validated {@link BulkFilter}: `ids` (sorted, distinct) or the filter fields (null when absent). */
export interface NormalizedBulkFilter {
  readonly ids: readonly TaskId[] | null;
  readonly kinds: readonly string[] | null;
  readonly queue: string | null;
  /** The states acted on: never empty, a subset of {@link BULK_STATES}`[op]` (all of them with `ids`). */
  readonly states: readonly TaskState[];
  readonly keyPrefix: string | null;
  readonly dueFrom: Date | null;
  readonly dueBefore: Date | null;
  readonly finishedFrom: Date | null;
  readonly finishedBefore: Date | null;
}

const FILTER_FIELDS = ['ids', 'kinds', 'queue', 'states', 'keyPrefix', 'dueFrom', 'dueBefore', 'finishedFrom', 'finishedBefore', 'all'] as const;
const NARROWING = ['ids', 'kinds', 'queue', 'keyPrefix', 'dueFrom', 'dueBefore', 'finishedFrom', 'finishedBefore'] as const;
const HISTORY_OPS: readonly BulkOperation[] = ['retry', 'delete'];

function plainObject(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ValidationError('INVALID_OPTION', field, 'must be an object');
  return value as Record<string, unknown>;
}

function array(value: unknown, field: string, max: number): readonly unknown[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > max) throw new ValidationError('INVALID_OPTION', field, `must be an array of 1..${max} items`);
  return value;
}

/**
 * Checks the filter of bulk operation `op` (unknown fields refused).
 * @throws ValidationError INVALID_OPTION (`filter` when it names nothing without `all: true`; `ids`
 *   with another field; `states` outside the operation's; `finishedFrom`/`finishedBefore` for cancel
 *   or reschedule; `all` not `true`; malformed arrays), INVALID_TASK_ID (`ids[i]`), INVALID_KIND
 *   (`kinds[i]`), INVALID_QUEUE, INVALID_KEY (`keyPrefix`), INVALID_RUN_AT (the times)
 */
export function validateBulkFilter(op: BulkOperation, filter: unknown): NormalizedBulkFilter {
  const f = plainObject(filter, 'filter');
  rejectUnknownFields(f, FILTER_FIELDS);
  if (f.all !== undefined && f.all !== true) throw new ValidationError('INVALID_OPTION', 'all', `must be true when given, got ${JSON.stringify(f.all)}`);
  const named = NARROWING.filter((k) => f[k] !== undefined);
  if (named.length === 0 && f.all !== true) {
    throw new ValidationError('INVALID_OPTION', 'filter', `names no tasks: give at least one of ${NARROWING.join(', ')}, or all: true to ${op} every task in ${BULK_STATES[op].join('/')}`);
  }
  if (f.ids !== undefined && (named.length > 1 || f.states !== undefined)) {
    throw new ValidationError('INVALID_OPTION', 'ids', `selects tasks on its own: not with ${[...named.filter((k) => k !== 'ids'), ...(f.states === undefined ? [] : ['states'])].join(', ')}`);
  }
  if (!HISTORY_OPS.includes(op)) {
    for (const k of ['finishedFrom', 'finishedBefore'] as const) {
      if (f[k] !== undefined) throw new ValidationError('INVALID_OPTION', k, `${op} acts on live tasks, which have no finish time`);
    }
  }
  const allowed = BULK_STATES[op];
  const states =
    f.ids !== undefined
      ? allowed
      : f.states === undefined
      ? DEFAULT_STATES[op]
      : [
          ...new Set(
            array(f.states, 'states', allowed.length * 2).map((s, i) => {
              if (!allowed.includes(s as TaskState)) throw new ValidationError('INVALID_OPTION', `states[${i}]`, `${op} acts on ${allowed.join(', ')}, got ${JSON.stringify(s)}`);
              return s as TaskState;
            }),
          ),
        ];
  const ids = f.ids === undefined ? null : [...new Set(array(f.ids, 'ids', MAX_BULK_IDS).map((id, i) => parseTaskId(id, `ids[${i}]`)))].sort(compareTaskIds);
  const kinds = f.kinds === undefined ? null : [...new Set(array(f.kinds, 'kinds', MAX_BULK_KINDS).map((k, i) => validateKind(k, `kinds[${i}]`)))];
  let keyPrefix: string | null = null;
  if (f.keyPrefix !== undefined) {
    const k = f.keyPrefix;
    if (typeof k !== 'string' || k.length === 0 || k.length > MAX_KEY_LENGTH || k.includes('\u0000')) {
      throw new ValidationError('INVALID_KEY', 'keyPrefix', `must be a string of 1..${MAX_KEY_LENGTH} characters without \\u0000`);
    }
    keyPrefix = k;
  }
  const time = (k: 'dueFrom' | 'dueBefore' | 'finishedFrom' | 'finishedBefore') => (f[k] === undefined ? null : validateRunAt(f[k], k));
  return {
    ids,
    kinds,
    queue: f.queue === undefined ? null : validateQueue(f.queue, 'queue'),
    states,
    keyPrefix,
    dueFrom: time('dueFrom'),
    dueBefore: time('dueBefore'),
    finishedFrom: time('finishedFrom'),
    finishedBefore: time('finishedBefore'),
  };
}

/** Validated options of a bulk operation. `dueAt`/`delayMs`: the new due time (reschedule, retry; one of them or neither). */
export interface NormalizedBulkOptions {
  readonly batchSize: number;
  readonly dryRun: boolean;
  readonly dueAt: Date | null;
  readonly delayMs: number | null;
}

/**
 * Checks the options of bulk operation `op`: `batchSize`, `dryRun`; reschedule exactly one of `dueAt`
 * / `delayMs`; retry at most one of `delayMs` / `runAt` (as `retry`).
 * @throws ValidationError INVALID_OPTION (batchSize, dryRun, unknown fields), INVALID_DELAY, INVALID_RUN_AT
 */
export function validateBulkOptions(op: BulkOperation, options: unknown = {}): NormalizedBulkOptions {
  const o = plainObject(options ?? {}, 'options');
  const extra = op === 'reschedule' ? ['dueAt', 'delayMs'] : op === 'retry' ? ['delayMs', 'runAt'] : [];
  rejectUnknownFields(o, ['batchSize', 'dryRun', ...extra]);
  const batchSize = o.batchSize ?? DEFAULT_BULK_BATCH;
  if (typeof batchSize !== 'number' || !Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BULK_BATCH) {
    throw new ValidationError('INVALID_OPTION', 'batchSize', `must be an integer 1..${MAX_BULK_BATCH}, got ${String(batchSize)}`);
  }
  if (o.dryRun !== undefined && typeof o.dryRun !== 'boolean') throw new ValidationError('INVALID_OPTION', 'dryRun', 'must be a boolean');
  const at = op === 'reschedule' ? 'dueAt' : 'runAt';
  if (op === 'reschedule' && (o.dueAt === undefined) === (o.delayMs === undefined)) {
    throw new ValidationError('INVALID_DELAY', 'delayMs', 'give exactly one of dueAt or delayMs');
  }
  if (op === 'retry' && o.delayMs !== undefined && o.runAt !== undefined) throw new ValidationError('INVALID_DELAY', 'delayMs', 'give delayMs or runAt, not both');
  return {
    batchSize,
    dryRun: o.dryRun === true,
    dueAt: o[at] === undefined ? null : validateDueAt(o[at], at),
    delayMs: o.delayMs === undefined ? null : validateDelayMs(o.delayMs),
  };
}

/**
 * What a task's row says of its outcome when the act of bulk operation `op` did not change it (or,
 * in a dry run, before anything is changed), as the single-task operation reports it: `'AGAIN'` when
 * the row is in the `acted` states (the act applies to it), null for a finished row outside `acted`
 * (not selected), else the outcome. `row` undefined: no such task. Every store resolves through this.
 */
export function resolveBulkRow(op: BulkOperation, row: { readonly state: string; readonly retriedAs: TaskId | null } | undefined, acted: readonly string[]): string | null {
  if (row === undefined) return 'NOT_FOUND';
  const live = row.state === TaskState.SCHEDULED || row.state === TaskState.CLAIMED;
  switch (op) {
    case 'cancel':
      if (live) return 'AGAIN';
      return row.state === TaskState.CANCELLED ? 'ALREADY_CANCELLED' : 'TOO_LATE';
    case 'retry':
      if (row.retriedAs !== null) return 'ALREADY_RETRIED';
      return acted.includes(row.state) ? 'AGAIN' : 'NOT_RETRYABLE';
    case 'reschedule':
      return row.state === TaskState.SCHEDULED ? 'AGAIN' : 'NOT_SCHEDULED';
    case 'delete':
      return live ? 'NOT_FINISHED' : acted.includes(row.state) ? 'AGAIN' : null;
  }
}

/** The outcome bulk operation `op` gives a row it acts on in `state` (what a dry run counts). */
export function bulkActOutcome(op: BulkOperation, state: string): string {
  return op === 'cancel' ? (state === TaskState.CLAIMED ? 'REQUESTED' : 'CANCELLED') : op === 'retry' ? 'RETRIED' : op === 'reschedule' ? 'RESCHEDULED' : 'DELETED';
}
