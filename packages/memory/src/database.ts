/**
 * The in-memory database: committed rows (tasks, completions of DONE tasks, the caller's own tables) and write sets
 * that stage one transaction's writes and apply them all at once on commit.
 *
 * Visibility follows PostgreSQL READ COMMITTED (PostgreSQL 17 §13.2.1): a read outside a
 * transaction sees committed rows only; a write set sees committed rows plus its own writes.
 * Constraints are checked when a write is staged (statement time) and again at commit.
 */
import { type Completion, isTerminal, type Task, type TaskId, TaskState } from '@postpone/core';
import { MemoryDependencies, type StagedDependency } from './dependencies.js';
import { checkViolation, LEASE_CHECK, leaseCheckHolds, serializationFailure, transactionFinished, uniqueViolation } from './constraints.js';

interface StagedRow {
  readonly value: unknown;
  /** True for an INSERT (the key must still be free at commit), false for an UPDATE. */
  readonly inserted: boolean;
}

type WriteSetStatus = 'open' | 'committed' | 'rolled back';

/** A row of the throttle table `dedup_throttle` (migration 16, docs/contract.md#dedup-keys), keyed by (kind, key). */
export interface ThrottleRow {
  /** Epoch ms until which a throttle schedule of the key creates nothing. */
  readonly closedUntilMs: number;
  /** The last task the throttle let through, and its due time as created. */
  readonly taskId: TaskId;
  readonly dueAtMs: number;
}

/** One transaction's staged writes. Made by {@link MemoryDatabase.begin}. */
export class WriteSet {
  readonly tasks = new Map<TaskId, Task>();
  /** What the DONE row of `task_history` keeps of its completion (the worker), staged with the DONE. */
  readonly completions = new Map<TaskId, Completion>();
  readonly rows = new Map<string, Map<string, StagedRow>>();
  /** The committed version of each task this transaction wrote, as first read (undefined for a new one). */
  readonly based = new Map<TaskId, Task | undefined>();
  /** Tasks this transaction deletes at commit (DONE not kept): their last row stays in {@link tasks} until then. */
  readonly dropped = new Set<TaskId>();
  /** Staged throttle rows, with the committed row each was based on (first committer wins at commit). */
  readonly throttle = new Map<string, { readonly row: ThrottleRow; readonly based: ThrottleRow | undefined }>();
  /** Dependency edges staged by a schedule with `after` (docs/contract.md#dependencies), linked at commit. */
  readonly dependencies: StagedDependency[] = [];
  /** Limit keys of the tasks this transaction creates (docs/contract.md#per-key-concurrency), written with them at commit. */
  readonly limitKeys = new Map<TaskId, string>();
  #status: WriteSetStatus = 'open';

  constructor(readonly db: MemoryDatabase) {}

  get status(): WriteSetStatus {
    return this.#status;
  }

