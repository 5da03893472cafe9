/**
 * The bulk operations of the in-memory store (`cancelMany`, `retryMany`, `rescheduleMany`,
 * `deleteMany`, docs/contract.md#bulk-operations): the same contract as the PostgreSQL store, over
 * the committed rows. Each task goes through the single-task operation (`cancel` through core
 * `transition`, `retry`) or a write under the task's lock; a filter is re-checked on the row under
 * that lock, as the SQL re-checks it on the locked row version. Between batches other calls run.
 */
import {
  BULK_OUTCOMES,
  bulkActOutcome,
  type BulkFilter,
  type BulkOperation,
  type BulkOptions,
  type CancelManyResult,
  type CancelOutcome,
  type DeleteManyResult,
  emptyBulkCounts,
  type NormalizedBulkFilter,
  type NormalizedBulkOptions,
  type RescheduleManyOptions,
  type RescheduleManyResult,
  type RetryManyOptions,
  type RetryManyResult,
  type RetryParams,
  type RetryResult,
  type Task,
  type TaskId,
  resolveBulkRow,
  TaskState,
  validateBulkFilter,
  validateBulkOptions,
} from '@postpone/core';
import type { MemoryDatabase } from './database.js';
import type { TaskLocks } from './task-locks.js';

export interface MemoryBulkContext {
  readonly db: MemoryDatabase;
  readonly locks: TaskLocks;
  readonly nowMs: () => number;
  readonly assertOpen: () => void;
  readonly cancel: (id: TaskId) => Promise<CancelOutcome>;
  readonly retry: (params: RetryParams) => Promise<RetryResult>;
  /** The task that retries this one (its `retriedAs`), or null. */
  readonly retriedAs: (id: TaskId) => TaskId | null;
  /** Drops the retry links of a deleted task, as prune does. */
  readonly forget: (id: TaskId) => void;
}

function compareIds(a: TaskId, b: TaskId): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/** The filter's fields other than ids and states, on one row (finish time: `updatedAt` of a terminal row). */
function matchesFields(t: Task, f: NormalizedBulkFilter): boolean {
  const due = t.dueAt.getTime();
  const finished = t.updatedAt.getTime();
  return (
    (f.kinds === null || f.kinds.includes(t.kind)) &&
    (f.queue === null || t.queue === f.queue) &&
    (f.keyPrefix === null || t.key?.startsWith(f.keyPrefix) === true) &&
    (f.dueFrom === null || due >= f.dueFrom.getTime()) &&
    (f.dueBefore === null || due < f.dueBefore.getTime()) &&
    (f.finishedFrom === null || finished >= f.finishedFrom.getTime()) &&
    (f.finishedBefore === null || finished < f.finishedBefore.getTime())
  );
}

export class MemoryBulk {
  constructor(private readonly ctx: MemoryBulkContext) {}

