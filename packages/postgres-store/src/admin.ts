/**
 * The store operations (list, retry, prune, stats) of `PostgresStore`, over the statements of
 * `@postpone/postgres-sql` (`admin-sql.ts`). Inputs are checked by core first (`validateListParams`, …), so every store
 * refuses the same calls with the same `ValidationError`.
 */
import {
  encodeListCursor,
  type ListTasksParams,
  type PruneParams,
  type PruneResult,
  type RetryParams,
  type RetryResult,
  type StoreStats,
  storeStats,
  type TaskPage,
  type TaskRecord,
  type TaskState,
  validateListParams,
  validatePruneParams,
  validateRetryParams,
} from '@postpone/core';
import { type AdminStatements, adminStatements } from '@postpone/postgres-sql';
import type { Driver, Param, Row } from './driver.js';

/** What the store lends its operations: its driver, clock parameter and error translation. */
export interface PostgresAdminContext {
  readonly driver: Driver<unknown>;
  readonly schema: string;
  readonly notifyChannel: string;
  /** `$1` of time-dependent statements: the injected clock's time as ISO text, or null (database clock). */
  readonly nowParam: () => string | null;
  /** Runs `op`, translating driver errors into Postpone's typed errors. */
  readonly call: <T>(op: () => Promise<T>) => Promise<T>;
  readonly assertOpen: () => void;
  /** Maps a row of `taskColumns` to a Task. */
  readonly toTask: (row: Row) => import('@postpone/core').Task;
}

export class PostgresAdmin {
  readonly sql: AdminStatements;

  constructor(private readonly ctx: PostgresAdminContext) {
    this.sql = adminStatements(ctx.schema);
  }

  async listTasks(params: ListTasksParams = {}): Promise<TaskPage> {
    this.ctx.assertOpen();
    const p = validateListParams(params);
    const args: Param[] = [
      p.states === null ? null : JSON.stringify(p.states),
      p.kinds === null ? null : JSON.stringify(p.kinds),
      p.dueFrom?.toISOString() ?? null,
      p.dueBefore?.toISOString() ?? null,
      p.hasError,
      p.limit + 1,
      p.cursorId,
    ];
    const statement =
      p.kinds === null ? (p.order === 'newest' ? this.sql.listNewest : this.sql.listOldest) : p.order === 'newest' ? this.sql.listNewestByKind : this.sql.listOldestByKind;
    const rows = await this.ctx.call(() => this.ctx.driver.query(statement, args));
    const tasks = rows.slice(0, p.limit).map((r) => this.record(r));
    const last = tasks.at(-1);
    return { tasks, nextCursor: rows.length > p.limit && last !== undefined ? encodeListCursor(p.order, last.id) : null };
  }

  async getRecord(id: string): Promise<TaskRecord | null> {
    const [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.taskGetRecord, [id]));
    return row ? this.record(row) : null;
  }

  async retry(params: RetryParams): Promise<RetryResult> {
    this.ctx.assertOpen();
    const p = validateRetryParams(params);
    const args: Param[] = [this.ctx.nowParam(), p.id, p.delayMs, p.runAt?.toISOString() ?? null, p.maxAttempts, this.ctx.notifyChannel];
    const [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.taskRetry, args));
    if (!row) return { outcome: 'NOT_FOUND' };
    if (row.newid !== null && row.newid !== undefined) return { outcome: 'RETRIED', id: String(row.newid), dueAt: new Date(Number(row.dueatms)) };
    if (row.retriedas !== null && row.retriedas !== undefined) return { outcome: 'ALREADY_RETRIED', id: String(row.retriedas) };
    return { outcome: 'NOT_RETRYABLE', state: row.state as TaskState };
  }

  async prune(params: PruneParams): Promise<PruneResult> {
    this.ctx.assertOpen();
    const p = validatePruneParams(params);
    let cutOff = p.before;
    if (cutOff === null) {
      const [row] = await this.ctx.call(() => this.ctx.driver.query(`select floor(extract(epoch from coalesce($1::timestamptz, now())) * 1000)::float8 as nowms`, [this.ctx.nowParam()]));
      cutOff = new Date(Number(row?.nowms) - (p.olderThanMs as number));
    }
    const cut = cutOff.toISOString();
    let deleted = 0;
    let effectsDeleted = 0;
    let batches = 0;
    for (;;) {
      this.ctx.assertOpen();
      const [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.pruneBatch, [cut, p.batchSize]));
      batches += 1;
      const n = Number(row?.deleted ?? 0);
      deleted += n;
      effectsDeleted += Number(row?.effectsdeleted ?? 0);
      if (n < p.batchSize) break;
    }
    return { deleted, effectsDeleted, batches };
  }

  async stats(): Promise<StoreStats> {
    this.ctx.assertOpen();
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.stats, [this.ctx.nowParam()]));
    const nowMs = Number(rows[0]?.nowms);
    const oldest = rows[0]?.oldestdueatms;
    const groups = rows
      .filter((r) => r.state !== null && r.state !== undefined)
      .map((r) => ({ kind: String(r.kind), state: r.state as TaskState, n: Number(r.n), due: Number(r.due ?? 0) }));
    return storeStats(nowMs, groups, oldest === null || oldest === undefined ? null : Number(oldest));
  }

  private record(row: Row): TaskRecord {
    return {
      ...this.ctx.toTask(row),
      retryOf: row.retryof === null || row.retryof === undefined ? null : String(row.retryof),
      retriedAs: row.retriedas === null || row.retriedas === undefined ? null : String(row.retriedas),
    };
  }
}
