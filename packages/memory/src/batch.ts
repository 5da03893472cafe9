/**
 * Batches with a callback of the memory store (docs/contract.md#batches): the same semantics as the
 * PostgreSQL store's migration 21. A member's terminal transition is seen at the commit that makes
 * it (`onCommit`, synchronous, so nothing interleaves): the batch's counts change there, and when the
 * batch is sealed and no member is left, the callback task is inserted before the commit returns —
 * as the PostgreSQL trigger does in the member's transaction. Exactly once: the batch records its
 * callback task and is never settled again.
 */
import {
  type BatchCallback,
  BatchError,
  type BatchId,
  type BatchInfo,
  batchCallbackPayload,
  batchStateOf,
  isTerminal,
  type NormalizedBatchCallback,
  type NormalizedSchedule,
  parseTaskId,
  type ScheduledTask,
  type ScheduleInput,
  type TaskId,
  TaskState,
  validateBatchParams,
  validateSchedule,
  validateScheduleMany,
} from '@postpone/core';
import type { WriteSet } from './database.js';

interface BatchRow {
  readonly id: BatchId;
  readonly callback: NormalizedBatchCallback;
  total: number;
  remaining: number;
  done: number;
  dead: number;
  cancelled: number;
  readonly createdAt: Date;
  sealedAt: Date | null;
  callbackTaskId: TaskId | null;
  calledBackAt: Date | null;
}

export interface MemoryBatchContext {
  readonly nowMs: () => number;
  readonly maxPayloadBytes: number;
  readonly assertOpen: () => void;
  /** Inserts and commits `tasks` (`keep`), as `scheduleMany` does. */
  readonly insert: (tasks: readonly NormalizedSchedule[]) => ScheduledTask[];
  /** Takes a task id and throws it away (a rolled-back insert's `nextval`). */
  readonly burnTaskId: () => void;
}

export class MemoryBatches {
  readonly #rows = new Map<BatchId, BatchRow>();
  /** Live members: task id → batch id (PostgreSQL: `task.batch_id`); a member leaves it at its terminal transition. */
  readonly #memberOf = new Map<TaskId, BatchId>();
  #lastId = 0n;

  constructor(private readonly ctx: MemoryBatchContext) {}

  async createBatch(params: { readonly callback: BatchCallback }): Promise<BatchId> {
    this.ctx.assertOpen();
    const { callback } = validateBatchParams(params, { maxPayloadBytes: this.ctx.maxPayloadBytes, nowMs: this.ctx.nowMs() });
    this.#lastId += 1n;
    const id = this.#lastId.toString();
    this.#rows.set(id, { id, callback, total: 0, remaining: 0, done: 0, dead: 0, cancelled: 0, createdAt: new Date(this.ctx.nowMs()), sealedAt: null, callbackTaskId: null, calledBackAt: null });
    return id;
  }