  /** @throws StoreError 25000 when the transaction already ended. */
  assertOpen(): void {
    if (this.#status !== 'open') throw transactionFinished(this.#status);
  }

  /** Stages an INSERT or UPDATE of a full task row. @throws StoreError 23514 (lease CHECK) */
  putTask(task: Task): void {
    this.assertOpen();
    if (!leaseCheckHolds(task)) throw checkViolation('task', LEASE_CHECK);
    if (!this.based.has(task.id)) this.based.set(task.id, this.db.tasks.get(task.id));
    this.tasks.set(task.id, task);
  }

  /**
   * Stages the DELETE of a task (DONE not kept, docs/contract.md#done-not-kept): `task` is its row as
   * finished (terminal, so it frees its dedup key within this transaction); at commit the row is
   * removed, leaving no trace. @throws StoreError 23514 (lease CHECK)
   */
  dropTask(task: Task): void {
    this.putTask(task);
    this.dropped.add(task.id);
  }

  /** Stages the limit key of a task this transaction inserts (the column `task.limit_key`, set by the insert). */
  putLimitKey(id: TaskId, limitKey: string): void {
    this.assertOpen();
    this.limitKeys.set(id, limitKey);
  }

  /** The task as this transaction sees it (its own writes first; null when it deleted it or there is none). */
  getTask(id: TaskId): Task | null {
    if (this.dropped.has(id)) return null;
    return this.tasks.get(id) ?? this.db.tasks.get(id) ?? null;
  }

  /**
   * The SCHEDULED or CLAIMED task holding (kind, key) as this transaction sees it (its own writes
   * first), or undefined: a lookup in the partial unique index `task_key_idx`.
   */
  liveByKey(kind: string, key: string): Task | undefined {
    const slot = `${kind}\u0000${key}`;
    for (const task of this.tasks.values()) if (keySlot(task) === slot && !isTerminal(task.state)) return task;
    const id = this.db.liveKeys.get(slot);
    const task = id === undefined ? undefined : (this.tasks.get(id) ?? this.db.tasks.get(id));
    return task !== undefined && !isTerminal(task.state) && keySlot(task) === slot ? task : undefined;
  }

  /** The throttle row of (kind, key) as this transaction sees it, or undefined. */
  getThrottle(kind: string, key: string): ThrottleRow | undefined {
    const slot = `${kind}\u0000${key}`;
    return this.throttle.get(slot)?.row ?? this.db.throttle.get(slot);
  }

  /** Stages the throttle row of (kind, key). */
  putThrottle(kind: string, key: string, row: ThrottleRow): void {
    this.assertOpen();
    const slot = `${kind}\u0000${key}`;
    const based = this.throttle.has(slot) ? this.throttle.get(slot)?.based : this.db.throttle.get(slot);
    this.throttle.set(slot, { row, based });
  }

  /** Stages the completion of a task this write set moves to DONE (kept): the history row's worker and finish time. */
  recordCompletion(completion: Completion): void {
    this.assertOpen();
    this.completions.set(completion.taskId, completion);
  }

  /** Stages an INSERT into a caller table. @throws StoreError 23505 when the key exists */
  insertRow(table: string, key: string, value: unknown): void {
    this.assertOpen();
    if (this.getRow(table, key) !== undefined) throw uniqueViolation(table, `key=${key}`);
    this.#stage(table).set(key, { value: structuredClone(value), inserted: true });
  }

  /** Stages an UPDATE of a caller row; false (nothing staged) when there is no such row. */
  updateRow(table: string, key: string, value: unknown): boolean {
    this.assertOpen();
    const staged = this.rows.get(table)?.get(key);
    if (staged === undefined && !(this.db.tables.get(table)?.has(key) ?? false)) return false;
    this.#stage(table).set(key, { value: structuredClone(value), inserted: staged?.inserted ?? false });
    return true;
  }

  /** Reads a caller row as this transaction sees it (its own writes first), or undefined. */
  getRow(table: string, key: string): unknown {
    const staged = this.rows.get(table)?.get(key);
    const value = staged !== undefined ? staged.value : this.db.tables.get(table)?.get(key);
    return value === undefined ? undefined : structuredClone(value);
  }

  /** Marks the transaction ended; its writes are dropped unless `status` is 'committed'. */
  end(status: Exclude<WriteSetStatus, 'open'>): void {
    this.#status = status;
  }

  #stage(table: string): Map<string, StagedRow> {
    let rows = this.rows.get(table);
    if (rows === undefined) this.rows.set(table, (rows = new Map()));
    return rows;
  }
}

/** A task's entry in the dedup-key index, or undefined without a key (a kind holds no `\u0000`, so the text is unique). */
function keySlot(task: Pick<Task, 'kind' | 'key'>): string | undefined {
  return task.key === null || task.key === undefined ? undefined : `${task.kind}\u0000${task.key}`;
}

/** Committed state plus the task id sequence. */
export class MemoryDatabase {
  readonly tasks = new Map<TaskId, Task>();
  /** The partial unique index `task_key_idx` of docs/contract.md#dedup-keys: (kind, key) → the SCHEDULED or CLAIMED task holding it. */
  readonly liveKeys = new Map<string, TaskId>();
  /** The completion of each DONE task kept (`getCompletion`); deleted with the task by prune. */
  readonly completions = new Map<TaskId, Completion>();
  readonly tables = new Map<string, Map<string, unknown>>();
  /** The throttle table: `kind \u0000 key` → its row (docs/contract.md#dedup-keys). */
  readonly throttle = new Map<string, ThrottleRow>();
  /** Dependency edges and held dependents (docs/contract.md#dependencies). */
  readonly dependencies = new MemoryDependencies();
  /**
   * The column `task.limit_key` of live tasks (docs/contract.md#per-key-concurrency): task id → its
   * limit key, for SCHEDULED and CLAIMED tasks scheduled with one (core `Task` has no such field).
   * Written by the commit that inserts the task; an entry leaves when its task does — made terminal
   * (DONE, DEAD, CANCELLED: history does not keep the key) or deleted — so its size is the number of
   * live keyed tasks. See {@link forgetTask} for deletes outside a write set.
   */
  readonly limitKeys = new Map<TaskId, string>();
  /** Called after every commit with its write set (the store's `waitFor` callers learn of finished tasks); must not throw. */
  onCommit: ((ws: WriteSet) => void) | undefined;
  /** Called after a write set that was still open rolls back; must not throw. */
  onRollback: ((ws: WriteSet) => void) | undefined;
  /** A bigint, as PostgreSQL's identity column: a `number` would stop being exact past 2⁵³ (ids would repeat). */
  #lastId = 0n;

