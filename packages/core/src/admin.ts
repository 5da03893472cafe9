/**
 * Operating a store: list, retry, prune and stats (the `Store` methods `listTasks`, `retry`, `prune`,
 * `stats`). Their parameter and result shapes, and the input checks every store runs first, so a bad
 * call is refused the same way everywhere (a {@link ValidationError}) before anything is read or written.
 *
 * Terms:
 * - history: DONE, CANCELLED and DEAD tasks; they never change state again (docs/contract.md#promises, promise 5).
 * - retry (also called requeue): a NEW task with the kind and payload of a DEAD or CANCELLED one; the
 *   original keeps its state and records the new id (`retriedAs`), the new one points back (`retryOf`).
 * - prune: deleting history finished before a cut-off, in bounded batches, or
 *   past a retention per terminal state (on PostgreSQL by dropping whole partitions, docs/contract.md#retention).
 */
import { ValidationError } from './errors/errors.js';
import { TASK_STATES, type TaskState } from './states.js';
import type { TaskId } from './input/validate.js';
import type { Task } from './task.js';
import { parseTaskId, rejectUnknownFields, validateDelayMs, validateKind, validateMaxAttempts, validateDueAt, validateQueue, validateRunAt } from './input/validate.js';

/** Default and largest page of `listTasks`. */
export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 1_000;
/** Most kinds one `listTasks` call may filter on. */
export const MAX_LIST_KINDS = 100;
/** Default and largest batch of `prune` (rows deleted per statement / transaction). */
export const DEFAULT_PRUNE_BATCH = 1_000;
export const MAX_PRUNE_BATCH = 10_000;

/** The states `prune` deletes. */
export const PRUNABLE_STATES: readonly TaskState[] = Object.freeze(['DONE', 'CANCELLED', 'DEAD'] as const);
/** The states `retry` accepts. */
export const RETRYABLE_STATES: readonly TaskState[] = Object.freeze(['DEAD', 'CANCELLED'] as const);

/** `newest`: highest id (latest scheduled) first; `oldest`: lowest id first. */
export type ListOrder = 'newest' | 'oldest';

export interface ListTasksParams {
  /** Only tasks in one of these states (default: every state). Non-empty. */
  readonly states?: readonly TaskState[];
  /** Only tasks of one of these kinds (1..{@link MAX_LIST_KINDS}). */
  readonly kinds?: readonly string[];
  /**
   * Only tasks of this queue (a name as `schedule` takes it, docs/contract.md#queues; default: every
   * queue). A filter on the rows the id order reads, not an index of its own: a rare queue among many
   * tasks of the listed states reads more rows before a page is full.
   */
  readonly queue?: string;
  /** Only tasks due at or after this time. */
  readonly dueFrom?: Date;
  /** Only tasks due strictly before this time. */
  readonly dueBefore?: Date;
  /** true: only tasks with a `lastError`; false: only tasks without one. */
  readonly hasError?: boolean;
  /** Default `newest`. */
  readonly order?: ListOrder;
  /** Page size 1..{@link MAX_LIST_LIMIT} (default {@link DEFAULT_LIST_LIMIT}). */
  readonly limit?: number;
  /** `nextCursor` of the previous page, with the same filters and order; omit (or null) for the first page. */
  readonly cursor?: string | null;
}

/** A task row with its retry links. */
export interface TaskRecord extends Task {
  /** The task this one retries (it may have been pruned since), or null. */
  readonly retryOf: TaskId | null;
  /** The task that retries this one, or null. */
  readonly retriedAs: TaskId | null;
}

export interface TaskPage {
  readonly tasks: readonly TaskRecord[];
  /** Opaque; pass it as `cursor` for the next page. Null when this page is the last. */
  readonly nextCursor: string | null;
}

export interface RetryParams {
  /** A DEAD or CANCELLED task. */
  readonly id: TaskId;
  /** Delay from the store's now in ms (default 0: due now). Not with `runAt`. */
  readonly delayMs?: number;
  /** Absolute due time, at most 100 years after now (as `delayMs`). Not with `delayMs`. */
  readonly runAt?: Date;
  /** Attempts of the new task (default: the original's `maxAttempts`). */
  readonly maxAttempts?: number;
}

