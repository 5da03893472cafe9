/**
 * One function, {@link translateError}, turns what `pg` or postgres.js throws into core's typed
 * errors (pg-boss style: SQLSTATE codes as named constants, one translation point).
 */
import { ConnectionError, type ConnectionFailure, ConnectionLostError, isRefusal, PostponeError, StoreClosedError, StoreError, ValidationError } from '@postpone/core';

/** SQLSTATE codes the store tells apart (PostgreSQL 17 Appendix A). */
export const SqlState = Object.freeze({
  /** Class 08 — Connection Exception (every code starting with these two characters). */
  CONNECTION_EXCEPTION_CLASS: '08',
  /** 57P01 admin_shutdown: the backend was terminated (`pg_terminate_backend`, server shutdown). */
  ADMIN_SHUTDOWN: '57P01',
  /** 57P02 crash_shutdown. */
  CRASH_SHUTDOWN: '57P02',
  /** 57P03 cannot_connect_now: the server is starting or stopping. */
  CANNOT_CONNECT_NOW: '57P03',
  /** 22021 character_not_in_repertoire: e.g. a NUL byte in text. */
  CHARACTER_NOT_IN_REPERTOIRE: '22021',
  /** 22P05 untranslatable_character: e.g. `\u0000` in jsonb. */
  UNTRANSLATABLE_CHARACTER: '22P05',
  /** 23514 check_violation: e.g. CLAIMED without a full lease. */
  CHECK_VIOLATION: '23514',
  /** 23505 unique_violation. */
  UNIQUE_VIOLATION: '23505',
  /** 42P01 undefined_table: the schema was never migrated. */
  UNDEFINED_TABLE: '42P01',
  /** 3F000 invalid_schema_name: the schema does not exist (never migrated, or a typo). */
  INVALID_SCHEMA_NAME: '3F000',
  /** 28P01 invalid_password. */
  INVALID_PASSWORD: '28P01',
  /** 28000 invalid_authorization_specification: e.g. no pg_hba.conf entry, unknown role. */
  INVALID_AUTHORIZATION: '28000',
  /** 3D000 invalid_catalog_name: the database does not exist. */
  INVALID_CATALOG_NAME: '3D000',
  /** 53300 too_many_connections. */
  TOO_MANY_CONNECTIONS: '53300',
  /** 26000 invalid_sql_statement_name: e.g. a prepared statement missing behind a transaction pooler. */
  INVALID_SQL_STATEMENT_NAME: '26000',
  /** 42P05 duplicate_prepared_statement: e.g. a prepared statement name reused behind a transaction pooler. */
  DUPLICATE_PREPARED_STATEMENT: '42P05',
  /** 57014 query_canceled: `statement_timeout` ran out, or `pg_cancel_backend`. */
  QUERY_CANCELED: '57014',
  /** 55P03 lock_not_available: `lock_timeout` ran out (or `NOWAIT`). */
  LOCK_NOT_AVAILABLE: '55P03',
  /** 40P01 deadlock_detected: this transaction was chosen as the deadlock's victim. */
  DEADLOCK_DETECTED: '40P01',
  /** 40001 serialization_failure. */
  SERIALIZATION_FAILURE: '40001',
  /** 25P01 no_active_sql_transaction: LOCK TABLE or SAVEPOINT outside a transaction block (the `tx` check). */
  NO_ACTIVE_SQL_TRANSACTION: '25P01',
  /** 25006 read_only_sql_transaction: a standby (after a failover, the wrong node): not a retry here. */
  READ_ONLY_SQL_TRANSACTION: '25006',
  /**
   * 0A000 feature_not_supported; among others "cached plan must not change result type": a prepared
   * statement whose result columns changed since it was prepared (see {@link isCachedPlanChanged}).
   */
  FEATURE_NOT_SUPPORTED: '0A000',
  /** 42703 undefined_column: a statement names a column the schema does not have. */
  UNDEFINED_COLUMN: '42703',
  /** 42883 undefined_function: e.g. a function a newer or older migration made. */
  UNDEFINED_FUNCTION: '42883',
  /** 42804 datatype_mismatch. */
  DATATYPE_MISMATCH: '42804',
  /** 23502 not_null_violation: e.g. an insert that leaves out a NOT NULL column without a default. */
  NOT_NULL_VIOLATION: '23502',
} as const);