  /** Like a PostgreSQL sequence: ids are never reused, even when the transaction rolls back. */
  nextTaskId(): TaskId {
    this.#lastId += 1n;
    return this.#lastId.toString();
  }

  /**
   * Test seam: the next id is `next` (decimal text of a positive bigint), as `alter table task alter
   * column id restart with next` does in PostgreSQL. Ids already given are not checked against it.
   */
  restartTaskIds(next: TaskId): void {
    this.#lastId = BigInt(next) - 1n;
  }

  /** A task deleted outside a write set (an admin delete): its live-set entries go with it. */
  forgetTask(id: TaskId): void {
    this.limitKeys.delete(id);
  }

  begin(): WriteSet {
    return new WriteSet(this);
  }

  /**
   * Applies every staged write at once, or none: constraints are re-checked first against what
   * committed meanwhile. A failed commit rolls the write set back.
   * @throws StoreError 23505 / 23514 / 25000
   */
  commit(ws: WriteSet): void {
    ws.assertOpen();
    try {
      for (const task of ws.tasks.values()) if (!leaseCheckHolds(task)) throw checkViolation('task', LEASE_CHECK);
      // First committer wins: a task another transaction changed since this one read it is not overwritten.
      for (const [id, based] of ws.based) if (this.tasks.get(id) !== based) throw serializationFailure(id);
      for (const task of ws.tasks.values()) {
        const slot = keySlot(task);
        const holder = slot === undefined || isTerminal(task.state) ? undefined : this.liveKeys.get(slot);
        const held = holder === undefined || holder === task.id ? undefined : (ws.tasks.get(holder) ?? this.tasks.get(holder));
        // A holder this transaction took the key from (debounce) no longer holds it.
        if (held !== undefined && !isTerminal(held.state) && keySlot(held) === slot) throw uniqueViolation('task', `kind, key=${task.kind}, ${task.key}`, 'task_key_idx');
      }
      // The PostgreSQL store locks the throttle row until commit; here another transaction that wrote it first wins.
      for (const [slot, staged] of ws.throttle) if (this.throttle.get(slot) !== staged.based) throw serializationFailure(`throttle ${slot.replace('\u0000', ', ')}`);
      for (const [table, rows] of ws.rows) {
        const committed = this.tables.get(table);
        for (const [key, row] of rows) if (row.inserted && committed?.has(key)) throw uniqueViolation(table, `key=${key}`);
      }
    } catch (error) {
      ws.end('rolled back');
      throw error;
    }
    // Tasks this commit makes terminal (docs/contract.md#dependencies): their dependents are released below.
    const finished = [...ws.tasks.values()].filter((t) => isTerminal(t.state) && !isTerminal(ws.based.get(t.id)?.state ?? TaskState.SCHEDULED));
    for (const task of ws.tasks.values()) {
      const slot = keySlot(task);
      if (ws.dropped.has(task.id)) {
        this.tasks.delete(task.id);
        if (slot !== undefined && this.liveKeys.get(slot) === task.id) this.liveKeys.delete(slot);
        continue;
      }
      const before = keySlot(this.tasks.get(task.id) ?? task);
      if (before !== undefined && before !== slot && this.liveKeys.get(before) === task.id) this.liveKeys.delete(before);
      this.tasks.set(task.id, task);
      if (slot !== undefined && !isTerminal(task.state)) this.liveKeys.set(slot, task.id);
      else if (slot !== undefined && this.liveKeys.get(slot) === task.id) this.liveKeys.delete(slot);
    }
    if (finished.length > 0 || ws.dependencies.length > 0) {
      for (const task of this.dependencies.afterCommit(this.tasks, ws.dependencies, finished)) ws.tasks.set(task.id, task);
    }
    for (const [id, limitKey] of ws.limitKeys) this.limitKeys.set(id, limitKey);
    // Tasks this commit made terminal or deleted (dependents cancelled above included) leave the live set.
    for (const task of ws.tasks.values()) if (ws.dropped.has(task.id) || isTerminal(task.state)) this.limitKeys.delete(task.id);
    for (const completion of ws.completions.values()) this.completions.set(completion.taskId, completion);
    for (const [slot, staged] of ws.throttle) this.throttle.set(slot, staged.row);
    for (const [table, rows] of ws.rows) {
      let committed = this.tables.get(table);
      if (committed === undefined) this.tables.set(table, (committed = new Map()));
      for (const [key, row] of rows) committed.set(key, row.value);
    }
    ws.end('committed');
    this.onCommit?.(ws);
  }

  rollback(ws: WriteSet): void {
    if (ws.status !== 'open') return;
    ws.end('rolled back');
    this.onRollback?.(ws);
  }
}
