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
    const previous = this.#tails.get(id) ?? Promise.resolve();
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => released);
    this.#tails.set(id, tail);
    try {
      await previous;
      return await fn();
    } finally {
      release();
      if (this.#tails.get(id) === tail) this.#tails.delete(id);
    }
  }
}
