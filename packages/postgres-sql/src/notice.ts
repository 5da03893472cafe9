/**
 * The NOTIFY payloads the store sends on its channel, so a timing wheel can learn about near tasks
 * without polling (docs/contract.md#discovery). PostgreSQL delivers a notification only when the
 * sending transaction commits (PostgreSQL 17 NOTIFY): a rolled-back schedule is never announced.
 *
 * Payload: `{"op":"scheduled"|"cancelled"|"cancelRequested","id":"<task id>","dueAtMs":<epoch ms>}`.
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

/** Parses a payload sent by this package; null for anything else (another sender on the channel). */
export function parseTaskNotice(payload: string): TaskNotice | null {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { op, id, dueAtMs } = value as Record<string, unknown>;
  if ((op !== 'scheduled' && op !== 'cancelled' && op !== 'cancelRequested') || typeof id !== 'string' || typeof dueAtMs !== 'number' || !Number.isFinite(dueAtMs)) {
    return null;
  }
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
