/**
 * Batches fenced completes: completions are queued and sent together with one `store.completeMany`
 * (one statement in the PostgreSQL store instead of one per task). Each task still gets its own fenced
 * outcome and history row. Completions with same-transaction writes (`ctx.onCompleteTx`) share the
 * batch too: their writes run in the batch's one transaction after the fenced moves and commit with
 * their DONEs (group commit: one commit for the batch instead of a four-round-trip transaction per
 * task). When such a batch fails for any reason — a write threw (nothing committed), the connection
 * was lost (at COMMIT: outcome unknown) — every item is completed alone by its own path (`alone`),
 * which is safe (a committed item answers DONE again, its writes not run twice), where a write's
 * failure is its handler's own and a store error is retried.
 *
 * One batcher serves every slot of the worker process, so completions of all its running tasks share
 * batches. A batch is sent when it holds `completeBatchSize` items, when an item's lease would end
 * before the delay is over (never held past its lease), or `completeBatchDelayMs` after its first
 * item (0: on the next macrotask, `setImmediate`, so completions that settle in the same turn of the
 * event loop share a batch). A write with no verdict (a lost connection, a statement or lock timeout…)
 * retries the whole batch (`callStore`) while any of its attempts holds its lease: safe, a retried
 * completeMany answers DONE again for the attempts it committed (NOT_FOUND for those it finished
 * with `keep: false`, which the worker counts finished as well). When the store refuses the batch
 * as invalid input (say a result above the store's own size limit), every item is sent alone with
 * `complete`, so one bad item never holds the others back.
 */
import { type ClaimedTask, type CompleteManyItem, type CompleteOutcome, isRefusal, type Json, type Store } from '@postpone/core';
import type { Pacing } from '@postpone/wheel';
import type { AttemptEmitter } from './events.js';
import { callStore } from './store-call.js';

export interface CompletionBatcherDeps<Tx> {
  readonly store: Store<Tx>;
  /** Worker identity, kept with each DONE in history (`Completion.worker`). */
  readonly owner: string;
  readonly batchSize: number;
  readonly batchDelayMs: number;
  readonly pacing: Pacing;
  readonly events: AttemptEmitter;
}

/** A completion with same-transaction writes. */
export interface CompletionWork<Tx> {
  /** The handler's writes, run in the batch's transaction when this item's fenced move hits. */
  readonly work: (tx: Tx) => Promise<void>;
  /** Completes this item alone (its own transaction, retries and verdicts), when its batch failed. */
  readonly alone: () => Promise<CompleteOutcome>;
}

interface Pending<Tx> {
  readonly task: ClaimedTask;
  readonly result: Json;
  /** False: DONE not kept (the item's `keep: false`). */
  readonly keep: boolean;
  readonly resolve: (outcome: CompleteOutcome) => void;
  readonly reject: (error: unknown) => void;
  /** Whether this attempt still holds its lease (asked before retrying a write with no verdict). */
  readonly holdsLease: (() => boolean) | undefined;
  readonly withWork: CompletionWork<Tx> | undefined;
}

export class CompletionBatcher<Tx> {
  private queue: Pending<Tx>[] = [];
  private armed = false;

  constructor(private readonly deps: CompletionBatcherDeps<Tx>) {}

  /**
   * Queues the fenced complete of `task` with `result`.
   * @param leaseUntil the lease's end as the worker knows it (monotonic ms, the lease keeper's
   *   estimate): when it comes before the batch would be sent, the batch is sent at once
   * @param holdsLease whether the attempt still holds its lease: a batch whose write got no verdict
   *   is tried again while any of its attempts does (default: the tries' own bound)
   * @param keep false: DONE not kept (sent as the item's `keep: false`)
   * @param withWork the handler's same-transaction writes, and how to complete the task alone
   * @returns the store's outcome for this task once its batch was acknowledged
   * @throws the store's error (after the retries of a write with no verdict); the task stays CLAIMED
   */
  complete(task: ClaimedTask, result: Json, leaseUntil?: number, holdsLease?: () => boolean, keep = true, withWork?: CompletionWork<Tx>): Promise<CompleteOutcome> {
    return new Promise<CompleteOutcome>((resolve, reject) => {
      this.queue.push({ task, result, keep, resolve, reject, holdsLease, withWork });
      // The lease guard: a completion whose lease would end before the batch delay is over is not
      // held back; the batch goes now (the estimate may be old: a renewal may be in flight).
      const { batchDelayMs, batchSize, pacing } = this.deps;
      if (this.queue.length >= batchSize || (batchDelayMs > 0 && leaseUntil !== undefined && leaseUntil - pacing.now() <= batchDelayMs)) this.flush();
      else this.arm();
    });
  }

  private arm(): void {
    if (this.armed) return;
    this.armed = true;
    const fire = () => {
      this.armed = false;
      this.flush();
    };
    if (this.deps.batchDelayMs === 0) setImmediate(fire);
    else void this.deps.pacing.sleep(this.deps.batchDelayMs).then(fire);
  }

  /** Sends what is queued now (nothing when empty); later completions start a new batch. */
  private flush(): void {
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    void this.send(batch);
  }

  private async send(batch: readonly Pending<Tx>[]): Promise<void> {
    const { store, owner } = this.deps;
    const deps = { pacing: this.deps.pacing, events: this.deps.events, holdsLease: () => batch.some((p) => p.holdsLease?.() ?? true) };
    const items: CompleteManyItem<Tx>[] = batch.map((p) => ({ id: p.task.id, attempt: p.task.attempt, owner, result: p.result, ...(p.keep ? {} : { keep: false }) }));
    const alone = (p: Pending<Tx>, i: number): Promise<CompleteOutcome> =>
      p.withWork?.alone() ?? callStore({ ...deps, ...(p.holdsLease ? { holdsLease: p.holdsLease } : {}) }, 'complete', p.task, () => store.complete(items[i] as CompleteManyItem<Tx>));
    const eachAlone = async (): Promise<void> => {
      await Promise.all(
        batch.map(async (p, i) => {
          try {
            p.resolve(await alone(p, i));
          } catch (itemError) {
            p.reject(itemError);
          }
        }),
      );
    };
    if (batch.some((p) => p.withWork !== undefined)) {
      // Group commit: one try; any failure and each item goes alone, where its own write's failure
      // is told apart from the store's and a write with no verdict is retried under its lease.
      if (batch.length === 1) return await eachAlone();
      let outcomes: CompleteOutcome[];
      try {
        outcomes = await store.completeMany(batch.map((p, i): CompleteManyItem<Tx> => ({ ...(items[i] as CompleteManyItem<Tx>), ...(p.withWork ? { work: p.withWork.work } : {}) })));
      } catch {
        return await eachAlone();
      }
      for (const [i, p] of batch.entries()) p.resolve(outcomes[i] as CompleteOutcome);
      return;
    }
    try {
      const outcomes = await callStore(deps, 'complete', batch.length === 1 ? batch[0]?.task : undefined, () => store.completeMany(items));
      for (const [i, p] of batch.entries()) p.resolve(outcomes[i] as CompleteOutcome);
    } catch (error) {
      // A refusal (core's `isRefusal`: one item's result over the limit, say) is about some item, not
      // the batch: each is sent alone, so only its own attempt fails with it.
      if (!isRefusal(error)) {
        for (const p of batch) p.reject(error);
        return;
      }
      await eachAlone();
    }
  }
}
