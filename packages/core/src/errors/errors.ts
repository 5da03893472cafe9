/**
 * Typed errors. Every error Postpone throws is a {@link PostponeError} with a stable `code`.
 *
 * `PostponeError.isInstance(e)` works across duplicated copies of this package (a `Symbol.for`
 * marker), unlike `instanceof`.
 */
const MARKER = Symbol.for('postpone.error');

export type ValidationCode =
  | 'INVALID_DELAY'
  | 'INVALID_RUN_AT'
  | 'INVALID_MAX_ATTEMPTS'
  | 'INVALID_PAYLOAD'
  | 'PAYLOAD_TOO_LARGE'
  /** A payload or result holds an integer beyond ±(2^53 − 1): JSON.parse would round it (send it as a string). */
  | 'UNSAFE_INTEGER'
  | 'INVALID_KIND'
  | 'INVALID_TASK_ID'
  | 'INVALID_OPTION'
  | 'INVALID_RESULT'
  /** A progress value (`ctx.progress`, `reportProgress`) JSON cannot hold (docs/contract.md#progress). */
  | 'INVALID_PROGRESS'
  /** A progress value longer than `MAX_PROGRESS_BYTES` of UTF-8 JSON (docs/contract.md#progress). */
  | 'PROGRESS_TOO_LARGE'
  | 'INVALID_KEY'
  | 'INVALID_QUEUE'
  | 'INVALID_PRIORITY'
  /**
   * `{ tx }` is a connection, pool or client that is not inside an open transaction (no `BEGIN`, a
   * pool, a top-level `sql` or ORM client, a transaction handle used after it ended): a write through
   * it would commit on its own instead of with the caller's transaction. Nothing was written.
   */
  | 'NOT_IN_TRANSACTION'
  /** A malformed `after` entry (docs/contract.md#dependencies), or `after` with a dedup key. */
  | 'INVALID_DEPENDENCY'
  /** An `after` id names no task, live or in history (docs/contract.md#dependencies). Nothing was written. */
  | 'DEPENDENCY_NOT_FOUND'
  /** The store cannot keep dependencies (the Citus dialect, docs/contract.md#dependencies). Nothing was written. */
  | 'DEPENDENCIES_UNSUPPORTED'
  /** The store cannot keep per-key rate limits (the Citus dialect, docs/contract.md#per-key-rate-limits). Nothing was written. */
  | 'KEY_RATE_LIMITS_UNSUPPORTED';

export type PostponeErrorCode =
  | ValidationCode
  | 'UNKNOWN_KIND'
  | 'DUPLICATE_KEY'
  | 'STORE_CLOSED'
  | 'CONNECTION_LOST'
  | 'CONNECTION_FAILED'
  | 'POOL_TIMEOUT'
  | 'STORE_ERROR'
  | 'MIGRATION_ERROR'
  | 'SCHEMA_BEHIND'
  | 'SCHEMA_TOO_NEW'
  | 'TASK_ABORTED'
  | 'NON_RETRYABLE'
  | 'SNOOZE'
  | 'WORKER_STOPPED'
  | 'WAIT_TIMEOUT'
  | 'NOT_FOUND'
  /** Batches (docs/contract.md#batches): no such batch; it is sealed; the store's dialect has none (Citus). */
  | 'BATCH_NOT_FOUND'
  | 'BATCH_SEALED'
  | 'BATCHES_UNSUPPORTED';

export class PostponeError extends Error {
  readonly [MARKER] = true;
  readonly code: PostponeErrorCode;

  constructor(code: PostponeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PostponeError';
    this.code = code;
  }

  /** Never throws, even for a revoked Proxy or a getter that throws (then false). */
  static isInstance(error: unknown): error is PostponeError {
    try {
      return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[MARKER] === true;
    } catch {
      return false;
    }
  }
}