/**
 * What `retry` returns. Expected situations are outcomes, not errors (as for cancel):
 * - `RETRIED`: a new SCHEDULED task `id` was made, due at `dueAt`, with a fresh attempt budget.
 * - `ALREADY_RETRIED`: this task was retried before; `id` is that new task (no third task is made).
 * - `NOT_RETRYABLE`: the task is SCHEDULED, CLAIMED or DONE (`state`); nothing changed.
 * - `NOT_FOUND`: no such task.
 */
export type RetryResult =
  | { readonly outcome: 'RETRIED'; readonly id: TaskId; readonly dueAt: Date }
  | { readonly outcome: 'ALREADY_RETRIED'; readonly id: TaskId }
  | { readonly outcome: 'NOT_RETRYABLE'; readonly state: TaskState }
  | { readonly outcome: 'NOT_FOUND' };
export type RetryOutcome = RetryResult['outcome'];

/**
 * How long history of each terminal state is kept, in ms after it finished (docs/contract.md#retention).
 * A state left out is kept forever. Example: `{ DONE: 86_400_000, DEAD: 7 * 86_400_000 }`.
 */
export type HistoryRetention = { readonly [S in 'DONE' | 'DEAD' | 'CANCELLED']?: number };

export interface PruneParams {
  /** Delete history finished (last updated) strictly before this time. Give exactly one of `before`, `olderThanMs`, `retention`. */
  readonly before?: Date;
  /** Delete history finished more than this many ms before the store's now. */
  readonly olderThanMs?: number;
  /**
   * Delete history past its state's retention (finished more than `retention[state]` ms before the
   * store's now). The memory store deletes exactly those rows; PostgreSQL drops each whole partition
   * (one state, one UTC day) once every row in it is past retention, so a row may outlive its
   * retention by up to a day, never less (docs/contract.md#retention).
   */
  readonly retention?: HistoryRetention;
  /** Rows per batch, 1..{@link MAX_PRUNE_BATCH} (default {@link DEFAULT_PRUNE_BATCH}); each batch is its own short transaction. */
  readonly batchSize?: number;
}

export interface PruneResult {
  /** Tasks deleted. */
  readonly deleted: number;
  /**
   * Rows of the legacy `effect` table deleted with them: only code before migration 13 of
   * `@postpone/postgres` wrote that table, so this is 0 once those rows are gone (always 0 on the memory store).
   */
  readonly effectsDeleted: number;
  /** Batches run (the last one found fewer than `batchSize` rows). */
  readonly batches: number;
  /** With `retention` on PostgreSQL: history partitions dropped whole (their rows are counted in `deleted`). Absent otherwise. */
  readonly partitionsDropped?: number;
  /** With `retention` on PostgreSQL: day partitions created ahead by this prune. Absent otherwise. */
  readonly partitionsCreated?: number;
  /**
   * With `retention` on PostgreSQL: what partition maintenance could not do in this prune, one entry
   * per day partition not made or partition not dropped, reported again by every prune while it
   * lasts (docs/contract.md#retention). Empty when nothing was skipped; absent otherwise.
   */
  readonly partitionsSkipped?: readonly HistoryPartitionSkip[];
  /**
   * Throttle rows deleted: those whose window had reopened, which a later `onConflict: 'throttle'`
   * schedule would find open anyway (docs/contract.md#dedup-keys). Every prune deletes them, whatever
   * its parameters; absent when there were none.
   */
  readonly throttleRowsDeleted?: number;
}

/**
 * Why history partition maintenance skipped a day or a partition (docs/contract.md#retention):
 * - `ROWS_IN_DEFAULT`: the day has no partition and its rows sit in the state's DEFAULT partition
 *   (no maintenance ran ahead of it); retention deletes them by row.
 * - `NAME_TAKEN`: a relation with the day partition's name exists and is not that day's partition
 *   (a table not attached, attached elsewhere or with another range); it is left alone, and the
 *   day's rows go to the DEFAULT partition.
 * - `OVERLAP`: another partition already covers part of the day.
 * - `LOCK_TIMEOUT`: a lock was not granted within the maintenance `lock_timeout` (a reader holds
 *   the partition); done by a later prune.
 */