  async scheduleInBatch(batchId: BatchId, inputs: readonly ScheduleInput[]): Promise<ScheduledTask[]> {
    this.ctx.assertOpen();
    const id = parseTaskId(batchId, 'batchId');
    const tasks = validateScheduleMany(inputs, { maxPayloadBytes: this.ctx.maxPayloadBytes, nowMs: this.ctx.nowMs() });
    const row = this.#rows.get(id);
    if (row === undefined) throw new BatchError('BATCH_NOT_FOUND', id, `batch ${id} does not exist: nothing was scheduled`);
    if (row.sealedAt !== null) throw new BatchError('BATCH_SEALED', id, `batch ${id} is sealed: nothing was scheduled`);
    const scheduled = tasks.length === 0 ? [] : this.ctx.insert(tasks);
    for (const s of scheduled) {
      if (!s.created || this.#memberOf.has(s.id)) continue;
      this.#memberOf.set(s.id, id);
      row.total += 1;
      row.remaining += 1;
    }
    return scheduled;
  }

  async sealBatch(batchId: BatchId): Promise<BatchInfo> {
    this.ctx.assertOpen();
    const id = parseTaskId(batchId, 'batchId');
    const row = this.#rows.get(id);
    if (row === undefined) throw new BatchError('BATCH_NOT_FOUND', id, `batch ${id} does not exist`);
    row.sealedAt ??= new Date(this.ctx.nowMs());
    this.#settle(row);
    return infoOf(row);
  }

  async getBatch(batchId: BatchId): Promise<BatchInfo | null> {
    this.ctx.assertOpen();
    const row = this.#rows.get(parseTaskId(batchId, 'batchId'));
    return row === undefined ? null : infoOf(row);
  }

  /** The live members this write set made terminal, with their batch rows. */
  #finishedIn(ws: WriteSet): { id: TaskId; state: string; row: BatchRow }[] {
    const out: { id: TaskId; state: string; row: BatchRow }[] = [];
    if (this.#memberOf.size === 0) return out;
    for (const [id, task] of ws.tasks) {
      const batchId = this.#memberOf.get(id);
      const before = ws.based.get(id);
      if (batchId === undefined || !isTerminal(task.state) || (before !== undefined && isTerminal(before.state))) continue;
      const row = this.#rows.get(batchId);
      if (row !== undefined) out.push({ id, state: task.state, row });
    }
    return out;
  }

  /**
   * Called when a write set rolls back: a sealed batch whose last members it finished had its callback
   * inserted inside that transaction on PostgreSQL (the trigger runs at the member's statement), and a
   * rolled-back insert keeps the identity value it drew. One task id is burnt per such batch, so the
   * ids given afterwards are the same on both stores (the differential test's failing input
   * ROLLED_BACK_CALLBACK_EXAMPLE). Nothing else changes. Never throws.
   */
  onRollback(ws: WriteSet): void {
    const finishing = new Map<BatchRow, number>();
    for (const { row } of this.#finishedIn(ws)) finishing.set(row, (finishing.get(row) ?? 0) + 1);
    for (const [row, n] of finishing) {
      if (row.sealedAt !== null && row.callbackTaskId === null && row.remaining - n <= 0) this.ctx.burnTaskId();
    }
  }

  /** Called at every commit: counts the members this write set made terminal, then settles their batches. Never throws. */
  onCommit(ws: WriteSet): void {
    const touched = new Set<BatchRow>();
    for (const { id, state, row } of this.#finishedIn(ws)) {
      this.#memberOf.delete(id);
      row.remaining -= 1;
      if (state === TaskState.DONE) row.done += 1;
      else if (state === TaskState.DEAD) row.dead += 1;
      else row.cancelled += 1;
      touched.add(row);
    }
    for (const row of [...touched].sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))) this.#settle(row);
  }

  /** Sealed, no member left, no callback yet: schedules the callback task and records it (once). */
  #settle(row: BatchRow): void {
    if (row.sealedAt === null || row.remaining > 0 || row.callbackTaskId !== null) return;
    const cb = row.callback;
    const payload = batchCallbackPayload(cb, { id: row.id, total: row.total, done: row.done, dead: row.dead, cancelled: row.cancelled });
    // The callback's own retry policy as `schedule` gave it (null: none, so maxAttempts is not passed — it would make one).
    const attempts = cb.retry === undefined || cb.retry === null ? {} : { retry: cb.retry };
    const schedule = validateSchedule({ kind: cb.kind, payload, queue: cb.queue, priority: cb.priority, ...attempts, delayMs: cb.delayMs }, { maxPayloadBytes: Number.MAX_SAFE_INTEGER });
    // Recorded before the insert commits, so a commit inside it (its own onCommit) never settles this batch again.
    row.callbackTaskId = 'pending';
    const [scheduled] = this.ctx.insert([schedule]);
    row.callbackTaskId = scheduled?.id ?? null;
    row.calledBackAt = new Date(this.ctx.nowMs());
  }
}

function infoOf(row: BatchRow): BatchInfo {
  return {
    id: row.id,
    state: batchStateOf(row.sealedAt !== null, row.callbackTaskId),
    total: row.total,
    remaining: row.remaining,
    done: row.done,
    dead: row.dead,
    cancelled: row.cancelled,
    callback: structuredClone(row.callback),
    createdAt: new Date(row.createdAt),
    sealedAt: row.sealedAt === null ? null : new Date(row.sealedAt),
    callbackTaskId: row.callbackTaskId,
    calledBackAt: row.calledBackAt === null ? null : new Date(row.calledBackAt),
  };
}