/** Bad input to schedule, cancel, complete or a constructor. Nothing was written. */
export class ValidationError extends PostponeError {
  /** The offending field, e.g. `delayMs`, `payload`, `tasks[3].kind`. */
  readonly field: string;

  constructor(code: ValidationCode, field: string, message: string, options?: { cause?: unknown }) {
    super(code, `${field}: ${message}`, options);
    this.name = 'ValidationError';
    this.field = field;
  }

  static override isInstance(error: unknown): error is ValidationError {
    try {
      return PostponeError.isInstance(error) && error instanceof Error && error.name === 'ValidationError';
    } catch {
      return false;
    }
  }
}

/** A task's kind has no registered handler. The worker records it on the task as a failure. */
export class UnknownKindError extends PostponeError {
  readonly kind: string;
  constructor(kind: string) {
    super('UNKNOWN_KIND', `no handler registered for kind ${JSON.stringify(kind)}`);
    this.name = 'UnknownKindError';
    this.kind = kind;
  }
}

/**
 * A schedule with `onConflict: 'fail'` met a SCHEDULED or CLAIMED task of the same kind and dedup
 * key (docs/contract.md#dedup-keys). Nothing was written (for `scheduleMany`, none of the batch).
 */
export class DuplicateKeyError extends PostponeError {
  readonly kind: string;
  readonly key: string;
  /** The id of the task that holds the key. */
  readonly taskId: string;
  constructor(kind: string, key: string, taskId: string) {
    super('DUPLICATE_KEY', `task ${taskId} of kind ${JSON.stringify(kind)} already holds key ${JSON.stringify(key)}`);
    this.name = 'DuplicateKeyError';
    this.kind = kind;
    this.key = key;
    this.taskId = taskId;
  }
}

/** The store was closed; the call did nothing. */
export class StoreClosedError extends PostponeError {
  constructor(message = 'store is closed', options?: { cause?: unknown }) {
    super('STORE_CLOSED', message, options);
    this.name = 'StoreClosedError';
  }
}

/**
 * The connection to the database was lost (or could not be made) during the call.
 * The outcome of a write in flight is unknown: retry it; every operation is fenced and idempotent
 * in effect (a retried complete of a committed attempt returns DONE again).
 */
export class ConnectionLostError extends PostponeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONNECTION_LOST', message, options);
    this.name = 'ConnectionLostError';
  }
}

/** Why a connection could not be made ({@link ConnectionError}). */
export type ConnectionFailure =
  /** Nothing listens at the address (ECONNREFUSED), or the server is starting or stopping (57P03). */
  | 'REFUSED'
  /** The host name did not resolve (ENOTFOUND, EAI_AGAIN). */
  | 'DNS'
  /** No route to the host (EHOSTUNREACH, ENETUNREACH). */
  | 'UNREACHABLE'
  /** The connection was not established within the connect timeout. */
  | 'TIMEOUT'
  /** TLS negotiation or certificate verification failed, or the server does not offer TLS. */
  | 'TLS'
  /** Wrong password or no `pg_hba.conf` entry (28P01, 28000). */
  | 'AUTHENTICATION'
  /** The database does not exist (3D000). */
  | 'DATABASE_MISSING'
  /** The server has no free connection slot (53300). */
  | 'TOO_MANY_CONNECTIONS';

/** Failures that usually pass by themselves (retry with backoff); the others need a configuration change. */
const TRANSIENT_FAILURES: ReadonlySet<ConnectionFailure> = new Set(['REFUSED', 'DNS', 'UNREACHABLE', 'TIMEOUT', 'TOO_MANY_CONNECTIONS']);

/**
 * A connection to the database could not be made (the call sent nothing: retrying it is safe).
 * `reason` names the phase that failed; `sqlState` is the server's code when the server answered
 * (28P01, 28000, 3D000, 53300, 57P03). `transient` is true for failures that usually pass by
 * themselves (refused, DNS, unreachable, timeout, too many connections).
 */
