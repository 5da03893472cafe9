/**
 * The operations of the in-memory store (list, retry, prune, stats): the same contract as the
 * PostgreSQL store, over the committed rows. Retry links live beside the rows, as the SQL columns
 * `retry_of` / `retried_as` do; they never change a task's state (terminal states stay terminal).
 */
import {
  encodeListCursor,
  type ListTasksParams,
  type NormalizedSchedule,
  PRUNABLE_STATES,
  type PruneParams,
  type PruneResult,
  RETRYABLE_STATES,
  type RetryParams,
  type RetryResult,
  type ScheduledTask,
  type StatsGroup,
  type StoreStats,
  storeStats,
  type Task,
  type TaskId,
  type TaskPage,
  type TaskRecord,
  TaskState,
  type UnclaimedKinds,
  type UnclaimedKindsParams,
  unclaimedKindsOf,
  validateListParams,
  validatePruneParams,
  validateRetryParams,
  validateUnclaimedKindsParams,
  compareTaskIds,
} from '@postpone/core';
import type { MemoryDatabase } from './database.js';
import type { TaskLocks } from './task-locks.js';

export interface MemoryAdminContext {
  readonly db: MemoryDatabase;
  readonly locks: TaskLocks;
  readonly nowMs: () => number;
  /** Inserts and commits one task the way schedule does. */
  readonly insert: (input: NormalizedSchedule) => ScheduledTask;
  readonly assertOpen: () => void;
}

export class MemoryAdmin {
  readonly #retryOf = new Map<TaskId, TaskId>();
  readonly #retriedAs = new Map<TaskId, TaskId>();

  constructor(private readonly ctx: MemoryAdminContext) {}

