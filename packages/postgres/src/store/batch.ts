/**
 * Batches with a callback of `PostgresStore` (`createBatch`, `scheduleInBatch`, `sealBatch`,
 * `getBatch`; docs/contract.md#batches) over the statements of `../sql/batch-sql.ts` (migration 21).
 * The counting and the callback happen in the database, in the transaction of each member's terminal
 * transition (the trigger `task_finished`, migration 25; `task_batch_members_finished` before); this module only creates, fills, seals and
 * reads batches.
 */
import {
  type BatchCallback,
  BatchError,
  type BatchId,
  type BatchInfo,
  batchStateOf,
  type NormalizedBatchCallback,
  type NormalizedSchedule,
  parseTaskId,
  type ScheduledTask,
  type ScheduleInput,
  validateBatchParams,
  validateScheduleMany,
} from '@postpone/core';
import { type BatchStatements, batchStatements } from '../sql/batch-sql.js';
import type { Dialect } from '../sql/citus.js';
import { ms } from '../sql/sql.js';
import type { QueryFn, Row } from './driver.js';

export interface PostgresBatchContext {
  readonly schema: string;
  /** The workers' channel the callback's `scheduled` notice goes to (null: none). */
  readonly notifyChannel: string | null;
  readonly maxPayloadBytes: number;
  readonly nowMs: () => number;
  /** The store's clock as ISO text for a statement's `now` parameter, or null (the database clock). */
  readonly nowParam: () => string | null;
  readonly query: QueryFn;
  readonly transaction: <T>(work: (query: QueryFn) => Promise<T>) => Promise<T>;
  /** The store's schedule of `tasks` (`keep`) on `query`, inside the caller's transaction. */
  readonly insertIn: (query: QueryFn, tasks: readonly NormalizedSchedule[]) => Promise<ScheduledTask[]>;
  /** The store's dependency edges and holds for `tasks` with `after` (as `scheduleMany` writes them), on `query`, inside the caller's transaction. */
  readonly linkIn: (query: QueryFn, tasks: readonly NormalizedSchedule[], scheduled: readonly ScheduledTask[]) => Promise<void>;
  readonly call: <T>(op: () => Promise<T>) => Promise<T>;
  readonly assertOpen: () => void;
  readonly dialect: () => Promise<Dialect>;
}

export class PostgresBatches {
  readonly sql: BatchStatements;

  constructor(private readonly ctx: PostgresBatchContext) {
    this.sql = batchStatements(ctx.schema, ms);
  }

  /** @see BatchStore.createBatch */
  async createBatch(params: { readonly callback: BatchCallback }): Promise<BatchId> {
    this.ctx.assertOpen();
    const { callback } = validateBatchParams(params, { maxPayloadBytes: this.ctx.maxPayloadBytes, nowMs: this.ctx.nowMs() });
    return await this.ctx.call(async () => {
      await this.supported();
      const [row] = await this.ctx.query(this.sql.batchCreate, [JSON.stringify(callback), this.ctx.notifyChannel, this.ctx.nowParam()]);
      return String(row?.id);
    });
  }

  /** @see BatchStore.scheduleInBatch */
  async scheduleInBatch(batchId: BatchId, inputs: readonly ScheduleInput[]): Promise<ScheduledTask[]> {
    this.ctx.assertOpen();
    const id = parseTaskId(batchId, 'batchId');
    const tasks = validateScheduleMany(inputs, { maxPayloadBytes: this.ctx.maxPayloadBytes, nowMs: this.ctx.nowMs() });
    return await this.ctx.call(async () => {
      await this.supported();
      return await this.ctx.transaction(async (query) => {
        const [lock] = await query(this.sql.batchLock, [id]);
        if (lock === undefined) throw new BatchError('BATCH_NOT_FOUND', id, `batch ${id} does not exist: nothing was scheduled`);
        if (lock.sealed === true) throw new BatchError('BATCH_SEALED', id, `batch ${id} is sealed: nothing was scheduled`);
        const scheduled = tasks.length === 0 ? [] : await this.ctx.insertIn(query, tasks);
        const created = scheduled.filter((s) => s.created).map((s) => s.id);
        if (created.length > 0) await query(this.sql.batchJoin, [id, JSON.stringify(created)]);
        // Members with `after` wait for their dependencies as `scheduleMany`'s tasks do (they were
        // inserted without it until a fresh user's attempt found it): linked after they joined, so a
        // member cancelled at once (a dependency already DEAD or CANCELLED) is counted by the batch.
        await this.ctx.linkIn(query, tasks, scheduled);
        return scheduled;
      });
    });
  }

  /** @see BatchStore.sealBatch */
  async sealBatch(batchId: BatchId): Promise<BatchInfo> {
    this.ctx.assertOpen();
    const id = parseTaskId(batchId, 'batchId');
    return await this.ctx.call(async () => {
      await this.supported();
      return await this.ctx.transaction(async (query) => {
        const now = this.ctx.nowParam();
        const sealed = await query(this.sql.batchSeal, [id, now]);
        if (sealed.length === 0) throw new BatchError('BATCH_NOT_FOUND', id, `batch ${id} does not exist`);
        await query(this.sql.batchSettle, [id, now]);
        const [row] = await query(this.sql.batchGet, [id]);
        return batchInfoOf(row as Row);
      });
    });
  }

  /** @see BatchStore.getBatch */
  async getBatch(batchId: BatchId): Promise<BatchInfo | null> {
    this.ctx.assertOpen();
    const id = parseTaskId(batchId, 'batchId');
    return await this.ctx.call(async () => {
      await this.supported();
      const [row] = await this.ctx.query(this.sql.batchGet, [id]);
      return row === undefined ? null : batchInfoOf(row);
    });
  }

  /** Citus has no trigger on `task` (`../sql/citus.ts`), so no member would ever be counted. */
  private async supported(): Promise<void> {
    if ((await this.ctx.dialect()) === 'citus') {
      throw new BatchError('BATCHES_UNSUPPORTED', null, 'batches need the trigger task_finished, which Citus refuses on distributed tables (docs/contract.md#batches)');
    }
  }
}

function dateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : new Date(Number(value));
}

/** A `batchGet` row as {@link BatchInfo}. */
export function batchInfoOf(row: Row): BatchInfo {
  const callbackTaskId = row.callbacktaskid === null || row.callbacktaskid === undefined ? null : String(row.callbacktaskid);
  const sealedAt = dateOrNull(row.sealedms);
  return {
    id: String(row.id),
    state: batchStateOf(sealedAt !== null, callbackTaskId),
    total: Number(row.total),
    remaining: Number(row.remaining),
    done: Number(row.done),
    dead: Number(row.dead),
    cancelled: Number(row.cancelled),
    callback: JSON.parse(String(row.callback)) as NormalizedBatchCallback,
    createdAt: new Date(Number(row.createdms)),
    sealedAt,
    callbackTaskId,
    calledBackAt: dateOrNull(row.calledbackms),
  };
}
