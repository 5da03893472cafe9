/**
 * The store capability recurring schedules rest on (docs/contract.md#recurring-schedules):
 * a durable table of schedules, each with a *watermark* (the latest occurrence already turned into a
 * task), and two operations every store implements in one transaction:
 *
 * - `reconcileCronSchedules`: make the stored schedules the declared ones (add, change, remove);
 * - `scheduleCronOccurrence`: insert the task of occurrence T of schedule S **and** advance S's
 *   watermark to T, only when the watermark is still before T. Many processes may try the same
 *   occurrence at once: exactly one inserts (River's and Oban's periodic-job design: a durable
 *   high-water mark moved in the same transaction as the insert; a dedup key alone frees itself once
 *   the task is DONE, so it cannot give "once per occurrence").
 *
 * Types and input checks only (no I/O, no cron parsing): `@postpone/memory`, `@postpone/postgres`
 * implement {@link CronStore}; `@postpone/cron` (the scheduler, with croner) uses it.
 */
import { type NormalizedSchedule, type ScheduleInput, type TaskId, validateRunAt, validateSchedule } from './input/validate.js';
import { ValidationError } from './errors/errors.js';

/** What the store keeps of a declared schedule: its identity and its expression. */
export interface CronScheduleSpec {
  /** Unique name, 1..200 characters without `\u0000`: the schedule's identity across deploys. */
  readonly name: string;
  /** The cron expression (croner syntax, 5 or 6 fields), 1..256 characters. The store compares it as text. */
  readonly cron: string;
  /** IANA time zone the expression is read in, e.g. `America/New_York`, 1..64 characters. */
  readonly timeZone: string;
}

/** One stored schedule. */
export interface CronScheduleRecord extends CronScheduleSpec {
  /**
   * The high-water mark: the latest occurrence already turned into a task, or the time the schedule
   * was added (or its expression changed) when that is later. Never moves back.
   */
  readonly watermark: Date;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface ReconcileCronParams {
  /** The declared schedules (distinct names). */
  readonly schedules: readonly CronScheduleSpec[];
  /** Delete stored schedules that are not declared (default true). */
  readonly removeUndeclared?: boolean;
}

/** Names by what reconcile did, each list sorted. */
export interface ReconcileCronResult {
  /** New schedules; watermark = the store's now (no occurrence before it is due). */
  readonly added: readonly string[];
  /** Expression or time zone changed; watermark = max(watermark, the store's now): the next occurrence is re-based. */
  readonly changed: readonly string[];
  readonly unchanged: readonly string[];
  /** Stored but not declared: deleted (their tasks already scheduled stay). */
  readonly removed: readonly string[];
}

/** The task an occurrence becomes: a schedule input without a due time (the occurrence is the due time) or key. */
export type CronTaskInput = Omit<ScheduleInput, 'delayMs' | 'runAt' | 'key' | 'limitKey'>;

export interface ScheduleCronOccurrenceParams {
  readonly name: string;
  /** The expression and zone the caller computed `occurrence` from; a stored schedule that differs is `CHANGED`. */
  readonly cron: string;
  readonly timeZone: string;
  /** The occurrence: the task's due time, and the schedule's new watermark. */
  readonly occurrence: Date;
  readonly task: CronTaskInput;
}

export type ScheduleCronOccurrenceResult =
  /** The task was inserted and the watermark moved to the occurrence, in one transaction. */
  | { readonly outcome: 'SCHEDULED'; readonly id: TaskId; readonly dueAt: Date }
  /** The watermark is already at or past the occurrence (another process, or an earlier call, took it): nothing written. */
  | { readonly outcome: 'PASSED'; readonly watermark: Date }
  /** The stored expression or time zone is not the caller's (another deploy reconciled): nothing written. */
  | { readonly outcome: 'CHANGED' }
  /** No such schedule (removed): nothing written. */
  | { readonly outcome: 'NOT_FOUND' };

/** The capability: implemented by the memory store and both PostgreSQL stores. */
export interface CronStore {
  /**
   * In ONE transaction: inserts the declared schedules that are missing, updates those whose
   * expression or zone differs (re-basing the watermark), and (by default) deletes the undeclared ones.
   * @throws ValidationError (see {@link validateReconcileCron}; nothing written), StoreClosedError, ConnectionLostError, StoreError
   */
  reconcileCronSchedules(params: ReconcileCronParams): Promise<ReconcileCronResult>;
  /**
   * In ONE statement (PostgreSQL) / one write set (memory): advance the watermark to `occurrence` if
   * it is before it and the stored expression is the caller's, and insert the task due at `occurrence`
   * only then. Concurrent callers for one occurrence: exactly one gets `SCHEDULED`.
   * @throws ValidationError (see {@link validateCronOccurrence}; nothing written), StoreClosedError, ConnectionLostError, StoreError
   */
  scheduleCronOccurrence(params: ScheduleCronOccurrenceParams): Promise<ScheduleCronOccurrenceResult>;
  /** Every stored schedule, by name. */
  listCronSchedules(): Promise<CronScheduleRecord[]>;
}

/** True when `store` has the {@link CronStore} methods. */
export function isCronStore(store: unknown): store is CronStore {
  const s = store as Partial<CronStore> | null;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.reconcileCronSchedules === 'function' &&
    typeof s.scheduleCronOccurrence === 'function' &&
    typeof s.listCronSchedules === 'function'
  );
}