  async cancelMany(filter: BulkFilter, options?: BulkOptions): Promise<CancelManyResult> {
    return (await this.#run('cancel', filter, options)) as unknown as CancelManyResult;
  }

  async retryMany(filter: BulkFilter, options?: RetryManyOptions): Promise<RetryManyResult> {
    return (await this.#run('retry', filter, options)) as unknown as RetryManyResult;
  }

  async rescheduleMany(filter: BulkFilter, options: RescheduleManyOptions): Promise<RescheduleManyResult> {
    return (await this.#run('reschedule', filter, options)) as unknown as RescheduleManyResult;
  }

  async deleteMany(filter: BulkFilter, options?: BulkOptions): Promise<DeleteManyResult> {
    return (await this.#run('delete', filter, options)) as unknown as DeleteManyResult;
  }

  async #run(op: BulkOperation, filterIn: unknown, optionsIn: unknown) {
    this.ctx.assertOpen();
    const f = validateBulkFilter(op, filterIn);
    const o = validateBulkOptions(op, optionsIn);
    const counts: Record<string, number> = emptyBulkCounts<string>(BULK_OUTCOMES[op]);
    let effectsDeleted = 0;
    let batches = 0;
    const byIds = f.ids !== null;
    // A filter walk leaves tasks scheduled after the call began alone (as the SQL's `id <= max(id)`).
    const upTo = [...this.ctx.db.tasks.keys()].sort(compareIds).at(-1) ?? '0';
    // The batches of the SQL walk: by ids, chunks of the ids; by filter, one walk per state group
    // (cancel and reschedule SCHEDULED then CLAIMED, history in one), each in id order, every batch
    // chosen when it runs — the next `batchSize` ids after the last batch that match NOW, as the SQL's
    // keyset walk does: a task that an earlier batch's cascade (a dependent cancelled with its
    // dependency) took out of the states is not met, and not counted.
    const groups: (readonly string[])[] = byIds ? [f.states] : op === 'cancel' || op === 'reschedule' ? [TaskState.SCHEDULED, TaskState.CLAIMED].filter((s) => f.states.includes(s)).map((s) => [s]) : [f.states];
    const nextBatch = (states: readonly string[], after: TaskId | null, done: number): TaskId[] => {
      if (byIds) return (f.ids as readonly TaskId[]).slice(done, done + o.batchSize);
      return [...this.ctx.db.tasks.values()]
        .filter((t) => states.includes(t.state) && matchesFields(t, f) && compareIds(t.id, upTo) <= 0 && (after === null || compareIds(t.id, after) > 0))
        .map((t) => t.id)
        .sort(compareIds)
        .slice(0, o.batchSize);
    };
    if (!byIds && o.dryRun) batches = 1;
    for (const states of groups) {
      let after: TaskId | null = null;
      // Bounded: every batch moves `after` (or `done`) forward over a finite set of ids.
      for (let done = 0; ; ) {
        const selected = nextBatch(states, after, done);
        if (selected.length === 0) break;
        this.ctx.assertOpen();
        if (!(o.dryRun && !byIds)) batches += 1;
        // PostgreSQL cancels a batch in ONE statement: a held dependent and its dependency in the same
        // batch are both deleted before the release trigger runs, so the dependent is cancelled still
        // held (its own due time in history), never released first. One task at a time, the same
        // outcome needs every dependent cancelled before its dependencies: the batch's held tasks
        // first, newest first (a dependency always has a smaller id than its dependents: it existed
        // when they were scheduled), then the others. The differential test's failing inputs
        // CANCEL_BATCH_HELD_EXAMPLE (a dependency and its dependent) and CANCEL_BATCH_CHAIN_EXAMPLE (a
        // chain of two held tasks, released one by the other when taken oldest first), in
        // packages/postgres/test/differential.test.ts.
        const held = op === 'cancel' ? new Set(selected.filter((id) => this.ctx.db.dependencies.waiting(id) !== undefined)) : new Set<TaskId>();
        const ordered = [...[...held].sort((a, b) => compareIds(b, a)), ...selected.filter((id) => !held.has(id))];
        for (const id of ordered) {
          const r = await this.#one(op, id, byIds ? null : f, f.states, o);
          if (r.outcome !== null) counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
          if (r.effect) effectsDeleted += 1;
        }
        after = selected.at(-1) ?? after;
        done += selected.length;
        await Promise.resolve(); // let other calls run between batches, as separate transactions do
      }
    }
    return { counts, batches, dryRun: o.dryRun, ...(op === 'delete' ? { effectsDeleted } : {}) };
  }

  /**
   * One task: acted on when its row is in the acted states and still matches the filter (`f`, null
   * by ids), else its outcome from its row (core `resolveBulkRow`); null: a filter walk's task that
   * no longer matches, not counted.
   */
  async #one(op: BulkOperation, id: TaskId, f: NormalizedBulkFilter | null, states: readonly string[], o: NormalizedBulkOptions): Promise<{ outcome: string | null; effect: boolean }> {
    const { db } = this.ctx;
    const row = db.tasks.get(id);
    const resolved = resolveBulkRow(op, row === undefined ? undefined : { state: row.state, retriedAs: this.ctx.retriedAs(id) }, states);
    const acts = row !== undefined && resolved === 'AGAIN' && states.includes(row.state) && (f === null || matchesFields(row, f));
    if (!acts) return { outcome: resolved === 'AGAIN' ? null : resolved, effect: false };
    if (o.dryRun) return { outcome: bulkActOutcome(op, row.state), effect: false };
    switch (op) {
      case 'cancel':
        return { outcome: await this.ctx.cancel(id), effect: false };
      case 'retry':
        return { outcome: (await this.ctx.retry({ id, ...(o.dueAt === null ? { delayMs: o.delayMs ?? 0 } : { runAt: o.dueAt }) })).outcome, effect: false };
      case 'reschedule':
        return await this.ctx.locks.run(id, () => {
          const t = db.tasks.get(id);
          if (t === undefined) return { outcome: 'NOT_FOUND', effect: false };
          if (t.state !== TaskState.SCHEDULED) return { outcome: 'NOT_SCHEDULED', effect: false };
          const nowMs = this.ctx.nowMs();
          db.tasks.set(id, { ...t, dueAt: new Date(o.dueAt === null ? nowMs + (o.delayMs ?? 0) : o.dueAt.getTime()), updatedAt: new Date(nowMs) });
          db.dependencies.rescheduled(db.tasks, id);
          return { outcome: 'RESCHEDULED', effect: false };
        });
      case 'delete':
        return await this.ctx.locks.run(id, () => {
          if (!db.tasks.has(id)) return { outcome: 'NOT_FOUND', effect: false };
          db.tasks.delete(id);
          db.forgetTask(id);
          this.ctx.forget(id);
          db.completions.delete(id);
          // No legacy `effect` table here (PostgreSQL's, written before its migration 13): none deleted.
          return { outcome: 'DELETED', effect: false };
        });
    }
  }
}