export type HistoryPartitionSkipReason = 'ROWS_IN_DEFAULT' | 'NAME_TAKEN' | 'OVERLAP' | 'LOCK_TIMEOUT';

/** One entry of {@link PruneResult.partitionsSkipped}. */
export interface HistoryPartitionSkip {
  /** `create`: a day partition not made; `drop`: a partition past retention not dropped. */
  readonly action: 'create' | 'drop';
  readonly state: 'DONE' | 'DEAD' | 'CANCELLED';
  /** The partition's name (`task_history_done_20300101`). */
  readonly partition: string;
  /** Its UTC day, `YYYY-MM-DD` (null for a partition whose range is not one day). */
  readonly day: string | null;
  readonly reason: HistoryPartitionSkipReason;
  /** One line for logs. */
  readonly detail: string;
}

/** Live counts of one kind. */
export interface KindStats {
  readonly kind: string;
  readonly scheduled: number;
  /** SCHEDULED and due (dueAt ≤ the store's now): waiting for a worker. */
  readonly due: number;
  readonly claimed: number;
  readonly dead: number;
}

/**
 * What `stats` returns. DONE and CANCELLED are history and are not counted here (on PostgreSQL that
 * would read every finished row; `countByState` does that when you need it).
 */
export interface StoreStats {
  /** The store's clock at the read. */
  readonly now: Date;
  readonly scheduled: number;
  readonly due: number;
  readonly claimed: number;
  readonly dead: number;
  /** Per kind with any of the counts above non-zero, by kind. */
  readonly byKind: readonly KindStats[];
  /** `now − dueAt` of the oldest due SCHEDULED task in ms, or null when none is due. */
  readonly oldestDueLatenessMs: number | null;
}

/** Live tasks of one kind in one state, as a store counts them for {@link storeStats}. */
export interface StatsGroup {
  readonly kind: string;
  /** SCHEDULED, CLAIMED or DEAD. */
  readonly state: TaskState;
  readonly n: number;
  /** Of a SCHEDULED group, how many are due. */
  readonly due: number;
}

/**
 * `stats()`'s answer from a store's groups (any number per kind and state; they add up), the store's
 * now and the due time of its oldest due SCHEDULED task (epoch ms, or null): kinds sorted by name,
 * totals summed over kinds. Every store answers through this one function.
 */
export function storeStats(nowMs: number, groups: Iterable<StatsGroup>, oldestDueAtMs: number | null): StoreStats {
  const kinds = new Map<string, { scheduled: number; due: number; claimed: number; dead: number }>();
  for (const g of groups) {
    let k = kinds.get(g.kind);
    if (k === undefined) kinds.set(g.kind, (k = { scheduled: 0, due: 0, claimed: 0, dead: 0 }));
    if (g.state === 'SCHEDULED') {
      k.scheduled += g.n;
      k.due += g.due;
    } else if (g.state === 'CLAIMED') k.claimed += g.n;
    else if (g.state === 'DEAD') k.dead += g.n;
  }
  const byKind: KindStats[] = [...kinds].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([kind, c]) => ({ kind, ...c }));
  const sum = (f: (k: KindStats) => number) => byKind.reduce((n, k) => n + f(k), 0);
  return {
    now: new Date(nowMs),
    scheduled: sum((k) => k.scheduled),
    due: sum((k) => k.due),
    claimed: sum((k) => k.claimed),
    dead: sum((k) => k.dead),
    byKind,
    oldestDueLatenessMs: oldestDueAtMs === null ? null : nowMs - oldestDueAtMs,
  };
}

/** Validated `listTasks` parameters, ready for a store. `cursorId` is the last id of the previous page. */
export interface NormalizedListParams {
  readonly states: readonly TaskState[] | null;
  readonly kinds: readonly string[] | null;
  readonly queue: string | null;
  readonly dueFrom: Date | null;
  readonly dueBefore: Date | null;
  readonly hasError: boolean | null;
  readonly order: ListOrder;
  readonly limit: number;
  readonly cursorId: TaskId | null;
}

