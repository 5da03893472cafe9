/**
 * `ctx.progress` of one attempt (docs/contract.md#progress): validates each value at once, keeps
 * only the newest, and writes it with `store.reportProgress` at most once per `intervalMs` (pacing
 * time), one write in flight at a time; {@link flush} writes the last value before the attempt's
 * end is reported. Fenced by the attempt in the store: a refused write (the attempt is no longer
 * the current one) is reported once and ends the writer. Never throws after validation, never
 * leaves a rejection unhandled.
 */
import { type ClaimedTask, describeThrown, type Json, type Store, validateProgress } from '@postpone/core';
import type { Pacing } from '@postpone/wheel';
import type { Logger } from 'pino';

export interface ProgressWriterDeps {
  readonly store: Store<unknown>;
  readonly task: ClaimedTask;
  readonly intervalMs: number;
  readonly pacing: Pacing;
  readonly logger: () => Logger;
  /** The store refused a write: this attempt is no longer the current one. */
  readonly onRefused: () => void;
}

export class ProgressWriter {
  readonly #deps: ProgressWriterDeps;
  #pending: { readonly value: Json } | null = null;
  #lastWriteAt = Number.NEGATIVE_INFINITY;
  #inFlight: Promise<void> | null = null;
  #timer: AbortController | null = null;
  #flushing = false;
  #refused = false;
  #warnedLate = false;
  /** Writes sent to the store (tests read it). */
  writes = 0;

  constructor(deps: ProgressWriterDeps) {
    this.#deps = deps;
  }

  /** @throws ValidationError INVALID_PROGRESS, PROGRESS_TOO_LARGE (nothing kept) */
  report(value: unknown): void {
    const { value: json } = validateProgress(value);
    if (this.#flushing) {
      if (!this.#warnedLate) this.#deps.logger().warn('ctx.progress called after the handler settled (or was abandoned); later values are ignored');
      this.#warnedLate = true;
      return;
    }
    if (this.#refused) return;
    this.#pending = { value: json };
    this.#schedule();
  }

  /** Stops the timer and writes the newest value not yet written, if any; resolves when done (never rejects). */
  async flush(): Promise<void> {
    this.#flushing = true;
    this.#timer?.abort();
    this.#timer = null;
    while (this.#inFlight !== null) await this.#inFlight;
    if (this.#pending !== null && !this.#refused) {
      this.#write();
      await this.#inFlight;
    }
  }

  #schedule(): void {
    if (this.#inFlight !== null || this.#timer !== null || this.#flushing) return;
    const waitMs = this.#lastWriteAt + this.#deps.intervalMs - this.#deps.pacing.now();
    if (waitMs <= 0) {
      this.#write();
      return;
    }
    const timer = new AbortController();
    this.#timer = timer;
    void this.#deps.pacing.sleep(waitMs, timer.signal).then(() => {
      if (timer.signal.aborted || this.#timer !== timer) return;
      this.#timer = null;
      this.#write();
    });
  }

  #write(): void {
    const pending = this.#pending;
    if (pending === null) return;
    this.#pending = null;
    this.#lastWriteAt = this.#deps.pacing.now();
    this.writes += 1;
    const { store, task } = this.#deps;
    this.#inFlight = (async () => {
      try {
        const written = await store.reportProgress({ id: task.id, attempt: task.attempt, progress: pending.value });
        if (!written) {
          this.#refused = true;
          this.#pending = null;
          this.#deps.logger().warn('progress write refused: this attempt is no longer the current one');
          this.#deps.onRefused();
        }
      } catch (error) {
        this.#deps.logger().warn({ error: describeThrown(error) }, 'progress write failed; the value is written again with the next report or at the end');
        this.#pending ??= pending;
      }
    })().finally(() => {
      this.#inFlight = null;
      if (this.#pending !== null && !this.#flushing && !this.#refused) this.#schedule();
    });
  }
}
