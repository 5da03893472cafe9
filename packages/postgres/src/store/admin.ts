/**
 * The store operations (list, retry, prune, stats) of `PostgresStore`, over the statements of
 * `@postpone/postgres` (`admin-sql.ts`). Inputs are checked by core first (`validateListParams`, …), so every store
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
  type UnclaimedKinds,
  type UnclaimedKindsParams,
  validateListParams,
  validatePruneParams,
  validateRetryParams,
  validateUnclaimedKindsParams,
} from '@postpone/core';
import { type AdminStatements, adminStatements } from '../sql/admin-sql.js';
import { HISTORY_DAYS_AHEAD, type HistoryStatements, historyStatements } from '../sql/history-sql.js';
import { SqlState } from './errors.js';

/** SQLSTATE 55P03: a lock not granted within `lock_timeout` (PostgreSQL 17 Appendix A). */
const LOCK_NOT_AVAILABLE = '55P03';
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
  readonly history: HistoryStatements;

  constructor(private readonly ctx: PostgresAdminContext) {
    this.sql = adminStatements(ctx.schema);
    this.history = historyStatements(ctx.schema);
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
      p.queue,
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
    let [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.taskRetry, args));
    // A task that moved to history while the statement ran is in neither table for it (its snapshot
    // predates the move; its lock found the live row deleted): one more statement sees it.
    if (!row) [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.taskRetry, args));
    if (!row) return { outcome: 'NOT_FOUND' };
    if (row.newid !== null && row.newid !== undefined) return { outcome: 'RETRIED', id: String(row.newid), dueAt: new Date(Number(row.dueatms)) };
    if (row.retriedas !== null && row.retriedas !== undefined) return { outcome: 'ALREADY_RETRIED', id: String(row.retriedas) };
    return { outcome: 'NOT_RETRYABLE', state: row.state as TaskState };
  }

  async prune(params: PruneParams): Promise<PruneResult> {
    this.ctx.assertOpen();
    const p = validatePruneParams(params);
    if (p.retention !== null) return await this.pruneByRetention(p.retention);
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

  /**
   * The day partitions of history from the store's now through `daysAhead` more days, missing ones
   * only (migration 11's `ensure_history_partitions`). @returns how many it created
   */
  async ensureHistoryPartitions(daysAhead = HISTORY_DAYS_AHEAD): Promise<number> {
    this.ctx.assertOpen();
    const [row] = await this.ctx.call(() => this.ctx.driver.query(this.history.ensurePartitions, [this.ctx.nowParam(), daysAhead]));
    return Number(row?.created ?? 0);
  }

  /**
   * Retention (docs/contract.md#retention): partitions are created ahead first; then every leaf
   * partition of a state with a retention whose upper bound is at or before now − retention (every
   * row in it is past retention) is dropped with its effect rows, one short transaction each
   * (lock_timeout 2 s: a partition whose lock is not granted in time is left for the next prune);
   * last, the DEFAULT partitions' rows past retention are deleted by row.
   */
  private async pruneByRetention(retention: Readonly<Partial<Record<'DONE' | 'DEAD' | 'CANCELLED', number>>>): Promise<PruneResult> {
    await this.ensureHistoryPartitions();
    const [clock] = await this.ctx.call(() => this.ctx.driver.query(`select floor(extract(epoch from coalesce($1::timestamptz, now())) * 1000)::float8 as nowms`, [this.ctx.nowParam()]));
    const nowMs = Number(clock?.nowms);
    const leaves = await this.ctx.call(() => this.ctx.driver.query(this.history.historyPartitions));
    let deleted = 0;
    let effectsDeleted = 0;
    let batches = 0;
    let partitionsDropped = 0;
    for (const leaf of leaves) {
      this.ctx.assertOpen();
      const keepMs = retention[String(leaf.state) as 'DONE' | 'DEAD' | 'CANCELLED'];
      if (keepMs === undefined) continue;
      const cutMs = nowMs - keepMs;
      const name = String(leaf.name);
      if (leaf.upperms === null || leaf.upperms === undefined) {
        const [row] = await this.ctx.call(() => this.ctx.driver.query(this.history.pruneDefault(name), [new Date(cutMs).toISOString()]));
        batches += 1;
        deleted += Number(row?.deleted ?? 0);
        effectsDeleted += Number(row?.effectsdeleted ?? 0);
        continue;
      }
      if (Number(leaf.upperms) > cutMs) continue;
      try {
        const counts = await this.ctx.call(() =>
          this.ctx.driver.transaction(async (query) => {
            await query(this.history.retentionLockTimeout);
            const [n] = await query(this.history.dropPartitionEffects(name));
            await query(this.history.dropPartition(name));
            return { rows: Number(n?.rows ?? 0), effects: Number(n?.effects ?? 0) };
          }),
        );
        batches += 1;
        partitionsDropped += 1;
        deleted += counts.rows;
        effectsDeleted += counts.effects;
      } catch (error) {
        // Lock not granted in time, or another prune dropped it first: left for the next prune.
        const code = (error as { sqlState?: string }).sqlState;
        if (code !== LOCK_NOT_AVAILABLE && code !== SqlState.UNDEFINED_TABLE) throw error;
      }
    }
    return { deleted, effectsDeleted, batches, partitionsDropped };
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

  /** Kinds nobody claims: one statement, `unclaimedKinds` of `admin-sql.ts`. */
  async unclaimedKinds(params: UnclaimedKindsParams): Promise<UnclaimedKinds> {
    this.ctx.assertOpen();
    const p = validateUnclaimedKindsParams(params);
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.unclaimedKinds, [this.ctx.nowParam(), p.dueForMs, p.queue, p.limit]));
    const nowMs = Number(rows[0]?.nowms);
    const kinds = rows
      .filter((r) => r.kind !== null && r.kind !== undefined)
      .map((r) => ({ queue: String(r.queue), kind: String(r.kind), due: Number(r.due ?? 0), oldestDueAt: new Date(Number(r.oldestdueatms)), overdueMs: nowMs - Number(r.oldestdueatms) }));
    return { now: new Date(nowMs), dueForMs: p.dueForMs, kinds };
  }

  private record(row: Row): TaskRecord {
    return {
      ...this.ctx.toTask(row),
      retryOf: row.retryof === null || row.retryof === undefined ? null : String(row.retryof),
      retriedAs: row.retriedas === null || row.retriedas === undefined ? null : String(row.retriedas),
    };
  }
}