/**
 * SQLSTATEs that may mean "the schema's shape is not the one this code was written for" (a column
 * or table missing, a type or constraint changed): on one of them the store reads the schema's
 * migration version and throws `SchemaVersionError` when it differs from the code's
 * (`PostgresStore`, README "Failure modes", version skew). Read only on these errors: no cost on
 * the way of a call that succeeds.
 */
export const SHAPE_SQLSTATES: ReadonlySet<string> = new Set([
  SqlState.UNDEFINED_TABLE,
  SqlState.INVALID_SCHEMA_NAME,
  SqlState.UNDEFINED_COLUMN,
  SqlState.UNDEFINED_FUNCTION,
  SqlState.DATATYPE_MISMATCH,
  SqlState.NOT_NULL_VIOLATION,
  SqlState.CHECK_VIOLATION,
  SqlState.FEATURE_NOT_SUPPORTED,
]);

/**
 * True when `error` is PostgreSQL's "cached plan must not change result type" (0A000, raised by
 * `RevalidateCachedQuery` when a prepared statement is bound again after DDL changed its result
 * columns, e.g. a `select t.*` after a column was added to the table). Raised at Bind, before the
 * statement ran: it wrote nothing, so the same call on a statement prepared afresh is safe. The
 * prepared statement stays broken on its connection until it is prepared again, so the pg adapter
 * renames it and retries once (postgres.js drops it from its cache and retries on its own).
 */
export function isCachedPlanChanged(error: unknown): boolean {
  if (sqlStateOf(error) !== SqlState.FEATURE_NOT_SUPPORTED) return false;
  const routine = propertyOf(error, 'routine');
  return routine === 'RevalidateCachedQuery' || messageIncludes(error, 'cached plan must not change result type');
}

/**
 * SQLSTATEs that say nothing about the statement's own verdict: the database cut it short and rolled
 * it back (statement or lock timeout, cancel, deadlock victim, serialization failure) or the server
 * went away under it (admin or crash shutdown, cannot connect now). Trying the same call again may
 * succeed, and a fenced write (complete, fail, release, extend) is safe to try again: if an earlier
 * try did commit, the retry answers as a committed or stale attempt. The typed error says so with
 * `transient: true` (a {@link StoreError}; 57P01–57P03 surface as connection errors, retried as such).
 *
 * Not here: 0A000 as a whole (feature_not_supported mostly means a statement PostgreSQL will refuse
 * every time); its one no-verdict case, a cached plan whose result type changed, is told apart by
 * {@link isCachedPlanChanged} and is `transient` too. Nor 25006 read_only_sql_transaction, which means "wrong node" after a failover (retrying on
 * the same connection gets the same answer): it is `transient` for another reason, because the adapter discards the connection that
 * met it ({@link isReadOnlyNode}). Nor any error about the statement itself.
 */
export const NO_VERDICT_SQLSTATES: ReadonlySet<string> = new Set([
  SqlState.QUERY_CANCELED,
  SqlState.LOCK_NOT_AVAILABLE,
  SqlState.DEADLOCK_DETECTED,
  SqlState.SERIALIZATION_FAILURE,
  SqlState.ADMIN_SHUTDOWN,
  SqlState.CRASH_SHUTDOWN,
  SqlState.CANNOT_CONNECT_NOW,
]);

/**
 * True when `error` is 25006 read_only_sql_transaction: the statement was refused because the server
 * (or this session) is read-only: a standby, or the old primary after a failover, reached through a
 * connection opened before the switch or through a DNS name that still points at it. It says "wrong
 * node", not "try here again": the statement wrote nothing, the connection that ran it is discarded
 * by the adapter (never handed back to its pool), and the call may be retried on a new connection.
 */
export function isReadOnlyNode(error: unknown): boolean {
  return sqlStateOf(error) === SqlState.READ_ONLY_SQL_TRANSACTION;
}

/** Extra words for SQLSTATEs whose usual cause is a known mistake. */
const HINTS: Readonly<Record<string, string>> = {
  [SqlState.READ_ONLY_SQL_TRANSACTION]: ' (wrong node: a read-only server, e.g. the old primary after a failover; the connection was discarded, a retry takes a new one)',
  [SqlState.UNDEFINED_TABLE]: ' (hint: call store.migrate() once for this schema)',
  [SqlState.INVALID_SCHEMA_NAME]: ' (hint: call store.migrate() once for this schema)',
};