export const MAX_CRON_NAME_LENGTH = 200;
export const MAX_CRON_EXPRESSION_LENGTH = 256;
export const MAX_TIME_ZONE_LENGTH = 64;

function text(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max || value.includes('\u0000')) {
    throw new ValidationError('INVALID_OPTION', field, `must be a string of 1..${max} characters without \\u0000, got ${JSON.stringify(value) ?? String(value)}`);
  }
  return value;
}

function object(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ValidationError('INVALID_OPTION', field, 'must be an object');
  return value as Record<string, unknown>;
}

function known(value: Record<string, unknown>, fields: readonly string[], field: string): void {
  for (const k of Object.keys(value)) if (!fields.includes(k)) throw new ValidationError('INVALID_OPTION', `${field}.${k}`, 'is not a known field');
}

/** Checks one {@link CronScheduleSpec}. @throws ValidationError INVALID_OPTION naming `field.name` / `.cron` / `.timeZone` */
export function validateCronSpec(value: unknown, field = 'schedule'): CronScheduleSpec {
  const o = object(value, field);
  return {
    name: text(o.name, `${field}.name`, MAX_CRON_NAME_LENGTH),
    cron: text(o.cron, `${field}.cron`, MAX_CRON_EXPRESSION_LENGTH),
    timeZone: text(o.timeZone, `${field}.timeZone`, MAX_TIME_ZONE_LENGTH),
  };
}

/**
 * Checks reconcile input: an object `{ schedules, removeUndeclared? }`, schedules with distinct names.
 * @returns the specs sorted by name (the order stores lock rows in) and the flag
 * @throws ValidationError INVALID_OPTION naming `schedules[i].field`, or a repeated name
 */
export function validateReconcileCron(params: unknown): { schedules: CronScheduleSpec[]; removeUndeclared: boolean } {
  const o = object(params, 'params');
  known(o, ['schedules', 'removeUndeclared'], 'params');
  if (!Array.isArray(o.schedules)) throw new ValidationError('INVALID_OPTION', 'schedules', 'must be an array');
  const schedules = o.schedules.map((s, i) => validateCronSpec(s, `schedules[${i}]`));
  const seen = new Set<string>();
  schedules.forEach((s, i) => {
    if (seen.has(s.name)) throw new ValidationError('INVALID_OPTION', `schedules[${i}].name`, `repeats the name ${JSON.stringify(s.name)}`);
    seen.add(s.name);
  });
  if (o.removeUndeclared !== undefined && typeof o.removeUndeclared !== 'boolean') throw new ValidationError('INVALID_OPTION', 'removeUndeclared', 'must be a boolean');
  schedules.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { schedules, removeUndeclared: o.removeUndeclared ?? true };
}

/**
 * Checks an occurrence: the spec fields, `occurrence` a Date in years 1..9999, and the task through
 * core's `validateSchedule` (due at the occurrence; `delayMs`, `runAt` and `key` are refused).
 * @throws ValidationError (INVALID_OPTION, INVALID_RUN_AT `occurrence`, or the task's own codes)
 */
export function validateCronOccurrence(params: unknown, maxPayloadBytes: number): { spec: CronScheduleSpec; occurrence: Date; task: NormalizedSchedule } {
  const o = object(params, 'params');
  known(o, ['name', 'cron', 'timeZone', 'occurrence', 'task'], 'params');
  const spec = validateCronSpec({ name: o.name, cron: o.cron, timeZone: o.timeZone }, 'params');
  const input = object(o.task, 'task');
  for (const f of ['delayMs', 'runAt', 'key', 'limitKey']) {
    if (input[f] !== undefined) throw new ValidationError('INVALID_OPTION', `task.${f}`, 'is set by the schedule (the occurrence is the due time; no key, no limitKey)');
  }
  const occurrence = validateRunAt(o.occurrence, 'occurrence');
  const task = validateSchedule({ ...(input as CronTaskInput), runAt: occurrence }, { maxPayloadBytes }, 'task');
  return { spec, occurrence, task };
}
