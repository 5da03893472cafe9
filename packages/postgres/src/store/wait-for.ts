/**
 * `waitFor` of the PostgreSQL store (docs/contract.md#awaiting-a-result): every caller of one store
 * is registered in-process by task id (core `TaskWaiters`); the store LISTENs on the schema's finish
 * channel over the driver's ONE shared listening connection (`../drivers/shared-listener.ts`) while
 * any caller waits, and reads tasks only in batches:
 * - a new caller's first read, and the tasks named by finish notices, are gathered and read together
 *   (one `taskGetMany` per batch of up to {@link WAIT_READ_BATCH} ids, one batch in flight at a time);
 * - every `fallbackMs`, one batched re-read of every pending id (a notice can be lost: the listening
 *   connection dropped, the NOTIFY queue over half full, a finish by code that sends none);
 * - after the listening connection came back, the same re-read at once.
 * So the statements waiting costs grow with the number of read batches, never with callers × time.
 * Nothing here throws into the caller except through its own promise; a failed read is tried again
 * by the next fallback re-read.
 */
import { type Task, type TaskId, TaskWaiters } from '@postpone/core';
import { parseFinishNotice } from '../sql/progress-wait-sql.js';
import type { ListenOptions, Unlisten } from './driver.js';

/** Most ids one batched read names. */
export const WAIT_READ_BATCH = 1_000;

/** Default `waitFallbackMs` of the PostgreSQL stores: the batched re-read of every pending `waitFor` id. */
export const DEFAULT_WAIT_FALLBACK_MS = 2_000;

export interface WaitForDeps {
  /** LISTEN on the finish channel (the driver's shared connection); rejects when it cannot. */
  readonly listen: (onNotify: (payload: string) => void, options: ListenOptions) => Promise<Unlisten>;
  /** Reads the tasks of `ids` that exist (one statement). */
  readonly readMany: (ids: readonly TaskId[]) => Promise<Task[]>;
  readonly fallbackMs: number;
}

/** Counters of one store's waiting, for tests and the `await_result` evidence. */
export interface WaitForStats {
  /** Batched reads sent (first reads, notice-driven reads and fallback re-reads together). */
  readonly reads: number;
  /** Of those, the fallback re-reads. */
  readonly fallbackReads: number;
  /** Finish notices received (each names up to 300 ids). */
  readonly notices: number;
  /** LISTEN subscriptions made (1 while callers keep waiting; again after an idle stop). */
  readonly listens: number;
}

export class PgWaitFor {
  readonly #deps: WaitForDeps;
  readonly #waiters: TaskWaiters;
  #listening: Promise<Unlisten | null> | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #fallbackTimer: NodeJS.Timeout | undefined;
  readonly #toRead = new Set<TaskId>();
  #reading = false;
  #closed = false;
  /** Callers between `wait` and their registration: the idle stop leaves the LISTEN to them. */
  #joining = 0;
  #stats = { reads: 0, fallbackReads: 0, notices: 0, listens: 0 };

  constructor(deps: WaitForDeps) {
    this.#deps = deps;
    this.#waiters = new TaskWaiters((pending) => (pending > 0 ? this.#active() : this.#idle()));
  }

  get stats(): WaitForStats {
    return { ...this.#stats };
  }

  /** Registers the caller, LISTENing first so no finish between the read and the notice is missed. */
  async wait(id: TaskId, timeoutMs: number | null, signal: AbortSignal | null): Promise<Task> {
    this.#joining += 1;
    let waiting: Promise<Task>;
    try {
      await this.#listen();
      waiting = this.#waiters.add(id, timeoutMs, signal);
    } finally {
      this.#joining -= 1;
    }
    this.#request([id]);
    return await waiting;
  }

  /** Rejects every caller with StoreClosedError and stops listening. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#waiters.closeAll();
    clearInterval(this.#fallbackTimer);
    clearTimeout(this.#idleTimer);
    const unlisten = await this.#listening?.catch(() => null);
    this.#listening = undefined;
    await unlisten?.().catch(() => undefined);
  }

  #listen(): Promise<Unlisten | null> {
    if (this.#closed) return Promise.resolve(null);
    this.#listening ??= this.#deps
      .listen((payload) => this.#onNotice(payload), { onReconnect: () => this.#request(this.#waiters.ids()) })
      .then(
        (unlisten) => {
          this.#stats.listens += 1;
          return unlisten;
        },
        () => {
          // No LISTEN (a transaction pooler without a direct connection, the database away): the
          // fallback re-read still finds every finish; the next caller tries to listen again.
          this.#listening = undefined;
          return null;
        },
      );
    return this.#listening;
  }

  #onNotice(payload: string): void {
    const ids = parseFinishNotice(payload);
    if (ids === null) return;
    this.#stats.notices += 1;
    const waited = ids.filter((id) => this.#waiters.has(id));
    if (waited.length > 0) this.#request(waited);
  }

  #request(ids: readonly TaskId[]): void {
    for (const id of ids) this.#toRead.add(id);
    if (!this.#reading) void this.#drain();
  }

  /** Reads the requested ids in batches, one batch at a time; ids asked for meanwhile join the next. */
  async #drain(fallback = false): Promise<void> {
    this.#reading = true;
    try {
      // A macrotask first: callers registering in the same tick share the read.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.#toRead.size > 0 && !this.#closed) {
        const batch = [...this.#toRead].filter((id) => this.#waiters.has(id)).slice(0, WAIT_READ_BATCH);
        for (const id of [...this.#toRead]) if (!this.#waiters.has(id)) this.#toRead.delete(id);
        if (batch.length === 0) break;
        for (const id of batch) this.#toRead.delete(id);
        this.#stats.reads += 1;
        if (fallback) this.#stats.fallbackReads += 1;
        let tasks: Task[];
        try {
          tasks = await this.#deps.readMany(batch);
        } catch {
          // No verdict on these: the next fallback re-read asks again.
          break;
        }
        const byId = new Map(tasks.map((t) => [t.id, t]));
        for (const id of batch) this.#waiters.settle(id, byId.get(id) ?? null);
      }
    } finally {
      this.#reading = false;
    }
  }

  #active(): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    if (this.#fallbackTimer !== undefined) return;
    this.#fallbackTimer = setInterval(() => {
      if (this.#reading || this.#waiters.size === 0) return;
      for (const id of this.#waiters.ids()) this.#toRead.add(id);
      void this.#drain(true);
    }, this.#deps.fallbackMs);
    this.#fallbackTimer.unref?.();
  }

  /** No caller left: stop the re-reads now, and the LISTEN after one fallback interval without callers (no churn between bursts). */
  #idle(): void {
    clearInterval(this.#fallbackTimer);
    this.#fallbackTimer = undefined;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#waiters.size > 0 || this.#joining > 0) return;
      const listening = this.#listening;
      this.#listening = undefined;
      void listening?.then((unlisten) => unlisten?.()).catch(() => undefined);
    }, this.#deps.fallbackMs);
    this.#idleTimer.unref?.();
  }
}
