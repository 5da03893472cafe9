/**
 * The store operations (list, retry, prune, stats) of `PostgresStore`, over the statements of
 * `@postpone/postgres` (`admin-sql.ts`). Inputs are checked by core first (`validateListParams`, …), so every store
 * refuses the same calls with the same `ValidationError`.
 */
import {
  encodeListCursor,
  type HistoryPartitionSkip,
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
import { type DedupStatements, dedupStatements } from '../sql/dedup-sql.js';
import { HISTORY_DAYS_AHEAD, HISTORY_STATES, type HistoryStatements, historyStateTable, historyStatements } from '../sql/history-sql.js';
import type { Driver, Param, Row } from './driver.js';
import { SqlState } from './errors.js';

/** SQLSTATE 55P03: a lock not granted within `lock_timeout` (PostgreSQL 17 Appendix A). */
const LOCK_NOT_AVAILABLE = '55P03';
/** SQLSTATE 42P07: the relation exists already (another maker was first, or a stranger's table). */
const DUPLICATE_TABLE = '42P07';
/** SQLSTATE 42P17: invalid object definition (a partition range overlapping another). */
const INVALID_OBJECT_DEFINITION = '42P17';

const DAY_MS = 86_400_000;
type HistoryState = 'DONE' | 'DEAD' | 'CANCELLED';

/** What one run of partition maintenance made and skipped (docs/contract.md#retention). */
export interface PartitionMaintenance {
  readonly created: number;
  readonly skipped: HistoryPartitionSkip[];
}

function sqlStateOfError(error: unknown): string | undefined {
  return (error as { sqlState?: string } | null)?.sqlState;
}

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
  /** The store's SQL dialect (`../sql/citus.ts`); absent means plain PostgreSQL. */
  readonly dialect?: () => Promise<import('../sql/citus.js').Dialect>;
}

export class PostgresAdmin {
  readonly sql: AdminStatements;
  readonly history: HistoryStatements;
  readonly dedup: DedupStatements;

  constructor(private readonly ctx: PostgresAdminContext) {
    this.sql = adminStatements(ctx.schema);
    this.history = historyStatements(ctx.schema);
    this.dedup = dedupStatements(ctx.schema);
  }

  /**
   * Deletes the throttle rows whose window has reopened (docs/contract.md#dedup-keys), one statement.
   * On a schema before migration 16 there is no throttle table (42P01): nothing to delete.
   */
  private async pruneThrottle(): Promise<{ throttleRowsDeleted?: number }> {
    try {
      const [row] = await this.ctx.call(() => this.ctx.driver.query(this.dedup.throttlePrune, [this.ctx.nowParam()]));
      const n = Number(row?.deleted ?? 0);
      return n > 0 ? { throttleRowsDeleted: n } : {};
    } catch (error) {
      if (sqlStateOfError(error) === '42P01') return {};
      throw error;
    }
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
    return { deleted, effectsDeleted, batches, ...(await this.pruneThrottle()) };
  }

  /**
   * The day partitions of history from the store's now through `daysAhead` more days, missing ones
   * only. @returns how many it created (see {@link maintainPartitions} for what it skipped)
   */
  async ensureHistoryPartitions(daysAhead = HISTORY_DAYS_AHEAD): Promise<number> {
    return (await this.maintainPartitions(daysAhead)).created;
  }

