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
import { StoreClosedError, type Task, type TaskId, TaskWaiters } from '@postpone/core';
import { parseFinishNotice } from '../sql/progress-wait-sql.js';
import type { ListenOptions, Unlisten } from './driver.js';

/** Most ids one batched read names. */
export const WAIT_READ_BATCH = 1_000;

/** Default `waitFallbackMs` of the PostgreSQL stores: the batched re-read of every pending `waitFor` id. */
export const DEFAULT_WAIT_FALLBACK_MS = 2_000;

export interface WaitForDeps {
  /** LISTEN on the finish channel (the driver's shared connection); rejects when it cannot. */
  readonly listen: (onNotify: (payload: string) => void, options: ListenOptions) => Promise<Unlisten>;
  /** Records that this store has callers until now + `untilMs` (one statement), so finishes are announced. */
  readonly present: (untilMs: number) => Promise<void>;
  /** Removes that record (no caller left). */
  readonly absent: () => Promise<void>;
  /** Reads the tasks of `ids` that exist (one statement). */
  readonly readMany: (ids: readonly TaskId[]) => Promise<Task[]>;
  readonly fallbackMs: number;
}

/** Counters of one store's waiting, for tests and the `await_result` evidence. */
export interface WaitForStats {
  /** Batched reads sent (first reads, notice-driven reads and fallback re-reads together). */
  readonly reads: number;
  /**
   * Of those, the fallback re-reads: the first batch of each fallback interval that read (ids that
   * notices add while it reads are read in the next batch of the same loop, counted as reads only: a
   * notice caused them).
   */
  readonly fallbackReads: number;
  /** Finish notices received (each names up to 300 ids). */
  readonly notices: number;
  /** LISTEN subscriptions made (1 while callers keep waiting; again after an idle stop). */
  readonly listens: number;
  /** Statements recording this store's presence in `task_waiter` (first caller, then one per fallback interval, and the removal). */
  readonly presenceWrites: number;
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
  #stats = { reads: 0, fallbackReads: 0, notices: 0, listens: 0, presenceWrites: 0 };
  /** The presence record of this store while callers wait (see {@link WaitForDeps.present}). */
  #presence: Promise<void> | undefined;
  /** After a failed LISTEN, no new attempt before this time (`Date.now()`): callers then cost no attempt each. */
  #listenRetryAt = 0;

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
      await this.#present();
      if (this.#closed) throw new StoreClosedError();
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
    if (this.#presence !== undefined) {
      this.#presence = undefined;
      await this.#write(() => this.#deps.absent());
    }
  }

  #listen(): Promise<Unlisten | null> {
    if (this.#closed || (this.#listening === undefined && Date.now() < this.#listenRetryAt)) return Promise.resolve(null);
    this.#listening ??= this.#deps
      .listen((payload) => this.#onNotice(payload), { onReconnect: () => this.#request(this.#waiters.ids()) })
      .then(
        (unlisten) => {
          this.#stats.listens += 1;
          return unlisten;
        },
        () => {
          // No LISTEN (a transaction pooler without a direct connection, the database away): the
          // fallback re-read still finds every finish; LISTEN is tried again one interval later.
          this.#listening = undefined;
          this.#listenRetryAt = Date.now() + this.#deps.fallbackMs;
          return null;
        },
      );
    return this.#listening;
  }

  /** How long a presence record lasts without a refresh: five fallback intervals, at least 10 s. */
  get #presenceMs(): number {
    return Math.max(10_000, 5 * this.#deps.fallbackMs);
  }

  /** Records this store's presence once for the callers arriving now; a failure leaves them to the fallback re-read. */
  #present(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#presence ??= this.#write(() => this.#deps.present(this.#presenceMs)).then((ok) => {
      if (!ok) this.#presence = undefined;
    });
    return this.#presence;
  }

  async #write(op: () => Promise<void>): Promise<boolean> {
    this.#stats.presenceWrites += 1;
    try {
      await op();
      return true;
    } catch {
      return false;
    }
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
      let first = true;
      while (this.#toRead.size > 0 && !this.#closed) {
        const batch = [...this.#toRead].filter((id) => this.#waiters.has(id)).slice(0, WAIT_READ_BATCH);
        for (const id of [...this.#toRead]) if (!this.#waiters.has(id)) this.#toRead.delete(id);
        if (batch.length === 0) break;
        for (const id of batch) this.#toRead.delete(id);
        this.#stats.reads += 1;
        if (fallback && first) this.#stats.fallbackReads += 1;
        first = false;
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
      if (this.#waiters.size > 0) {
        void this.#write(() => this.#deps.present(this.#presenceMs));
        void this.#listen();
      }
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
      if (this.#presence !== undefined) {
        this.#presence = undefined;
        void this.#write(() => this.#deps.absent());
      }
      void listening?.then((unlisten) => unlisten?.()).catch(() => undefined);
    }, this.#deps.fallbackMs);
    this.#idleTimer.unref?.();
  }
}