const CONNECTION_SQLSTATES: ReadonlySet<string> = new Set([SqlState.ADMIN_SHUTDOWN, SqlState.CRASH_SHUTDOWN]);
const PAYLOAD_SQLSTATES: ReadonlySet<string> = new Set([SqlState.CHARACTER_NOT_IN_REPERTOIRE, SqlState.UNTRANSLATABLE_CHARACTER]);

/** Node socket errors and postgres.js connection codes meaning "the connection is gone or never came". */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECT_TIMEOUT',
  // `@postpone/postgres` socket.ts: no reply within replyTimeoutMs (a half-open connection).
  'REPLY_TIMEOUT',
]);

/** Connection-phase failures: nothing was sent, the server never took the call. */
const CONNECT_SQLSTATES: Readonly<Record<string, ConnectionFailure>> = {
  [SqlState.INVALID_PASSWORD]: 'AUTHENTICATION',
  [SqlState.INVALID_AUTHORIZATION]: 'AUTHENTICATION',
  [SqlState.INVALID_CATALOG_NAME]: 'DATABASE_MISSING',
  [SqlState.TOO_MANY_CONNECTIONS]: 'TOO_MANY_CONNECTIONS',
  [SqlState.CANNOT_CONNECT_NOW]: 'REFUSED',
};
const CONNECT_CODES: Readonly<Record<string, ConnectionFailure>> = {
  ECONNREFUSED: 'REFUSED',
  ENOTFOUND: 'DNS',
  EAI_AGAIN: 'DNS',
  EAI_FAIL: 'DNS',
  EHOSTUNREACH: 'UNREACHABLE',
  ENETUNREACH: 'UNREACHABLE',
  CONNECT_TIMEOUT: 'TIMEOUT',
  EPROTO: 'TLS',
};
/** node-postgres connect-phase messages without a code. */
const CONNECT_MESSAGES: readonly (readonly [string, ConnectionFailure])[] = [
  ['timeout expired', 'TIMEOUT'],
  ['timeout exceeded when trying to connect', 'TIMEOUT'],
  ['Connection terminated due to connection timeout', 'TIMEOUT'],
  ['The server does not support SSL connections', 'TLS'],
  ['self-signed certificate', 'TLS'],
  // Node, when the server answers the SSLRequest with 'N' and postgres.js starts TLS anyway.
  ['Client network socket disconnected before secure TLS connection was established', 'TLS'],
  // pg, when the server asks for a SCRAM password and the connection settings give none.
  ['SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string', 'AUTHENTICATION'],
];
/** Node TLS error codes (ERR_TLS_*, ERR_SSL_*, OpenSSL certificate codes). */
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_(GET|VERIFY)_|HOSTNAME_MISMATCH$)/;

/** What a connection-phase failure is, or undefined when `error` is not one. */
function connectFailureOf(error: unknown, depth = 0): ConnectionFailure | undefined {
  if (typeof error !== 'object' || error === null || depth > 3) return undefined;
  const code = codeOf(error);
  if (code !== undefined) {
    const bySqlState = sqlStateOf(error) === undefined ? undefined : CONNECT_SQLSTATES[code];
    if (bySqlState !== undefined) return bySqlState;
    if (Object.hasOwn(CONNECT_CODES, code)) return CONNECT_CODES[code];
    if (TLS_CODE.test(code)) return 'TLS';
  }
  const message = propertyOf(error, 'message');
  if (typeof message === 'string') {
    const hit = CONNECT_MESSAGES.find(([m]) => message.startsWith(m));
    if (hit) return hit[1];
  }
  const errors = propertyOf(error, 'errors');
  if (Array.isArray(errors)) {
    for (const e of errors) {
      const failure = connectFailureOf(e, depth + 1);
      if (failure !== undefined) return failure;
    }
  }
  return connectFailureOf(propertyOf(error, 'cause'), depth + 1);
}

/**
 * SQLSTATE classes that say "the driver or the connection failed", not "your statement is wrong":
 * 08 connection, 25 invalid transaction state (e.g. 25006 read-only), 26 prepared statement
 * missing, 40 rollback (serialization, deadlock), 53 insufficient resources, 57 operator
 * intervention, 58 system error; and 42P05 (duplicate prepared statement), and a prepared
 * statement whose cached plan changed result type (0A000, {@link isCachedPlanChanged}).
 */
const DRIVER_LEVEL_CLASSES: ReadonlySet<string> = new Set(['08', '25', '26', '40', '53', '57', '58']);

