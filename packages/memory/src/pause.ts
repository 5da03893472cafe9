/**
 * Paused queues and kinds in memory (`Store.pause`, `resume`, `listPaused` of `@postpone/core`,
 * docs/contract.md#pause-and-resume): the rows of the PostgreSQL table `pause`, keyed by scope and
 * name. Each operation runs without an `await`, so on one event loop it is one transaction; a claim
 * reads the rows as they are when it runs, like the PostgreSQL claim's snapshot.
 */
import { comparePaused, type PausedEntry, type PauseOptions, type PauseTarget, validatePauseOptions, validatePauseTarget } from '@postpone/core';

export interface MemoryPauseContext {
  readonly nowMs: () => number;
  readonly assertOpen: () => void;
}

export class MemoryPause {
  /** `scope:name` → row. */
  readonly #rows = new Map<string, PausedEntry>();

  constructor(private readonly ctx: MemoryPauseContext) {}

  async pause(target: PauseTarget, options?: PauseOptions): Promise<boolean> {
    this.ctx.assertOpen();
    const { scope, name } = validatePauseTarget(target);
    const { reason, by } = validatePauseOptions(options);
    const key = `${scope}:${name}`;
    if (this.#rows.has(key)) return false;
    this.#rows.set(key, { scope, name, pausedAt: new Date(this.ctx.nowMs()), pausedBy: by, reason });
    return true;
  }

  async resume(target: PauseTarget): Promise<boolean> {
    this.ctx.assertOpen();
    const { scope, name } = validatePauseTarget(target);
    return this.#rows.delete(`${scope}:${name}`);
  }

  async list(): Promise<PausedEntry[]> {
    this.ctx.assertOpen();
    return [...this.#rows.values()].sort(comparePaused).map((e) => ({ ...e, pausedAt: new Date(e.pausedAt) }));
  }

  /** Whether a task of `queue` and `kind` is held back: its queue or its kind is paused. */
  holds(queue: string, kind: string): boolean {
    return this.#rows.size > 0 && (this.#rows.has(`queue:${queue}`) || this.#rows.has(`kind:${kind}`));
  }

  /** Whether nothing of a claim's selection can be claimed: its queue paused, or every one of its `kinds` (when given). */
  holdsAll(queue: string, kinds: readonly string[] | null): boolean {
    if (this.#rows.size === 0) return false;
    if (this.#rows.has(`queue:${queue}`)) return true;
    return kinds?.every((kind) => this.#rows.has(`kind:${kind}`)) === true;
  }
}
