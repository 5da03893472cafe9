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
  | 'INVALID_KIND'
  | 'INVALID_TASK_ID'
  | 'INVALID_OPTION'
  | 'INVALID_RESULT';

export type PostponeErrorCode =
  | ValidationCode
  | 'UNKNOWN_KIND'
  | 'STORE_CLOSED'
  | 'CONNECTION_LOST'
  | 'STORE_ERROR'
  | 'MIGRATION_ERROR'
  | 'TASK_ABORTED'
  | 'WORKER_STOPPED';

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

/** Any other database error, with its SQLSTATE (PostgreSQL 17 Appendix A). */
export class StoreError extends PostponeError {
  readonly sqlState: string | undefined;
  constructor(message: string, sqlState: string | undefined, options?: { cause?: unknown }) {
    super('STORE_ERROR', message, options);
    this.name = 'StoreError';
    this.sqlState = sqlState;
  }
}