/**
 * True when `error` (thrown by the caller's `work` inside complete) is a failure of the connection
 * or the driver, or a cut the database made, rather than of the caller's own logic: a
 * {@link PostponeError} other than a refusal of the work's own call (`isRefusal` of core: a
 * `store.schedule(…, { tx })` with bad input is the work's failure), a connection failure, a server
 * error of a `DRIVER_LEVEL_CLASSES` class, or any of {@link NO_VERDICT_SQLSTATES} — so a work's
 * `lock_timeout` (55P03 of class 55) is tried again like its `statement_timeout` (57014). Not a
 * 55P03 of the work's own `NOWAIT` ({@link isLockTimeout}): that is an answer the work asked for.
 */
export function isDriverLevelError(error: unknown): boolean {
  if (PostponeError.isInstance(error)) return !isRefusal(error);
  if (isConnectionFailure(error) || isEnded(error) || connectFailureOf(error) !== undefined) return true;
  const sqlState = sqlStateOf(error);
  if (sqlState === SqlState.LOCK_NOT_AVAILABLE) return isLockTimeout(error);
  return (
    sqlState !== undefined &&
    (DRIVER_LEVEL_CLASSES.has(sqlState.slice(0, 2)) ||
      NO_VERDICT_SQLSTATES.has(sqlState) ||
      sqlState === SqlState.DUPLICATE_PREPARED_STATEMENT ||
      isCachedPlanChanged(error))
  );
}

/**
 * True when `error` is 55P03 raised because `lock_timeout` ran out: PostgreSQL raises it from
 * `ProcessInterrupts` ("canceling statement due to lock timeout", src/backend/tcop/postgres.c),
 * while a `NOWAIT` lock that is not free raises the same code from the lock or heap code ("could not
 * obtain lock on …"). Told apart by the error's `routine` field, which is never translated, else by
 * the English message.
 */
export function isLockTimeout(error: unknown): boolean {
  if (sqlStateOf(error) !== SqlState.LOCK_NOT_AVAILABLE) return false;
  const routine = propertyOf(error, 'routine');
  return routine === 'ProcessInterrupts' || messageIncludes(error, 'lock timeout');
}

/** postgres.js codes meaning "`sql.end()` was called" (the owner closed it). */
const ENDED_CODES: ReadonlySet<string> = new Set(['CONNECTION_ENDED', 'CONNECTION_DESTROYED']);

/** node-postgres messages (it throws plain Errors without a code for these). */
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Query read timeout',
];
const POOL_ENDED_MESSAGE = 'Cannot use a pool after calling end on the pool';

/**
 * `value[name]`, or undefined when reading it throws: what a caller threw may be a revoked Proxy or an
 * object whose getter throws, and classifying it must never replace it with a TypeError of our own.
 */
function propertyOf(value: unknown, name: string): unknown {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    return (value as Record<string, unknown>)[name];
  } catch {
    return undefined;
  }
}

/** Whether `error`'s message (read as {@link propertyOf} does) contains `text`. */
function messageIncludes(error: unknown, text: string): boolean {
  const message = propertyOf(error, 'message');
  return typeof message === 'string' && message.includes(text);
}

function codeOf(error: unknown): string | undefined {
  const code = propertyOf(error, 'code');
  return typeof code === 'string' ? code : undefined;
}

function isConnectionFailure(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 3) return false;
  const code = codeOf(error);
  if (code !== undefined && (CONNECTION_CODES.has(code) || CONNECTION_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  const message = propertyOf(error, 'message');
  if (typeof message === 'string' && CONNECTION_MESSAGES.some((m) => message.startsWith(m))) return true;
  // Node's happy-eyeballs connect reports an AggregateError of the per-address failures.
  const errors = propertyOf(error, 'errors');
  if (Array.isArray(errors) && errors.some((e) => isConnectionFailure(e, depth + 1))) return true;
  return isConnectionFailure(propertyOf(error, 'cause'), depth + 1);
}

/** True when `error` says an established connection was lost (not a connect-phase failure). */
export function isConnectionLoss(error: unknown): boolean {
  return connectFailureOf(error) === undefined && isConnectionFailure(error);
}

function isEnded(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined && ENDED_CODES.has(code)) return true;
  return propertyOf(error, 'message') === POOL_ENDED_MESSAGE;
}

/** The SQLSTATE of a server error from either driver, if it has one. */
export function sqlStateOf(error: unknown): string | undefined {
  const code = codeOf(error);
  const severity = propertyOf(error, 'severity');
  return code !== undefined && typeof severity === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** The SQLSTATE of `error` or of the first server error in its `cause` chain (an executor's own wrapper). */
export function innerSqlStateOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const sqlState = sqlStateOf(current);
    if (sqlState !== undefined) return sqlState;
    current = propertyOf(current, 'cause');
  }
  return undefined;
}