const LIST_FIELDS = ['states', 'kinds', 'queue', 'dueFrom', 'dueBefore', 'hasError', 'order', 'limit', 'cursor'] as const;
const CURSOR_PREFIX = 'c1.';

/** Encodes the position after `lastId` for `order` (base64url text; opaque to callers). */
export function encodeListCursor(order: ListOrder, lastId: TaskId): string {
  return CURSOR_PREFIX + Buffer.from(JSON.stringify([order, lastId]), 'utf8').toString('base64url');
}

/**
 * Decodes a cursor made by {@link encodeListCursor} for the same order.
 * @throws ValidationError INVALID_OPTION (`cursor`) for anything else
 */
export function decodeListCursor(cursor: unknown, order: ListOrder): TaskId {
  const bad = (why: string) => new ValidationError('INVALID_OPTION', 'cursor', `${why}; pass the nextCursor of the previous page unchanged`);
  if (typeof cursor !== 'string' || !cursor.startsWith(CURSOR_PREFIX) || cursor.length > 200) throw bad('is not a cursor of listTasks');
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    throw bad('is not a cursor of listTasks');
  }
  if (!Array.isArray(decoded) || decoded.length !== 2) throw bad('is not a cursor of listTasks');
  if (decoded[0] !== order) throw bad(`was made for order ${JSON.stringify(decoded[0])}, not ${JSON.stringify(order)}`);
  try {
    return parseTaskId(decoded[1], 'cursor');
  } catch {
    throw bad('is not a cursor of listTasks');
  }
}

function plainObject(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError('INVALID_OPTION', field, 'must be an object');
  }
  return value as Record<string, unknown>;
}

function nonEmptyArray(value: unknown, field: string, max: number): readonly unknown[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > max) {
    throw new ValidationError('INVALID_OPTION', field, `must be an array of 1..${max} items`);
  }
  return value;
}

/**
 * Checks `listTasks` parameters (every field optional; unknown fields refused).
 * @throws ValidationError INVALID_OPTION (states, kinds, hasError, order, limit, cursor, unknown fields),
 *   INVALID_KIND (`kinds[i]`), INVALID_QUEUE (queue), INVALID_RUN_AT (dueFrom, dueBefore)
 */
export function validateListParams(params: unknown = {}): NormalizedListParams {
  const p = plainObject(params ?? {}, 'params');
  rejectUnknownFields(p, LIST_FIELDS);
  const states =
    p.states === undefined
      ? null
      : nonEmptyArray(p.states, 'states', TASK_STATES.length * 2).map((s, i) => {
          if (!TASK_STATES.includes(s as TaskState)) {
            throw new ValidationError('INVALID_OPTION', `states[${i}]`, `must be one of ${TASK_STATES.join(', ')}, got ${JSON.stringify(s)}`);
          }
          return s as TaskState;
        });
  const kinds = p.kinds === undefined ? null : nonEmptyArray(p.kinds, 'kinds', MAX_LIST_KINDS).map((k, i) => validateKind(k, `kinds[${i}]`));
  const queue = p.queue === undefined ? null : validateQueue(p.queue, 'queue');
  const dueFrom = p.dueFrom === undefined ? null : validateRunAt(p.dueFrom, 'dueFrom');
  const dueBefore = p.dueBefore === undefined ? null : validateRunAt(p.dueBefore, 'dueBefore');
  if (p.hasError !== undefined && typeof p.hasError !== 'boolean') throw new ValidationError('INVALID_OPTION', 'hasError', 'must be a boolean');
  const order = p.order ?? 'newest';
  if (order !== 'newest' && order !== 'oldest') throw new ValidationError('INVALID_OPTION', 'order', `must be "newest" or "oldest", got ${JSON.stringify(order)}`);
  const limit = p.limit ?? DEFAULT_LIST_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new ValidationError('INVALID_OPTION', 'limit', `must be an integer 1..${MAX_LIST_LIMIT}, got ${String(limit)}`);
  }
  const cursorId = p.cursor === undefined || p.cursor === null ? null : decodeListCursor(p.cursor, order);
  return {
    states: states === null ? null : [...new Set(states)],
    kinds: kinds === null ? null : [...new Set(kinds)],
    queue,
    dueFrom,
    dueBefore,
    hasError: p.hasError ?? null,
    order,
    limit,
    cursorId,
  };
}

