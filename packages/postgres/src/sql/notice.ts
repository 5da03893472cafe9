/**
 * The NOTIFY payloads the store sends on its channel, so a timing wheel can learn about near tasks
 * without polling (docs/contract.md#discovery). PostgreSQL delivers a notification only when the
 * sending transaction commits (PostgreSQL 17 NOTIFY): a rolled-back schedule is never announced.
 *
 * Payload: `{"op":"scheduled"|"cancelled"|"cancelRequested","id":"<task id>","dueAtMs":<epoch ms>}`, or
 * several `scheduled` tasks in one notification, `{"op":"scheduledMany","tasks":[["<id>",<dueAtMs>],…]}`
 * (the store's coalesced notices after an autocommit schedule: {@link scheduledManyPayloads}).
 * - `scheduled`: a task became SCHEDULED (schedule, fail with attempts left, reclaim with attempts left).
 * - `cancelled`: a SCHEDULED task was cancelled (drop its timer).
 * - `cancelRequested`: cancel was requested for a CLAIMED task (`cancel` returned REQUESTED): the
 *   worker holding it aborts the handler's signal.
 */
import type { TaskId } from '@postpone/core';

export type TaskNoticeOp = 'scheduled' | 'cancelled' | 'cancelRequested';

export interface TaskNotice {
  readonly op: TaskNoticeOp;
  readonly id: TaskId;
  /** The task's due time (database clock). */
  readonly dueAt: Date;
}

/** A payload's JSON object with the `op` it names; null for anything else (not JSON, not an object, another `op`). */
function parseOp(payload: string, ops: readonly string[]): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const fields = value as Record<string, unknown>;
  return typeof fields.op === 'string' && ops.includes(fields.op) ? fields : null;
}

const TASK_NOTICE_OPS: readonly TaskNoticeOp[] = ['scheduled', 'cancelled', 'cancelRequested'];

/** Parses a payload sent by this package; null for anything else (another sender on the channel). */
export function parseTaskNotice(payload: string): TaskNotice | null {
  const value = parseOp(payload, TASK_NOTICE_OPS);
  if (value === null) return null;
  const { op, id, dueAtMs } = value as { op: TaskNoticeOp; id: unknown; dueAtMs: unknown };
  if (typeof id !== 'string' || typeof dueAtMs !== 'number' || !Number.isFinite(dueAtMs)) return null;
  return { op, id, dueAt: new Date(dueAtMs) };
}

/**
 * The default channel of a schema: `postpone_<schema>`, cut to 63 bytes (channel names are
 * identifiers, NAMEDATALEN − 1; PostgreSQL 17 §4.1.1).
 */
export function defaultNotifyChannel(schema: string): string {
  return `postpone_${schema}`.slice(0, MAX_IDENTIFIER_LENGTH);
}

export const MAX_IDENTIFIER_LENGTH = 63;

/**
 * A hybrid worker's presence on the channel (docs/contract.md#discovery-sharing): `worker` is its id,
 * `group` names what it claims (workers of one group share the due ticks among them), `hello` asks
 * the workers already listening to announce themselves back. Sent by `PostgresStore.announceWorker`,
 * never by the SQL of a task.
 *
 * Payload: `{"op":"worker","worker":"<id>","group":"<group>","hello":true|false}`.
 */
export interface WorkerNotice {
  readonly op: 'worker';
  readonly worker: string;
  readonly group: string;
  readonly hello: boolean;
}

/** The payload of a {@link WorkerNotice}. */
export function workerNoticePayload(notice: Omit<WorkerNotice, 'op'>): string {
  return JSON.stringify({ op: 'worker', worker: notice.worker, group: notice.group, hello: notice.hello });
}

/** Parses a {@link WorkerNotice} payload; null for anything else. */
export function parseWorkerNotice(payload: string): WorkerNotice | null {
  const value = parseOp(payload, ['worker']);
  if (value === null) return null;
  const { worker, group, hello } = value;
  if (typeof worker !== 'string' || worker.length === 0 || typeof group !== 'string' || typeof hello !== 'boolean') return null;
  return { op: 'worker', worker, group, hello };
}

/**
 * Most tasks in one `scheduledMany` payload: ids of up to 20 digits and 13-digit due times keep it
 * far below the 8 000-byte payload limit (PostgreSQL 17 NOTIFY).
 */
export const MAX_TASKS_PER_NOTICE = 150;

/** `scheduledMany` payloads announcing `tasks` (id, due time in epoch ms), {@link MAX_TASKS_PER_NOTICE} per payload. */
export function scheduledManyPayloads(tasks: readonly (readonly [id: TaskId, dueAtMs: number])[]): string[] {
  const payloads: string[] = [];
  for (let i = 0; i < tasks.length; i += MAX_TASKS_PER_NOTICE) {
    payloads.push(JSON.stringify({ op: 'scheduledMany', tasks: tasks.slice(i, i + MAX_TASKS_PER_NOTICE) }));
  }
  return payloads;
}

/** Parses a `scheduledMany` payload into one `scheduled` notice per task; null for anything else. */
export function parseScheduledMany(payload: string): TaskNotice[] | null {
  const tasks = parseOp(payload, ['scheduledMany'])?.tasks;
  if (!Array.isArray(tasks)) return null;
  const notices: TaskNotice[] = [];
  for (const entry of tasks as unknown[]) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || entry[0].length === 0 || typeof entry[1] !== 'number' || !Number.isFinite(entry[1])) return null;
    notices.push({ op: 'scheduled', id: entry[0], dueAt: new Date(entry[1]) });
  }
  return notices;
}

/**
 * A queue or kind was paused or resumed (docs/contract.md#pause-and-resume), sent by the statements
 * of `./pause-sql.ts` at their commit: listening hybrid workers re-read the store (a paused task
 * leaves the wheel, a resumed one is placed and claimed at once).
 *
 * Payload: `{"op":"paused"|"resumed","scope":"queue"|"kind","name":"<queue or kind>"}`.
 */
export interface PauseNotice {
  readonly op: 'paused' | 'resumed';
  readonly scope: 'queue' | 'kind';
  readonly name: string;
}

/** Parses a {@link PauseNotice} payload; null for anything else. */
export function parsePauseNotice(payload: string): PauseNotice | null {
  const value = parseOp(payload, ['paused', 'resumed']);
  if (value === null) return null;
  const { op, scope, name } = value as { op: 'paused' | 'resumed'; scope: unknown; name: unknown };
  if ((scope !== 'queue' && scope !== 'kind') || typeof name !== 'string' || name.length === 0) return null;
  return { op, scope, name };
}