/**
 * The commit of a transaction that notified met a full NOTIFY queue: SQLSTATE 54000 (program limit
 * exceeded) with PostgreSQL's message "too many notifications in the NOTIFY queue" (src/backend/commands/async.c,
 * `PreCommit_Notify`; raised only at commit, so the transaction wrote nothing).
 */
export function isNotifyQueueFull(error: unknown): boolean {
  return sqlStateOf(error) === '54000' && messageIncludes(error, 'NOTIFY queue');
}

/**
 * Translates a driver error into a core typed error.
 *
 * - a {@link PostponeError} passes through unchanged (e.g. the `PoolTimeoutError` the pg driver makes of
 *   pg-pool's wait timeout when the pool is full, `drivers/pg.ts`);
 * - the store was closed, or the pool / `sql` was ended → {@link @postpone/core!StoreClosedError};
 * - a connection that could not be made → {@link @postpone/core!ConnectionError} naming the reason (REFUSED,
 *   DNS, UNREACHABLE, TIMEOUT, TLS, AUTHENTICATION 28P01/28000, DATABASE_MISSING 3D000,
 *   TOO_MANY_CONNECTIONS 53300; 57P03 counts as REFUSED) and keeping the SQLSTATE;
 * - connection failures (Node socket codes, node-postgres "Connection terminated…", postgres.js
 *   `CONNECTION_CLOSED` / `CONNECT_TIMEOUT`, SQLSTATE class 08, 57P01–57P03) → {@link @postpone/core!ConnectionLostError};
 * - 22021 / 22P05 (text the database cannot store) → {@link @postpone/core!ValidationError} `INVALID_PAYLOAD`;
 * - anything else → {@link @postpone/core!StoreError} with its SQLSTATE (undefined when not a server error),
 *   `transient: true` when the SQLSTATE is one of {@link NO_VERDICT_SQLSTATES} (57014, 55P03, 40P01, 40001),
 *   or 25006 on a read-only node ({@link isReadOnlyNode}: wrong node, its connection discarded, nothing written),
 *   or for a prepared statement whose cached plan changed result type (0A000 from `RevalidateCachedQuery`,
 *   {@link isCachedPlanChanged}: raised before the statement ran, so it wrote nothing).
 *
 * @param closed whether the store had been closed when the error surfaced
 */
export function translateError(error: unknown, closed = false): PostponeError {
  if (PostponeError.isInstance(error)) return error;
  if (closed || isEnded(error)) return new StoreClosedError('store is closed', { cause: error });
  const failure = connectFailureOf(error);
  if (failure !== undefined) {
    const sqlState = sqlStateOf(error);
    return new ConnectionError(
      failure,
      `could not connect to PostgreSQL (${failure}${sqlState ? `, SQLSTATE ${sqlState}` : ''}): ${messageOf(error)}`,
      sqlState,
      { cause: error },
    );
  }
  if (isConnectionFailure(error)) {
    return new ConnectionLostError(`connection to PostgreSQL lost: ${messageOf(error)}`, { cause: error });
  }
  const sqlState = sqlStateOf(error);
  if (sqlState !== undefined && PAYLOAD_SQLSTATES.has(sqlState)) {
    return new ValidationError('INVALID_PAYLOAD', 'payload', `PostgreSQL cannot store this text (SQLSTATE ${sqlState}): ${messageOf(error)}`, {
      cause: error,
    });
  }
  const hint = sqlState === undefined ? '' : (HINTS[sqlState] ?? '');
  // 25006 (read-only node) wrote nothing and its connection was discarded: a retry goes to a new connection.
  const transient = sqlState !== undefined && (NO_VERDICT_SQLSTATES.has(sqlState) || isCachedPlanChanged(error) || isReadOnlyNode(error));
  return new StoreError(`PostgreSQL error${sqlState ? ` ${sqlState}` : ''}: ${messageOf(error)}${hint}`, sqlState, { cause: error, transient });
}

function messageOf(error: unknown): string {
  const message = propertyOf(error, 'message');
  if (typeof message === 'string' && message !== '') return message;
  const name = propertyOf(error, 'name');
  if (typeof name === 'string' && name !== '') return name;
  try {
    return String(error);
  } catch {
    return '[unreadable]';
  }
}