/** Validated `retry` parameters. `runAt` null means due at the store's now + `delayMs`; `maxAttempts` null keeps the original's. */
export interface NormalizedRetryParams {
  readonly id: TaskId;
  readonly delayMs: number;
  readonly runAt: Date | null;
  readonly maxAttempts: number | null;
}

/**
 * Checks `retry` parameters.
 * @throws ValidationError INVALID_TASK_ID, INVALID_DELAY (also when both delayMs and runAt are given), INVALID_RUN_AT, INVALID_MAX_ATTEMPTS, INVALID_OPTION
 */
export function validateRetryParams(params: unknown): NormalizedRetryParams {
  const p = plainObject(params, 'params');
  rejectUnknownFields(p, ['id', 'delayMs', 'runAt', 'maxAttempts']);
  const id = parseTaskId(p.id);
  if (p.delayMs !== undefined && p.runAt !== undefined) throw new ValidationError('INVALID_DELAY', 'delayMs', 'give delayMs or runAt, not both');
  return {
    id,
    delayMs: p.delayMs === undefined ? 0 : validateDelayMs(p.delayMs),
    runAt: p.runAt === undefined ? null : validateDueAt(p.runAt),
    maxAttempts: p.maxAttempts === undefined ? null : validateMaxAttempts(p.maxAttempts),
  };
}

/** Validated `prune` parameters: exactly one of `before` / `olderThanMs` / `retention`. */
export interface NormalizedPruneParams {
  readonly before: Date | null;
  readonly olderThanMs: number | null;
  /** Retention ms per terminal state given (states left out are absent). */
  readonly retention: Readonly<Partial<Record<'DONE' | 'DEAD' | 'CANCELLED', number>>> | null;
  readonly batchSize: number;
}

/**
 * Checks `prune` parameters.
 * @throws ValidationError INVALID_OPTION (not exactly one cut-off, bad batchSize, unknown fields, a retention
 *   that is not an object of terminal states), INVALID_RUN_AT (before), INVALID_DELAY (olderThanMs, `retention.<state>`)
 */
export function validatePruneParams(params: unknown): NormalizedPruneParams {
  const p = plainObject(params, 'params');
  rejectUnknownFields(p, ['before', 'olderThanMs', 'retention', 'batchSize']);
  if ([p.before, p.olderThanMs, p.retention].filter((v) => v !== undefined).length !== 1) {
    throw new ValidationError('INVALID_OPTION', 'before', 'give exactly one cut-off: before (a Date), olderThanMs or retention');
  }
  let retention: Partial<Record<'DONE' | 'DEAD' | 'CANCELLED', number>> | null = null;
  if (p.retention !== undefined) {
    const r = plainObject(p.retention, 'retention');
    rejectUnknownFields(r, PRUNABLE_STATES, 'retention.');
    if (Object.keys(r).length === 0) throw new ValidationError('INVALID_OPTION', 'retention', 'must name at least one of DONE, DEAD, CANCELLED');
    retention = {};
    for (const state of ['DONE', 'DEAD', 'CANCELLED'] as const) {
      if (r[state] !== undefined) retention[state] = validateDelayMs(r[state], `retention.${state}`);
    }
  }
  const batchSize = p.batchSize ?? DEFAULT_PRUNE_BATCH;
  if (typeof batchSize !== 'number' || !Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_PRUNE_BATCH) {
    throw new ValidationError('INVALID_OPTION', 'batchSize', `must be an integer 1..${MAX_PRUNE_BATCH}, got ${String(batchSize)}`);
  }
  return {
    before: p.before === undefined ? null : validateRunAt(p.before, 'before'),
    olderThanMs: p.olderThanMs === undefined ? null : validateDelayMs(p.olderThanMs, 'olderThanMs'),
    retention,
    batchSize,
  };
}
