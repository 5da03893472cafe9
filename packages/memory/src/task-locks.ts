/**
 * Row locks for the in-memory store: a FIFO queue per task id, the counterpart of the row lock a
 * PostgreSQL UPDATE holds until its transaction ends (PostgreSQL 17 §13.3.2). Commands on a locked
 * task wait their turn; claim and reclaim skip locked tasks, like `FOR UPDATE SKIP LOCKED`.
 */
import type { TaskId } from '@postpone/core';

export class TaskLocks {
  readonly #tails = new Map<TaskId, Promise<void>>();

  /** True while some command holds or waits for the lock of `id`. */
  isLocked(id: TaskId): boolean {
    return this.#tails.has(id);
  }

  /** Runs `fn` holding the lock of `id`, after every earlier holder released it. */
  async run<T>(id: TaskId, fn: () => T | Promise<T>): Promise<T> {
    return this.runAll([id], fn);
  }

  /**
   * Runs `fn` holding the locks of all `ids`, taken one by one in the given order (callers pass
   * them sorted, so two batches never wait on each other in a cycle).
   */
  async runAll<T>(ids: readonly TaskId[], fn: () => T | Promise<T>): Promise<T> {
    const held: { id: TaskId; tail: Promise<void>; release: () => void }[] = [];
    try {
      for (const id of ids) {
        const previous = this.#tails.get(id) ?? Promise.resolve();
        let release!: () => void;
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        const tail = previous.then(() => released);
        this.#tails.set(id, tail);
        held.push({ id, tail, release });
        await previous;
      }
      return await fn();
    } finally {
      for (const { id, tail, release } of held) {
        release();
        if (this.#tails.get(id) === tail) this.#tails.delete(id);
      }
    }
  }
}
