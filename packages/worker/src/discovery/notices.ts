/**
 * Task notifications, as far as the worker needs them. `listen` is not part of the Store contract
 * (the in-memory store has none); a store that has it — `PostgresStore` from `@postpone/postgres`,
 * over LISTEN/NOTIFY — is detected by its shape, so the worker does not depend on that package.
 *
 * PostgreSQL delivers a notification only when the sending transaction commits, and to every
 * listening session (PostgreSQL 17, NOTIFY): a new near task reaches every worker at once.
 * Notifications sent while a listener is disconnected are lost; the store reconnects and calls
 * `onReconnect`, and the worker re-reads the store then.
 */
import type { TaskId } from '@postpone/core';

/** What a store with notifications offers (e.g. `PostgresStore.listen`). */
export interface NoticeSource {
  listen(
    onNotice: (notice: unknown) => void,
    options?: { readonly onReconnect?: () => void; readonly onWorker?: (notice: unknown) => void; readonly onPause?: (notice: unknown) => void },
  ): Promise<() => Promise<void>>;
  /** Announces a worker to every listener (`PostgresStore.announceWorker`); without it a worker shares nothing. */
  announceWorker?(notice: { readonly worker: string; readonly group: string; readonly hello: boolean }): Promise<void>;
}

/** A hybrid worker's presence: its id, its group (what it claims) and whether it asks others to answer. */
export interface WorkerPresence {
  readonly worker: string;
  readonly group: string;
  readonly hello: boolean;
}

/** Reads a worker notice as delivered by the store (`{ op: 'worker', worker, group, hello }`); null for anything else. */
export function readWorkerNotice(value: unknown): WorkerPresence | null {
  if (typeof value !== 'object' || value === null) return null;
  const { op, worker, group, hello } = value as { op?: unknown; worker?: unknown; group?: unknown; hello?: unknown };
  if (op !== 'worker' || typeof worker !== 'string' || worker.length === 0 || typeof group !== 'string' || typeof hello !== 'boolean') return null;
  return { worker, group, hello };
}

/**
 * A notice the worker acts on: a task became SCHEDULED (new, retried, handed back), a waiting task
 * was cancelled, or cancel was requested for a running task (its holder aborts the handler).
 */
export type TaskNotice =
  | { readonly op: 'scheduled'; readonly id: TaskId; readonly dueAtMs: number }
  | { readonly op: 'cancelled' | 'cancelRequested'; readonly id: TaskId };

/** The store as a {@link NoticeSource} when it has a `listen` method, else null. */
export function noticeSource(store: object): NoticeSource | null {
  return typeof (store as { listen?: unknown }).listen === 'function' ? (store as NoticeSource) : null;
}

/**
 * Reads a notice as delivered by the store (`{ op, id, dueAt: Date }`); null for anything else, which
 * the worker ignores (the fallback poll covers what it might have meant).
 */
export function readNotice(value: unknown): TaskNotice | null {
  if (typeof value !== 'object' || value === null) return null;
  const { op, id, dueAt } = value as { op?: unknown; id?: unknown; dueAt?: unknown };
  if (typeof id !== 'string' || id.length === 0) return null;
  if (op === 'cancelled' || op === 'cancelRequested') return { op, id };
  if (op !== 'scheduled' || !(dueAt instanceof Date) || !Number.isFinite(dueAt.getTime())) return null;
  return { op, id, dueAtMs: dueAt.getTime() };
}
