/**
 * Handlers: one async function per task `kind`, typed by a map from kind to payload type.
 */
import type { ClaimedTask, Json } from '@postpone/core';
import type { Logger } from 'pino';

/** A write that runs inside the completing transaction with the store's native transaction handle. */
export type CompletionWrite<Tx> = (tx: Tx) => Promise<unknown>;

/** What a handler receives besides its task. */
export interface HandlerContext<Tx = unknown> {
  /**
   * Aborts when the lease is lost, cancel is requested, `handlerTimeoutMs` passes, or the worker hands
   * the task back at shutdown; `signal.reason` is a `TaskAbortedError` naming which. Pass it to
   * `fetch`, timers and drivers so the work stops early; the store rejects a late commit either way.
   */
  readonly signal: AbortSignal;
  /** This claim's attempt number (1 for the first run); the fencing token. It grows at every claim, hand-backs included. */
  readonly attempt: number;
  /**
   * Failures before this attempt: thrown errors, timeouts and expired leases (crashes, stalls) of
   * earlier attempts; a hand-back at shutdown is not one. `failures + 1 === maxAttempts` is the last try.
   */
  readonly failures: number;
  /** Failures the task may have before it goes DEAD: its retry policy's, resolved task > kind > row (docs/contract.md#retry-policy). */
  readonly maxAttempts: number;
  /**
   * `task-<id>`: the same for every attempt of the task. Send it to external services (an
   * `Idempotency-Key` header) so a retried attempt after a crash applies once (docs/glossary.md#idempotency-key).
   */
  readonly idempotencyKey: string;
  /** The id of the worker running this attempt (stored as `lease_owner` and with the DONE in history). */
  readonly workerId: string;
  /** A pino child logger bound to `workerId`, `taskId`, `kind` and `attempt`. */
  readonly logger: Logger;
  /**
   * Registers a write to run inside the completing transaction, after the fenced move to DONE
   * (docs/contract.md#promise-4): it commits with DONE or not at all, and never runs for a stale or
   * cancelled attempt. `tx` is the store's own handle: a `pg.PoolClient` for `createPgStore`, a
   * postgres.js `TransactionSql` for `createPostgresJsStore`, a `MemoryTx` for the memory store.
   * Writes run in registration order; if one throws, nothing commits and the attempt fails with its error.
   * Register before the handler returns; later registrations are ignored (and logged). This is where
   * a handler's local effect goes — a row of its own with the task id as primary key makes it at most
   * once per task (docs/contract.md#completion); the library writes no effect row of its own.
   */
  onCompleteTx(write: CompletionWrite<Tx>): void;
  /**
   * Reports the task's progress (docs/contract.md#progress): any JSON value up to `MAX_PROGRESS_BYTES`
   * (64 KiB), which replaces the previous one and shows in `getTask(id).progress` (and `postpone
   * show`, the dashboard). Written at most once per `progressIntervalMs` (the worker option; values
   * in between are coalesced: the newest wins), fenced by this attempt, and the last value is always
   * written before the attempt's end is reported. Returns at once; a failed write is logged, never thrown.
   * A write the store refuses (this attempt is no longer the current one) emits `progressRefused`,
   * and later reports of the attempt are dropped.
   * @throws ValidationError INVALID_PROGRESS (not JSON) or PROGRESS_TOO_LARGE, synchronously; nothing is written
   */
  progress(value: unknown): void;
}

/**
 * Runs one attempt of a task. Its return value (or `undefined`, stored as null) is the task's JSON
 * `result`; a value JSON cannot hold fails the attempt with an INVALID_RESULT error. Throwing (any
 * value) fails the attempt: the task is due again after the backoff, or DEAD when out of attempts.
 * Throw `NonRetryableError(reason)` to make it DEAD at once, `Snooze({ delayMs | dueAt })` to run it
 * again later without counting a failure (docs/contract.md#retry-policy).
 *
 * The payload type `P` is trusted, not checked at run time: validate it in the handler if producers
 * may disagree. Use `type` aliases for payloads (an `interface` is not assignable to `Json`).
 */
export type Handler<P extends Json = Json, Tx = unknown> = (task: ClaimedTask<P>, ctx: HandlerContext<Tx>) => unknown;

/** Kind → payload type, e.g. `{ 'expire-reservation': { reservationId: number } }`. */
export type PayloadMap = Record<string, Json>;

/** The handler registry: one handler per kind of `M`. */
export type HandlerMap<Tx, M extends PayloadMap = PayloadMap> = { readonly [K in keyof M]: Handler<M[K], Tx> };