  async listTasks(params: ListTasksParams = {}): Promise<TaskPage> {
    this.ctx.assertOpen();
    const p = validateListParams(params);
    const sign = p.order === 'newest' ? -1 : 1;
    const after = p.cursorId === null ? null : BigInt(p.cursorId);
    const matching = [...this.ctx.db.tasks.values()]
      .filter(
        (t) =>
          (p.states === null || p.states.includes(t.state)) &&
          (p.kinds === null || p.kinds.includes(t.kind)) &&
          (p.queue === null || t.queue === p.queue) &&
          (p.dueFrom === null || t.dueAt.getTime() >= p.dueFrom.getTime()) &&
          (p.dueBefore === null || t.dueAt.getTime() < p.dueBefore.getTime()) &&
          (p.hasError === null || (t.lastError !== null) === p.hasError) &&
          (after === null || (sign < 0 ? BigInt(t.id) < after : BigInt(t.id) > after)),
      )
      .sort((a, b) => sign * compareTaskIds(a.id, b.id));
    const page = matching.slice(0, p.limit).map((t) => this.#record(t));
    const last = page.at(-1);
    return { tasks: page, nextCursor: matching.length > p.limit && last !== undefined ? encodeListCursor(p.order, last.id) : null };
  }

  async retry(params: RetryParams): Promise<RetryResult> {
    this.ctx.assertOpen();
    const p = validateRetryParams(params);
    return this.ctx.locks.run(p.id, () => {
      this.ctx.assertOpen();
      const original = this.ctx.db.tasks.get(p.id);
      if (original === undefined) return { outcome: 'NOT_FOUND' };
      const previous = this.#retriedAs.get(p.id);
      if (previous !== undefined) return { outcome: 'ALREADY_RETRIED', id: previous };
      if (!RETRYABLE_STATES.includes(original.state)) return { outcome: 'NOT_RETRYABLE', state: original.state };
      const scheduled = this.ctx.insert({
        kind: original.kind,
        payload: structuredClone(original.payload),
        payloadText: JSON.stringify(original.payload),
        delayMs: p.delayMs,
        runAt: p.runAt,
        maxAttempts: p.maxAttempts ?? original.maxAttempts,
        // A retry is a new task scheduled by whoever retries it, not by the original's caller.
        traceContext: null,
        // The retry is a new task without a dedup key: the original's key may belong to a newer task by now.
        key: null,
        // No limit key: history does not keep it (docs/contract.md#per-key-concurrency), as in the PostgreSQL store.
        limitKey: null,
        // The original's own retry policy goes with it (a new maxAttempts replaces the policy's).
        retry: original.retry === undefined ? null : p.maxAttempts == null ? original.retry : { ...original.retry, maxAttempts: p.maxAttempts },
        // Same queue and priority: a retry runs where the original would have.
        queue: original.queue,
        priority: original.priority,
      });
      this.#retriedAs.set(p.id, scheduled.id);
      this.#retryOf.set(scheduled.id, p.id);
      return { outcome: 'RETRIED', id: scheduled.id, dueAt: scheduled.dueAt };
    });
  }

  async prune(params: PruneParams): Promise<PruneResult> {
    this.ctx.assertOpen();
    const p = validatePruneParams(params);
    const nowMs = this.ctx.nowMs();
    const cutMs = p.before !== null ? p.before.getTime() : p.olderThanMs !== null ? nowMs - p.olderThanMs : Number.NEGATIVE_INFINITY;
    // With a retention, each terminal state has its own cut-off (docs/contract.md#retention), applied by row.
    const retention = p.retention;
    const past = (t: Task): boolean => {
      if (retention === null) return t.updatedAt.getTime() < cutMs;
      const keepMs = retention[t.state as keyof typeof retention];
      return keepMs !== undefined && t.updatedAt.getTime() < nowMs - keepMs;
    };
    let deleted = 0;
    let batches = 0;
    for (;;) {
      this.ctx.assertOpen();
      batches += 1;
      const batch = [...this.ctx.db.tasks.values()]
        .filter((t) => PRUNABLE_STATES.includes(t.state) && past(t) && !this.ctx.locks.isLocked(t.id))
        .slice(0, p.batchSize);
      for (const task of batch) {
        this.ctx.db.completions.delete(task.id);
        this.ctx.db.tasks.delete(task.id);
        // A retry of this task keeps its `retryOf` (it may point at a pruned task, as in SQL).
        this.#retriedAs.delete(task.id);
      }
      deleted += batch.length;
      if (batch.length < p.batchSize) break;
      await Promise.resolve(); // let other calls run between batches, as separate transactions do
    }
    // Throttle rows whose window has reopened (docs/contract.md#dedup-key-modes), as the PostgreSQL store's prune.
    let throttleRowsDeleted = 0;
    for (const [slot, row] of this.ctx.db.throttle) {
      if (row.closedUntilMs <= nowMs) {
        this.ctx.db.throttle.delete(slot);
        throttleRowsDeleted += 1;
      }
    }
    // No legacy `effect` table here (that is PostgreSQL's, written before its migration 13): none deleted.
    return { deleted, effectsDeleted: 0, batches, ...(throttleRowsDeleted > 0 ? { throttleRowsDeleted } : {}) };
  }

  async stats(): Promise<StoreStats> {
    this.ctx.assertOpen();
    const nowMs = this.ctx.nowMs();
    const groups: StatsGroup[] = [];
    let oldestDue: number | null = null;
    for (const t of this.ctx.db.tasks.values()) {
      if (t.state !== TaskState.SCHEDULED && t.state !== TaskState.CLAIMED && t.state !== TaskState.DEAD) continue;
      const due = t.state === TaskState.SCHEDULED && t.dueAt.getTime() <= nowMs;
      if (due) oldestDue = oldestDue === null ? t.dueAt.getTime() : Math.min(oldestDue, t.dueAt.getTime());
      groups.push({ kind: t.kind, state: t.state, n: 1, due: due ? 1 : 0 });
    }
    return storeStats(nowMs, groups, oldestDue);
  }

  /** Kinds nobody claims (core `unclaimedKindsOf`: the same pairs, caps and order as the SQL walk). */
  async unclaimedKinds(params: UnclaimedKindsParams): Promise<UnclaimedKinds> {
    this.ctx.assertOpen();
    const p = validateUnclaimedKindsParams(params);
    const tasks = [...this.ctx.db.tasks.values()];
    const scheduled = tasks.filter((t) => t.state === TaskState.SCHEDULED).map((t) => ({ queue: t.queue, kind: t.kind, priority: t.priority, dueAtMs: t.dueAt.getTime() }));
    return unclaimedKindsOf(this.ctx.nowMs(), p, scheduled, tasks.filter((t) => t.state === TaskState.CLAIMED));
  }

  /** The task that retries `id`, or null. */
  retriedAs(id: TaskId): TaskId | null {
    return this.#retriedAs.get(id) ?? null;
  }

  /** Drops the link to the retry of a deleted task (its retry keeps its `retryOf`, as prune leaves it). */
  forget(id: TaskId): void {
    this.#retriedAs.delete(id);
  }

  /** The retry links of a task (for getTask-like reads). */
  record(task: Task): TaskRecord {
    return this.#record(task);
  }

  #record(task: Task): TaskRecord {
    return { ...structuredClone(task), retryOf: this.#retryOf.get(task.id) ?? null, retriedAs: this.#retriedAs.get(task.id) ?? null };
  }
}
