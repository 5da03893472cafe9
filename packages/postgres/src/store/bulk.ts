/**
 * The bulk operations of `PostgresStore` (`cancelMany`, `retryMany`, `rescheduleMany`, `deleteMany`,
 * docs/contract.md#bulk-operations) over the statements of `../sql/bulk-sql.ts`. Inputs are checked by
 * core first (`validateBulkFilter`, `validateBulkOptions`), so every store refuses the same calls.
 *
 * A filter walks the matching ids in id order, one state group at a time, `batchSize` per batch; each
 * batch is a pick (no locks) and an act (rows locked in id order, state and filter re-checked), each
 * its own short transaction. By `ids`, each chunk of `batchSize` ids is acted on directly; an id the act
 * missed gets the single-task operation's outcome from a fresh read (terminal states never change, so
 * the read is safe), and one found in the acted states again is acted on once more, as `cancel` does.
 */
import {
  BULK_OUTCOMES,
  bulkActOutcome,
  type BulkFilter,
  type BulkOperation,
  type BulkOptions,
  type CancelManyResult,
  type DeleteManyResult,
  emptyBulkCounts,
  type NormalizedBulkFilter,
  type NormalizedBulkOptions,
  type RescheduleManyOptions,
  type RescheduleManyResult,
  type RetryManyOptions,
  type RetryManyResult,
  resolveBulkRow,
  StoreError,
  TaskState,
  validateBulkFilter,
  validateBulkOptions,
} from '@postpone/core';
import { type BulkFilterFields, type BulkStatement, type BulkStatements, bulkStatements } from '../sql/bulk-sql.js';
import type { PostgresAdminContext } from './admin.js';
import type { Row } from './driver.js';
import { SqlState } from './errors.js';

/** Most runs of one act statement rolled back as a deadlock victim or a serialization failure. */
const ACT_ATTEMPTS = 3;

interface Tally {
  counts: Record<string, number>;
  /** Ids given an outcome in a filter walk of a state group but still live (cancel: REQUESTED), so a later group skips them. */
  readonly seen: Set<string>;
  batches: number;
  effectsDeleted: number;
}

export class PostgresBulk {
  readonly sql: BulkStatements;

  constructor(private readonly ctx: PostgresAdminContext) {
    this.sql = bulkStatements(ctx.schema);
  }

  async cancelMany(filter: BulkFilter, options?: BulkOptions): Promise<CancelManyResult> {
    return (await this.run('cancel', filter, options)) as unknown as CancelManyResult;
  }

  async retryMany(filter: BulkFilter, options?: RetryManyOptions): Promise<RetryManyResult> {
    return (await this.run('retry', filter, options)) as unknown as RetryManyResult;
  }

  async rescheduleMany(filter: BulkFilter, options: RescheduleManyOptions): Promise<RescheduleManyResult> {
    return (await this.run('reschedule', filter, options)) as unknown as RescheduleManyResult;
  }

  async deleteMany(filter: BulkFilter, options?: BulkOptions): Promise<DeleteManyResult> {
    return (await this.run('delete', filter, options)) as unknown as DeleteManyResult;
  }

  private async run(op: BulkOperation, filterIn: unknown, optionsIn: unknown) {
    this.ctx.assertOpen();
    const f = validateBulkFilter(op, filterIn);
    const o = validateBulkOptions(op, optionsIn);
    const tally: Tally = { counts: emptyBulkCounts<string>(BULK_OUTCOMES[op]), seen: new Set(), batches: 0, effectsDeleted: 0 };
    if (f.ids !== null) {
      for (let i = 0; i < f.ids.length; i += o.batchSize) {
        this.ctx.assertOpen();
        const chunk = f.ids.slice(i, i + o.batchSize);
        tally.batches += 1;
        if (o.dryRun) await this.dryIds(op, chunk, f.states, tally);
        else await this.actIds(op, chunk, null, f.states, o, tally, true);
      }
    } else {
      const [top] = await this.query({ text: this.sql.maxId, values: [] });
      const upTo = top?.maxid === null || top?.maxid === undefined ? '0' : String(top.maxid);
      for (const group of this.groups(op, f)) {
        if (o.dryRun) {
          tally.batches = 1; // one read of counts, however many state groups (as the memory store)
          for (const r of await this.query(this.sql.count(group.where, group.states, f, upTo))) {
            const outcome = op === 'retry' && r.retried === true ? 'ALREADY_RETRIED' : bulkActOutcome(op, String(r.state));
            tally.counts[outcome] = (tally.counts[outcome] ?? 0) + Number(r.n);
          }
          continue;
        }
        let after = '0';
        for (;;) {
          this.ctx.assertOpen();
          const ids = (await this.query(this.sql.pick(group.where, group.states, f, after, upTo, o.batchSize))).map((r) => String(r.id));
          if (ids.length === 0) break;
          tally.batches += 1;
          // A task the walk of an earlier state group already counted (claimed meanwhile: REQUESTED) is not acted on or counted twice.
          const fresh = ids.filter((id) => !tally.seen.has(id));
          if (fresh.length > 0) await this.actIds(op, fresh, f, f.states, o, tally, false);
          if (ids.length < o.batchSize) break;
          after = ids.at(-1) as string;
        }
      }
    }
    return { counts: tally.counts, batches: tally.batches, dryRun: o.dryRun, ...(op === 'delete' ? { effectsDeleted: tally.effectsDeleted } : {}) };
  }

