/**
 * `@postpone/worker/scheduler` — scheduling typed by the same payload map as the worker's handlers
 * (`HandlerMap<Tx, M>`), so a payload of the wrong shape for its kind, or a kind with no handler, is
 * a compile error where the task is scheduled, not a DEAD task later. This entry loads no worker
 * code (no logger, no discovery): import it from the process that only schedules.
 *
 * ```ts
 * type Payloads = { 'close-reservation': { reservationId: number } };
 * const scheduler = createScheduler<Payloads>(store);
 * await scheduler.schedule({ kind: 'close-reservation', payload: { reservationId: 42 }, delayMs: 30 * 60_000 });
 * ```
 */
import type { CancelOptions, CancelOutcome, ScheduledTask, ScheduleInput, ScheduleOptions, Store, TaskId } from '@postpone/core';
import type { PayloadMap } from './attempt/handler.js';

export type { PayloadMap };

/**
 * A schedule input of one kind `K` of `M` with `payload: M[K]` (optional only when `M[K]` admits
 * null, the default payload). For a union of kinds it is the union of their inputs, so each element
 * of a `scheduleMany` is checked against its own kind.
 */
export type TypedScheduleInput<M extends PayloadMap, K extends keyof M & string = keyof M & string> = K extends unknown
  ? Omit<ScheduleInput, 'kind' | 'payload'> & { readonly kind: K } & (null extends M[K] ? { readonly payload?: M[K] } : { readonly payload: M[K] })
  : never;

/**
 * The store's `schedule`, `scheduleMany` and `cancel`, with inputs typed by `M`. Every call goes to
 * the store unchanged: the same validation (`ValidationError`), dedup keys and `{ tx }` as the store's own.
 */
export interface Scheduler<M extends PayloadMap, Tx = unknown> {
  /** The store the calls go to. */
  readonly store: Store<Tx>;
  /** `store.schedule` for kind `K` with payload `M[K]`. @throws as `Store.schedule` */
  schedule<K extends keyof M & string>(input: TypedScheduleInput<M, K>, options?: ScheduleOptions<Tx>): Promise<ScheduledTask>;
  /** `store.scheduleMany`, each input typed by its own kind (all or nothing). @throws as `Store.scheduleMany` */
  scheduleMany(inputs: readonly TypedScheduleInput<M>[], options?: ScheduleOptions<Tx>): Promise<ScheduledTask[]>;
  /** `store.cancel`. @throws as `Store.cancel` */
  cancel(id: TaskId, options?: CancelOptions<Tx>): Promise<CancelOutcome>;
}

/**
 * A {@link Scheduler} over `store`, typed by the payload map `M` of the worker's handlers. Give `Tx`
 * to type `{ tx }` too, e.g. `createScheduler<Payloads, PgTx | SqlExecutor>(store)` for a PostgreSQL
 * store that takes a `pg` client or an ORM transaction (`@postpone/postgres`); by default `tx` is `unknown`
 * and checked by the store at run time.
 */
export function createScheduler<M extends PayloadMap, Tx = unknown>(store: Store<Tx>): Scheduler<M, Tx> {
  return {
    store,
    schedule: (input, options) => store.schedule(input as ScheduleInput, options),
    scheduleMany: (inputs, options) => store.scheduleMany(inputs as readonly ScheduleInput[], options),
    cancel: (id, options) => store.cancel(id, options),
  };
}