  /**
   * Partition maintenance ahead (docs/contract.md#retention): for each state, the day partitions
   * from the store's UTC day through `daysAhead` more, each made in its own short transaction
   * (`lock_timeout` 2 s, the advisory lock of `ensure_history_partitions`) by CREATE then ATTACH,
   * so finishing statements never wait for it. Never throws for a day it cannot make: the day is
   * reported instead, with every day whose rows sit in a DEFAULT partition, at every run.
   */
  async maintainPartitions(daysAhead = HISTORY_DAYS_AHEAD): Promise<PartitionMaintenance> {
    this.ctx.assertOpen();
    // Citus: each state's history table is not partitioned by day (`../sql/citus.ts`), nothing to make.
    if (await this.isCitus()) return { created: 0, skipped: [] };
    const nowMs = await this.nowMs();
    const today = Math.floor(nowMs / DAY_MS) * DAY_MS;
    const skipped: HistoryPartitionSkip[] = [];
    const wanted: { state: HistoryState; leaf: string; from: number; day: string }[] = [];
    for (const state of HISTORY_STATES) {
      for (let i = 0; i <= daysAhead; i++) {
        const from = today + i * DAY_MS;
        const day = new Date(from).toISOString().slice(0, 10);
        wanted.push({ state, leaf: `${historyStateTable(state)}_${day.replaceAll('-', '')}`, from, day });
      }
    }
    const catalog = new Map(
      (await this.ctx.call(() => this.ctx.driver.query(this.history.partitionCatalog, [JSON.stringify(wanted.map((w) => w.leaf))]))).map((r) => [String(r.name), r]),
    );
    let created = 0;
    for (const state of HISTORY_STATES) {
      const inDefault = new Set((await this.ctx.call(() => this.ctx.driver.query(this.history.defaultDays(state)))).map((r) => String(r.day)));
      for (const day of [...inDefault].sort()) {
        skipped.push({
          action: 'create',
          state,
          partition: `${historyStateTable(state)}_${day.replaceAll('-', '')}`,
          day,
          reason: 'ROWS_IN_DEFAULT',
          detail: `no partition for ${day}: its ${state} rows sit in ${historyStateTable(state)}_default (deleted by row at retention)`,
        });
      }
      for (const w of wanted.filter((x) => x.state === state)) {
        if (inDefault.has(w.day)) continue;
        const row = catalog.get(w.leaf);
        if (row !== undefined) {
          const ours = row.parent === historyStateTable(state) && Number(row.lowerms) === w.from && Number(row.upperms) === w.from + DAY_MS;
          if (!ours) skipped.push(this.nameTaken(w, row));
          continue;
        }
        const outcome = await this.createDay(w.state, w.leaf, w.from);
        if (outcome === 'created') created += 1;
        else if (outcome === 'exists') continue;
        else if (outcome === 'NAME_TAKEN') skipped.push(this.nameTaken(w, null));
        else
          skipped.push({
            action: 'create',
            state,
            partition: w.leaf,
            day: w.day,
            reason: outcome,
            detail:
              outcome === 'OVERLAP'
                ? `${w.leaf} not made: another partition of ${historyStateTable(state)} covers part of ${w.day}`
                : outcome === 'ROWS_IN_DEFAULT'
                  ? `no partition for ${w.day}: its ${state} rows sit in ${historyStateTable(state)}_default (deleted by row at retention)`
                  : `${w.leaf} not made: a lock was not granted within 2 s; the next prune tries again`,
          });
      }
    }
    return { created, skipped };
  }

  /** True in the Citus dialect. */
  private async isCitus(): Promise<boolean> {
    return this.ctx.dialect !== undefined && (await this.ctx.call(() => this.ctx.dialect?.() ?? Promise.resolve('postgres'))) === 'citus';
  }

  /**
   * Retention in the Citus dialect: each state's history table holds every day (no day partitions,
   * `../sql/citus.ts`), so its rows past retention are deleted by row, with their legacy effect rows,
   * one statement per state — what PostgreSQL does for a DEFAULT partition. No partition is made or dropped.
   */
  private async pruneByRowsCitus(retention: Readonly<Partial<Record<HistoryState, number>>>): Promise<PruneResult> {
    const nowMs = await this.nowMs();
    let deleted = 0;
    let effectsDeleted = 0;
    let batches = 0;
    for (const state of HISTORY_STATES) {
      const keepMs = retention[state];
      if (keepMs === undefined) continue;
      this.ctx.assertOpen();
      const [row] = await this.ctx.call(() => this.ctx.driver.query(this.history.pruneDefault(historyStateTable(state)), [new Date(nowMs - keepMs).toISOString()]));
      batches += 1;
      deleted += Number(row?.deleted ?? 0);
      effectsDeleted += Number(row?.effectsdeleted ?? 0);
    }
    return { deleted, effectsDeleted, batches, partitionsDropped: 0, partitionsCreated: 0, partitionsSkipped: [] };
  }

  private nameTaken(w: { state: HistoryState; leaf: string; day: string }, row: Row | null): HistoryPartitionSkip {
    const what =
      row === null
        ? 'exists'
        : row.parent === null || row.parent === undefined
          ? `is a relation (relkind ${String(row.relkind)}) that is not a partition`
          : row.parent !== historyStateTable(w.state)
            ? `is a partition of ${String(row.parent)}`
            : `is a partition of another range (${row.lowerms === null ? 'minvalue' : new Date(Number(row.lowerms)).toISOString()} to ${row.upperms === null ? 'maxvalue' : new Date(Number(row.upperms)).toISOString()})`;
    return {
      action: 'create',
      state: w.state,
      partition: w.leaf,
      day: w.day,
      reason: 'NAME_TAKEN',
      detail: `${w.leaf} ${what}: left alone; ${w.day}'s ${w.state} rows go to the default partition unless another partition covers the day`,
    };
  }