export class ConnectionError extends PostponeError {
  readonly reason: ConnectionFailure;
  readonly sqlState: string | undefined;
  readonly transient: boolean;

  constructor(reason: ConnectionFailure, message: string, sqlState: string | undefined, options?: { cause?: unknown }) {
    super('CONNECTION_FAILED', message, options);
    this.name = 'ConnectionError';
    this.reason = reason;
    this.sqlState = sqlState;
    this.transient = TRANSIENT_FAILURES.has(reason);
  }
}

/**
 * The call waited for a connection of the client-side pool (a `pg.Pool`) until the pool's
 * `connectionTimeoutMillis` ran out, while every connection of the pool was in use: the database was
 * never asked, and is not known to be down. Too many calls at once for the pool — e.g.
 * `Promise.all` of many `schedule` calls: use `scheduleMany` (one statement), or a bigger pool
 * `max`, or a longer `connectionTimeoutMillis`. Nothing was sent, so retrying is safe.
 * Message: `waited N ms for a pooled connection (pool max M, K waiting)`.
 */
export class PoolTimeoutError extends PostponeError {
  /** How long the call waited for a connection, in ms. */
  readonly waitedMs: number;
  /** The pool's `max`: every one of them was in use. */
  readonly poolMax: number;
  /** Other calls still waiting for a connection of the pool when this one gave up. */
  readonly waiting: number;

  constructor(waitedMs: number, poolMax: number, waiting: number, options?: { cause?: unknown }) {
    super(
      'POOL_TIMEOUT',
      `waited ${waitedMs} ms for a pooled connection (pool max ${poolMax}, ${waiting} waiting): every connection of the pool was in use; the database was not asked. Schedule many tasks with scheduleMany, or give the pool a larger max`,
      options,
    );
    this.name = 'PoolTimeoutError';
    this.waitedMs = waitedMs;
    this.poolMax = poolMax;
    this.waiting = waiting;
  }
}

/**
 * Any other database error, with its SQLSTATE (PostgreSQL 17 Appendix A).
 *
 * `transient` is true when the error gives no verdict on the statement — it was cut short by the
 * database (statement or lock timeout, query canceled, deadlock victim, serialization failure) and
 * rolled back, so the same call may succeed when tried again; a fenced write (complete, fail,
 * release, extend) is safe to retry then (the store's list: `NO_VERDICT_SQLSTATES` of
 * `@postpone/postgres`). False for an error that will repeat (a constraint, a missing table…).
 */
export class StoreError extends PostponeError {
  readonly sqlState: string | undefined;
  readonly transient: boolean;
  constructor(message: string, sqlState: string | undefined, options?: { cause?: unknown; transient?: boolean }) {
    super('STORE_ERROR', message, options === undefined ? undefined : { cause: options.cause });
    this.name = 'StoreError';
    this.sqlState = sqlState;
    this.transient = options?.transient === true;
  }
}

/**
 * The schema's migrations and this code do not fit together (README "Failure modes", version skew;
 * docs/guides/deploy.md). Nothing was written.
 *
 * - `SCHEMA_BEHIND`: the schema lacks migrations this code relies on (`schemaVersion` <
 *   `codeVersion`; 0 when the schema was never migrated): run `migrate()` with this code first.
 * - `SCHEMA_TOO_NEW`: a newer deploy migrated the schema past what this code can run on — a
 *   migration it applied declares that only code knowing migration `minReader` or later may use the
 *   schema (`minReader` > `codeVersion`), or a statement of this code met a shape it does not know
 *   (an undefined column, say) on a schema ahead of it. Deploy the newer code; migrations are never
 *   rolled back.
 */
export class SchemaVersionError extends PostponeError {
  /** The schema (PostgreSQL namespace) checked. */
  readonly schema: string;
  /** The newest migration applied to the schema (0: never migrated). */
  readonly schemaVersion: number;
  /** The newest migration this code knows, the version it needs. */
  readonly codeVersion: number;
  /** The oldest code (by its newest migration) the schema's migrations allow, or null when none declares one. */
  readonly minReader: number | null;

