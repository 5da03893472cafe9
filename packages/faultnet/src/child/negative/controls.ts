/**
 * The broken variants of the negative controls, run with {@link negativeStatements}: a read-then-update
 * claim, an unfenced complete, and the effect table without a unique key. Harness only.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CompleteManyItem, CompleteOutcome, CompleteParams, Store } from '@postpone/core';
import type pg from 'pg';
import { overrideStore } from '@postpone/core';
import { negativeStatements, type NegativeStatements } from './sql.js';

/** A task the naive claim believes it holds. Times are epoch ms of the database clock. */
export interface NaiveClaim {
  readonly id: string;
  readonly attempt: number;
  readonly dueAtMs: number;
  readonly leaseUntilMs: number;
  readonly claimedAtMs: number;
}

export interface NaiveClaimParams {
  readonly owner: string;
  readonly limit: number;
  readonly leaseMs: number;
  /** Pause between the SELECT and the UPDATEs, in ms: the window in which other claimers read the same rows. */
  readonly pauseMs: number;
}

type Queryable = pg.Pool | pg.ClientBase;

export class NegativeControls {
  readonly sql: NegativeStatements;

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    this.sql = negativeStatements(schema);
  }

  /** Creates `effect_nounique` (idempotent). */
  async createEffectNoUnique(): Promise<void> {
    await this.pool.query(this.sql.effectNoUniqueCreate);
  }

  /** Writes one row to `effect_nounique` (on `db`, e.g. the completing transaction's client). */
  async insertEffectNoUnique(id: string, attempt: number, worker: string, db: Queryable = this.pool): Promise<void> {
    await db.query(this.sql.effectNoUniqueInsert, [id, attempt, worker]);
  }

  /** Rows and distinct tasks in `effect_nounique`. */
  async countEffectsNoUnique(): Promise<{ effects: number; tasks: number }> {
    const { rows } = await this.pool.query<{ effects: number; tasks: number }>(this.sql.effectNoUniqueCount);
    return rows[0] ?? { effects: 0, tasks: 0 };
  }

  /**
   * Read-then-update claim: SELECT due ids (no lock), pause, then UPDATE each by id (no state guard),
   * each statement in autocommit. Concurrent claimers that read in the same window all "claim" the
   * same tasks.
   */
  async naiveClaim(params: NaiveClaimParams): Promise<NaiveClaim[]> {
    const { rows } = await this.pool.query<{ id: string }>(this.sql.naiveSelectDue, [params.limit]);
    if (rows.length === 0) return [];
    if (params.pauseMs > 0) await sleep(params.pauseMs);
    const claims: NaiveClaim[] = [];
    for (const { id } of rows) {
      const claimById = () =>
        this.pool.query<{ id: string; attempt: number; dueatms: number; leaseuntilms: number; claimedatms: number }>(this.sql.naiveClaimById, [id, params.owner, params.leaseMs]);
      // A row moving to history meanwhile is missed by both halves of the statement (its snapshot
      // predates the move): once more, with a new snapshot, as the UPDATE in place once found it.
      let result = await claimById();
      if (result.rows.length === 0) result = await claimById();
      const row = result.rows[0];
      if (row) claims.push({ id: row.id, attempt: row.attempt, dueAtMs: row.dueatms, leaseUntilMs: row.leaseuntilms, claimedAtMs: row.claimedatms });
    }
    return claims;
  }

  /**
   * Complete without the fence: UPDATE to DONE by id alone (no attempt, no state guard) and a row in
   * `effect_nounique`, in one transaction.
   * @returns DONE whenever the task exists (that is the defect), REJECTED_STALE only for a missing id
   */
  async unfencedComplete(params: { id: string; attempt: number; owner: string; result?: unknown }): Promise<CompleteOutcome> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      const complete = () => client.query(this.sql.unfencedComplete, [params.id, JSON.stringify(params.result ?? null)]);
      // A row another complete moved to history meanwhile is missed by both halves of the statement
      // (its snapshot predates the move): once more, with a new snapshot (READ COMMITTED, §13.2.1).
      let { rowCount } = await complete();
      if (rowCount === 0) ({ rowCount } = await complete());
      if (rowCount === 1) await this.insertEffectNoUnique(params.id, params.attempt, params.owner, client);
      await client.query('commit');
      return rowCount === 1 ? 'DONE' : 'REJECTED_STALE';
    } catch (error) {
      await client.query('rollback').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}

/**
 * `store` with `complete` replaced by {@link NegativeControls.unfencedComplete} (the `work` hook is
 * not run), and `completeMany` by the same unfenced complete per item, in order (the worker batches
 * completions, same-transaction writes included; neither runs `work`); every other method is the store's own.
 */
export function withUnfencedComplete<Tx>(store: Store<Tx>, controls: NegativeControls): Store<Tx> {
  return overrideStore(store, {
    complete: (params: CompleteParams<Tx>) =>
      controls.unfencedComplete({ id: params.id, attempt: params.attempt, owner: params.owner, result: params.result }),
    completeMany: async (items: readonly CompleteManyItem<Tx>[]) => {
      const outcomes: CompleteOutcome[] = [];
      for (const item of items) outcomes.push(await controls.unfencedComplete({ id: item.id, attempt: item.attempt, owner: item.owner, result: item.result }));
      return outcomes;
    },
  });
}