  /** One day partition in its own transaction. */
  private async createDay(state: HistoryState, leaf: string, from: number): Promise<'created' | 'exists' | 'NAME_TAKEN' | 'OVERLAP' | 'LOCK_TIMEOUT' | 'ROWS_IN_DEFAULT'> {
    const [create, attach] = this.history.createDay(state, leaf, new Date(from).toISOString(), new Date(from + DAY_MS).toISOString());
    try {
      return await this.ctx.call(() =>
        this.ctx.driver.transaction(async (query) => {
          await query(this.history.retentionLockTimeout);
          await query(this.history.partitionsLock);
          // Another maker (or migrate) may have been first while we waited for the lock.
          const [again] = await query(this.history.partitionCatalog, [JSON.stringify([leaf])]);
          if (again !== undefined) return again.parent === historyStateTable(state) && Number(again.lowerms) === from ? 'exists' : 'NAME_TAKEN';
          await query(create as string);
          await query(attach as string);
          return 'created';
        }),
      );
    } catch (error) {
      const code = sqlStateOfError(error);
      if (code === LOCK_NOT_AVAILABLE) return 'LOCK_TIMEOUT';
      if (code === DUPLICATE_TABLE) return 'NAME_TAKEN';
      if (code === INVALID_OBJECT_DEFINITION) return 'OVERLAP';
      if (code === SqlState.CHECK_VIOLATION) return 'ROWS_IN_DEFAULT';
      throw error;
    }
  }

  private async nowMs(): Promise<number> {
    const [clock] = await this.ctx.call(() => this.ctx.driver.query(`select floor(extract(epoch from coalesce($1::timestamptz, now())) * 1000)::float8 as nowms`, [this.ctx.nowParam()]));
    return Number(clock?.nowms);
  }

  /**
   * Retention (docs/contract.md#retention): partition maintenance first ({@link maintainPartitions});
   * then every leaf partition of a state with a retention whose upper bound is at or before now −
   * retention (every row in it is past retention) is dropped with its legacy effect rows (written before migration 13), one short
   * transaction each: the partition's own lock first (lock_timeout 2 s; a reader of that partition
   * delays only readers of it, never an insert), then the state's table's for the DROP (200 ms, the
   * instant in-flight inserts take). A partition whose lock is not granted is reported and left for
   * the next prune. Last, the DEFAULT partitions' rows past retention are deleted by row.
   */
  private async pruneByRetention(retention: Readonly<Partial<Record<HistoryState, number>>>): Promise<PruneResult> {
    if (await this.isCitus()) return await this.pruneByRowsCitus(retention);
    const maintenance = await this.maintainPartitions();
    const skipped = [...maintenance.skipped];
    const nowMs = await this.nowMs();
    const leaves = await this.ctx.call(() => this.ctx.driver.query(this.history.historyPartitions));
    let deleted = 0;
    let effectsDeleted = 0;
    let batches = 0;
    let partitionsDropped = 0;
    for (const leaf of leaves) {
      this.ctx.assertOpen();
      const state = String(leaf.state) as HistoryState;
      const keepMs = retention[state];
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
            await query(this.history.lockPartition(name));
            await query(this.history.parentLockTimeout);
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
        // Another prune dropped it first: nothing to report. Lock not granted in time: reported, left for the next prune.
        const code = sqlStateOfError(error);
        if (code === SqlState.UNDEFINED_TABLE) continue;
        if (code !== LOCK_NOT_AVAILABLE) throw error;
        const upper = Number(leaf.upperms);
        const day = /_(\d{4})(\d{2})(\d{2})$/.exec(name);
        skipped.push({
          action: 'drop',
          state,
          partition: name,
          day: day === null ? null : `${day[1]}-${day[2]}-${day[3]}`,
          reason: 'LOCK_TIMEOUT',
          detail: `${name} (up to ${new Date(upper).toISOString()}) past retention, not dropped: a session holds it (lock not granted in time); the next prune tries again`,
        });
      }
    }
    return { deleted, effectsDeleted, batches, partitionsDropped, partitionsCreated: maintenance.created, partitionsSkipped: skipped, ...(await this.pruneThrottle()) };
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
