/**
 * The worker's typed events. Listeners run synchronously; a listener that throws is logged and never
 * disturbs the worker. Await an event in tests with {@link waitForEvent} (always with a deadline).
 */
import type { AttemptEvents } from './attempt/events.js';
import type { ClaimedTask, PruneResult, ReclaimedTask, UnclaimedKind } from '@postpone/core';
import type { RebuildReason, WheelRebuilt } from './discovery/discovery.js';

/**
 * The store operation an event or error refers to (`peekDue` and `listen`: hybrid discovery; `prune`: the `prune` option;
 * `unclaimedKinds`: the `unclaimedAfterMs` check).
 */
export type StoreOperation = 'claim' | 'extend' | 'complete' | 'fail' | 'release' | 'snooze' | 'reclaim' | 'getTask' | 'peekDue' | 'listen' | 'prune' | 'unclaimedKinds';

export type { RebuildReason };

/** One (queue, kind) pair nobody claims, as the worker reports it: the store's answer (core `UnclaimedKind`) and a hint. */
export interface UnclaimedKindReport extends UnclaimedKind {
  /** The handled kind closest to `kind` by edit distance (at most 3 edits, and fewer than the kind's length), else null: a likely typo. */
  readonly closestHandledKind: string | null;
}

/** Every event of the worker: those of each attempt (`@postpone/worker`) and those of its loop. */
export interface WorkerEvents extends Omit<AttemptEvents, 'error'> {
  /** One event per task claimed; `task.claimedAt - task.dueAt` is the lateness (store clock). */
  claimed: { readonly task: ClaimedTask };
  /** This worker moved a task whose lease had expired out of CLAIMED. */
  reclaimed: { readonly task: ReclaimedTask };
  /** A store call failed (the worker carries on: it retries, polls again, or leaves the task to lease expiry). */
  error: { readonly error: unknown; readonly operation: StoreOperation; readonly task?: ClaimedTask };
  /** Hybrid discovery re-read the store (`peekDue`) and merged it into its wheel (`@postpone/worker`). */
  wheelRebuilt: WheelRebuilt;
  /**
   * The worker's own store calls (claim, reclaim, discovery's reads, listening) started failing, or
   * the store reported a lost idle connection: once per outage, not per failed call. The loop retries
   * with capped exponential backoff (at most about one try per second once established).
   */
  storeUnavailable: { readonly error: unknown; readonly operation: StoreOperation | 'connection' };
  /** A call of the loop or of discovery succeeded after `storeUnavailable`: `downMs` later, after `failures` failed calls. */
  storeRecovered: { readonly downMs: number; readonly failures: number };
  /** A scheduled prune (option `prune`) ended: what `store.prune` deleted, and how long it took (ms, monotonic clock). */
  pruned: PruneResult & { readonly durationMs: number };
  /**
   * Due tasks of kinds nobody claims (option `unclaimedAfterMs`): the (queue, kind) pairs this worker
   * does not handle whose oldest task has been due at least `unclaimedAfterMs` while none of them is
   * CLAIMED (`store.unclaimedKinds`). One event per check that found any (at most one check per
   * `unclaimedAfterMs`), longest waiting first; `handledKinds` are this worker's kinds (empty with
   * `claimKinds: 'any'`), `queue` its queue. The tasks are left alone.
   */
  unclaimedKinds: { readonly kinds: readonly UnclaimedKindReport[]; readonly queue: string; readonly handledKinds: readonly string[] };
  /** The worker stopped (after `stop()`, or because the store was closed under it). */
  stopped: { readonly handedBack: number; readonly handBackFailed: number };
}

export type WorkerEventName = keyof WorkerEvents;
export type WorkerListener<E extends WorkerEventName> = (event: WorkerEvents[E]) => void;

/** Subscribe and unsubscribe; implemented by the worker. */
export interface WorkerEventSource {
  on<E extends WorkerEventName>(event: E, listener: WorkerListener<E>): () => void;
  off<E extends WorkerEventName>(event: E, listener: WorkerListener<E>): void;
}

/** A minimal typed emitter; listener errors go to `onListenerError` instead of the emitter's caller. */
export class TypedEmitter implements WorkerEventSource {
  private readonly listeners = new Map<WorkerEventName, Set<(event: never) => void>>();

  constructor(private readonly onListenerError: (error: unknown, event: WorkerEventName) => void) {}

  on<E extends WorkerEventName>(event: E, listener: WorkerListener<E>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener as (event: never) => void);
    return () => this.off(event, listener);
  }

  off<E extends WorkerEventName>(event: E, listener: WorkerListener<E>): void {
    this.listeners.get(event)?.delete(listener as (event: never) => void);
  }

  emit<E extends WorkerEventName>(event: E, payload: WorkerEvents[E]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as WorkerListener<E>)(payload);
      } catch (error) {
        try {
          this.onListenerError(error, event);
        } catch {
          // logging what the listener threw failed too (a value that cannot be serialized): drop it
        }
      }
    }
  }
}

export interface WaitForEventOptions<E extends WorkerEventName> {
  /** Only an event for which this returns true counts. */
  readonly filter?: (event: WorkerEvents[E]) => boolean;
  /** Give up after this many ms of real time (default 10 000). */
  readonly timeoutMs?: number;
  /** How many matching events to collect before resolving (default 1). */
  readonly count?: number;
}

/**
 * Resolves with the first `count` matching events of `source`.
 * @throws Error naming the event when `timeoutMs` passes first
 */
export function waitForEvent<E extends WorkerEventName>(
  source: WorkerEventSource,
  event: E,
  options: WaitForEventOptions<E> = {},
): Promise<WorkerEvents[E][]> {
  const { filter, timeoutMs = 10_000, count = 1 } = options;
  return new Promise((resolve, reject) => {
    const seen: WorkerEvents[E][] = [];
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${count} '${event}' event(s); got ${seen.length}`));
    }, timeoutMs);
    const off = source.on(event, (payload) => {
      if (filter && !filter(payload)) return;
      seen.push(payload);
      if (seen.length >= count) {
        clearTimeout(timer);
        off();
        resolve(seen);
      }
    });
  });
}