  constructor(
    code: 'SCHEMA_BEHIND' | 'SCHEMA_TOO_NEW',
    versions: { readonly schema: string; readonly schemaVersion: number; readonly codeVersion: number; readonly minReader: number | null },
    options?: { cause?: unknown },
  ) {
    const { schema, schemaVersion, codeVersion, minReader } = versions;
    const message =
      code === 'SCHEMA_BEHIND'
        ? schemaVersion === 0
          ? `schema ${schema} is not migrated (at migration 0), this code needs migration ${codeVersion}: run migrate() first`
          : `schema ${schema} is at migration ${schemaVersion}, this code needs ${codeVersion}: run migrate() first`
        : minReader !== null && minReader > codeVersion
          ? `schema ${schema} is at migration ${schemaVersion}, which needs code of migration ${minReader} or later; this code knows up to ${codeVersion}: deploy the newer code`
          : `schema ${schema} is at migration ${schemaVersion}, ahead of this code (${codeVersion}), and a statement of this code no longer fits it: deploy the newer code`;
    super(code, message, options);
    this.name = 'SchemaVersionError';
    this.schema = schema;
    this.schemaVersion = schemaVersion;
    this.codeVersion = codeVersion;
    this.minReader = minReader;
  }
}

/**
 * `waitFor` gave up: the task was not terminal within `timeoutMs` (docs/contract.md#awaiting-a-result).
 * The task is untouched: it may still finish later; wait again or read it with `getTask`.
 */
export class WaitTimeoutError extends PostponeError {
  readonly taskId: string;
  readonly timeoutMs: number;
  constructor(taskId: string, timeoutMs: number) {
    super('WAIT_TIMEOUT', `task ${taskId} was not finished within ${timeoutMs} ms`);
    this.name = 'WaitTimeoutError';
    this.taskId = taskId;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * No task has this id (docs/contract.md#awaiting-a-result). `vanished` is true when the task was
 * seen live by the caller and then disappeared: it finished as DONE not kept (`keep: false`,
 * docs/contract.md#done-not-kept), which leaves no row — so its result cannot be read — or it was
 * pruned; false when the id was found nowhere in the first place.
 */
export class TaskNotFoundError extends PostponeError {
  readonly taskId: string;
  readonly vanished: boolean;
  constructor(taskId: string, vanished = false) {
    super(
      'NOT_FOUND',
      vanished
        ? `task ${taskId} disappeared while awaited: it finished without history (DONE not kept, keep: false) or was pruned, so it has no result to read`
        : `no task has id ${taskId}`,
    );
    this.name = 'TaskNotFoundError';
    this.taskId = taskId;
    this.vanished = vanished;
  }
}

/** Codes of {@link isRefusal} beside every `ValidationError`. */
const REFUSAL_CODES: ReadonlySet<string> = new Set(['DUPLICATE_KEY', 'NOT_FOUND', 'BATCH_NOT_FOUND', 'BATCH_SEALED', 'BATCHES_UNSUPPORTED']);

/**
 * True when `error` is Postpone's refusal of what a call asked — bad input (`ValidationError`, any
 * code), a dedup key already held (`DUPLICATE_KEY`), no such task or batch, a sealed batch, batches
 * unsupported: a verdict on the call, which the same call gets again, never a failure of the store
 * or the network. The worker counts one raised inside a handler's `onCompleteTx` write (a
 * `store.schedule(…, { tx })` with a payload over the limit, say) as the handler's failure, and one
 * the store answers a complete or snooze with as that attempt's failure. Never throws (false for a
 * revoked Proxy or a throwing getter).
 */
export function isRefusal(error: unknown): boolean {
  if (ValidationError.isInstance(error)) return true;
  try {
    return PostponeError.isInstance(error) && REFUSAL_CODES.has(error.code);
  } catch {
    return false;
  }
}
