import type { Pacing } from './pacing.js';

interface PendingSleep {
  readonly at: number;
  readonly seq: number;
  readonly resolve: () => void;
}

/**
 * A {@link Pacing} whose time moves only when told to, for tests without real sleeps: renewal,
 * polling, shutdown and handler time limits fire exactly when `advance` passes their deadline.
 */
export class ManualPacing implements Pacing {
  private time: number;
  private seq = 0;
  private readonly pending = new Set<PendingSleep>();

  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const entry: PendingSleep = {
        at: this.time + Math.max(0, ms),
        seq: this.seq++,
        resolve: () => {
          this.pending.delete(entry);
          signal?.removeEventListener('abort', entry.resolve);
          resolve();
        },
      };
      this.pending.add(entry);
      signal?.addEventListener('abort', entry.resolve, { once: true });
    });
  }

  /**
   * Moves time forward by `ms` (non-negative) and wakes, in deadline order, every sleep due by then.
   * @returns how many sleeps were woken
   * @throws RangeError for a negative or non-finite `ms`
   */
  advance(ms: number): number {
    if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`advance expects a non-negative finite ms, got ${ms}`);
    this.time += ms;
    const due = [...this.pending].filter((p) => p.at <= this.time).sort((a, b) => a.at - b.at || a.seq - b.seq);
    for (const p of due) p.resolve();
    return due.length;
  }

  /** Number of sleeps waiting (tests wait for a sleep to be registered before advancing). */
  get pendingCount(): number {
    return this.pending.size;
  }
}
