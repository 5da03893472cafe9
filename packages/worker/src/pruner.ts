/**
 * The worker's scheduled prune (option `prune`): every `everyMs` it deletes history — DONE, CANCELLED
 * and DEAD tasks — finished more than `olderThanMs` before the store's now,
 * or past its state's `retention` (docs/contract.md#retention), through `store.prune` (bounded
 * batches or whole partitions, each its own short transaction; core `PruneParams`).
 *
 * The first prune runs when the worker starts, the next `everyMs` after the previous one ended (never
 * two at once). A failure is an `error` event (operation `prune`) and a warn line, never a rejection;
 * the next prune comes at its usual time. Several workers may prune the same store at once: the
 * batches skip rows another prune holds (PostgreSQL: FOR UPDATE SKIP LOCKED).
 */
import { PostponeError, type PruneResult, type Store } from '@postpone/core';
import type { Logger } from 'pino';
import type { TypedEmitter } from './events.js';
import type { ResolvedPruneOptions } from './options.js';
import type { Pacing } from '@postpone/wheel';
import { whenAborted } from '@postpone/wheel';

export interface PrunerDeps {
  readonly store: Store<unknown>;
  readonly options: ResolvedPruneOptions;
  readonly pacing: Pacing;
  readonly events: TypedEmitter;
  readonly logger: Logger;
}

export class Pruner {
  private readonly halt = new AbortController();
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly deps: PrunerDeps) {}

  /** Starts the prune loop (first prune now). */
  start(): void {
    this.done = this.loop();
  }

  /**
   * Stops the loop: no prune starts after this. Waits for the one in flight until `deadline` aborts
   * (a prune cannot be cut short; left alone it ends by itself, its result or error still reported).
   */
  async stop(deadline: AbortSignal): Promise<void> {
    this.halt.abort();
    await Promise.race([this.done, whenAborted(deadline)]);
  }

  /**
   * One prune.
   * @returns what the store deleted, or null when it failed (reported as an `error` event, never thrown)
   */
  async pruneOnce(): Promise<PruneResult | null> {
    const { store, options, pacing, events, logger } = this.deps;
    const startedAt = pacing.now();
    try {
      const result = await store.prune(
        options.retention !== null ? { retention: options.retention, batchSize: options.batchSize } : { olderThanMs: options.olderThanMs ?? 0, batchSize: options.batchSize },
      );
      const durationMs = Math.round(pacing.now() - startedAt);
      events.emit('pruned', { ...result, durationMs });
      if (result.deleted > 0) logger.info({ deleted: result.deleted, batches: result.batches, durationMs }, 'pruned history');
      else logger.debug({ durationMs }, 'prune found no history to delete');
      // Partition maintenance that could not be done: reported at every prune while it lasts.
      const skipped = result.partitionsSkipped ?? [];
      if (skipped.length > 0) {
        logger.warn(
          { partitionsSkipped: skipped.map((s) => ({ action: s.action, partition: s.partition, day: s.day, reason: s.reason })) },
          `history partition maintenance skipped ${skipped.length}: ${skipped.map((s) => s.detail).join('; ')}`,
        );
      }
      return result;
    } catch (error) {
      events.emit('error', { error, operation: 'prune' });
      if (PostponeError.isInstance(error) && error.code === 'STORE_CLOSED') {
        this.halt.abort();
        logger.warn('prune stopped: the store is closed');
      } else {
        logger.warn({ err: error }, `prune failed; next try in ${options.everyMs} ms`);
      }
      return null;
    }
  }

  private async loop(): Promise<void> {
    while (!this.halt.signal.aborted) {
      await this.pruneOnce();
      if (this.halt.signal.aborted) return;
      await this.deps.pacing.sleep(this.deps.options.everyMs, this.halt.signal);
    }
  }
}