  /** The state groups a filter walk visits, each with one pick order: cancel SCHEDULED then CLAIMED (a task claimed meanwhile is still met). */
  private groups(op: BulkOperation, f: NormalizedBulkFilter): { where: 'live' | 'history'; states: readonly string[] }[] {
    if (op === 'cancel' || op === 'reschedule') {
      return [TaskState.SCHEDULED, TaskState.CLAIMED].filter((s) => f.states.includes(s)).map((s) => ({ where: 'live' as const, states: [s] }));
    }
    return [{ where: 'history', states: f.states }];
  }

  private async query(s: BulkStatement): Promise<readonly Row[]> {
    return await this.ctx.call(() => this.ctx.driver.query(s.text, s.values));
  }

  /**
   * One act statement, run again (at most {@link ACT_ATTEMPTS} times) when PostgreSQL rolled it back
   * as a deadlock victim (40P01) or for a serialization failure (40001): it wrote nothing then
   * (PostgreSQL 17 §13.2.1, Appendix A), and it re-checks every row, so running it again is safe. A
   * batch locks in id order, as `completeMany` and `extendMany` do, so a cycle needs a writer locking
   * in another order (a `scheduleMany` replacing keyed tasks locks in key order).
   */
  private async actOnce(statement: BulkStatement): Promise<readonly Row[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.query(statement);
      } catch (error) {
        const code = (error as { sqlState?: string } | null)?.sqlState;
        if (attempt >= ACT_ATTEMPTS || (code !== SqlState.DEADLOCK_DETECTED && code !== SqlState.SERIALIZATION_FAILURE)) throw error;
      }
    }
  }

  private act(op: BulkOperation, ids: readonly string[], f: BulkFilterFields | null, states: readonly string[], o: NormalizedBulkOptions): BulkStatement {
    const json = JSON.stringify(ids);
    const now = this.ctx.nowParam();
    const due = o.dueAt?.toISOString() ?? null;
    switch (op) {
      case 'cancel':
        return this.sql.cancel(now, json, f, states, this.ctx.notifyChannel);
      case 'retry':
        return this.sql.retry(now, json, f, states, due, o.delayMs ?? 0, this.ctx.notifyChannel);
      case 'reschedule':
        return this.sql.reschedule(now, json, f, due, o.delayMs ?? 0, this.ctx.notifyChannel);
      case 'delete':
        return this.sql.delete(json, f, states);
    }
  }

  /**
   * One batch: the act on `ids`, then a read of those it missed. By ids (`byIds`), an id found in the
   * acted states again gets one more act (a row committed after the act's snapshot); still missed
   * after that, the call fails as `cancel` does. In a filter walk such an id no longer matches the
   * filter (its due time moved) and is not counted.
   */
  private async actIds(op: BulkOperation, ids: readonly string[], f: BulkFilterFields | null, states: readonly string[], o: NormalizedBulkOptions, tally: Tally, byIds: boolean): Promise<void> {
    let pending = ids;
    for (let round = 0; round < 2 && pending.length > 0; round++) {
      const rows = await this.actOnce(this.act(op, pending, f, states, o));
      const hit = new Set<string>();
      for (const r of rows) {
        hit.add(String(r.id));
        if (op === 'cancel' && r.state !== TaskState.CANCELLED) tally.seen.add(String(r.id));
        const outcome =
          op === 'cancel'
            ? r.state === TaskState.CANCELLED
              ? 'CANCELLED'
              : 'REQUESTED'
            : op === 'retry'
              ? r.newid === null || r.newid === undefined
                ? 'ALREADY_RETRIED'
                : 'RETRIED'
              : op === 'reschedule'
                ? 'RESCHEDULED'
                : 'DELETED';
        tally.counts[outcome] = (tally.counts[outcome] ?? 0) + 1;
      }
      if (op === 'delete' && rows.length > 0) tally.effectsDeleted += Number(rows[0]?.effects ?? 0);
      const missed = pending.filter((id) => !hit.has(id));
      if (missed.length === 0) return;
      const found = new Map((await this.query({ text: this.sql.statesOf, values: [JSON.stringify(missed)] })).map((r) => [String(r.id), r]));
      const again: string[] = [];
      for (const id of missed) {
        const row = found.get(id);
        const resolution = resolveBulkRow(op, row === undefined ? undefined : { state: String(row.state), retriedAs: row.retriedas === null || row.retriedas === undefined ? null : String(row.retriedas) }, states);
        if (resolution === 'AGAIN') {
          if (byIds) again.push(id);
        } else if (resolution !== null) tally.counts[resolution] = (tally.counts[resolution] ?? 0) + 1;
      }
      pending = again;
    }
    if (pending.length > 0) throw new StoreError(`${op} of ${pending.length} task(s) (first ${pending[0]}): the task changed state during the call`, undefined);
  }

  /** A dry run by ids: each id's outcome from a read, changing nothing. */
  private async dryIds(op: BulkOperation, ids: readonly string[], states: readonly string[], tally: Tally): Promise<void> {
    const found = new Map((await this.query({ text: this.sql.statesOf, values: [JSON.stringify(ids)] })).map((r) => [String(r.id), r]));
    for (const id of ids) {
      const row = found.get(id);
      const read = row === undefined ? undefined : { state: String(row.state), retriedAs: row.retriedas === null || row.retriedas === undefined ? null : String(row.retriedas) };
      const resolution = resolveBulkRow(op, read, states);
      const outcome = resolution === 'AGAIN' ? bulkActOutcome(op, read?.state ?? '') : resolution;
      if (outcome !== null) tally.counts[outcome] = (tally.counts[outcome] ?? 0) + 1;
    }
  }
}
