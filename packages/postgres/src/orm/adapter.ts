/**
 * @postpone/postgres — schedule and cancel Postpone tasks inside the transaction of the ORM an application
 * already uses, so "close reservation 42 in 30 minutes" commits or rolls back with the reservation's
 * own insert (docs/contract.md#transactions). One entry per ORM, each a peer dependency of its own:
 *
 * - `@postpone/postgres/kysely` — `kyselyTx(trx)` (Kysely 0.29, `db.transaction()` or `db.startTransaction()`)
 * - `@postpone/postgres/drizzle` — `drizzleTx(tx)` (Drizzle 0.45, `db.transaction(async (tx) => …)`)
 * - `@postpone/postgres/knex` — `knexTx(trx)` (Knex 3, `knex.transaction(async (trx) => …)`)
 * - `@postpone/postgres/prisma` — `prismaTx(tx)` (Prisma 7 with `@prisma/adapter-pg`, `prisma.$transaction(async (tx) => …)`)
 *
 * Each returns an {@link SqlExecutor} for `store.schedule(…, { tx })`, `scheduleMany` and `cancel`
 * of a PostgreSQL store (`@postpone/postgres`, either driver). The store's own SQL runs through the
 * ORM's raw-query call on the transaction's connection: its parameters are primitives (text, number,
 * boolean, null) cast in the SQL (`$1::timestamptz`, `$2::text::jsonb`, `$2::bigint`), and its rows
 * come back as text ids, float8 epoch milliseconds and booleans, which every ORM returns as they are.
 *
 * Given something that is not an open transaction — the ORM's top-level client, or a transaction
 * handle kept after its transaction ended — the adapter or the store throws `ValidationError`
 * `NOT_IN_TRANSACTION` (`tx`) before anything is written: the store checks the connection with one
 * short statement first (`LOCK TABLE … IN ACCESS SHARE MODE`, 25P01 outside a transaction block).
 */
import { ValidationError } from '@postpone/core';
import type { Param, Row, SqlExecutor } from '../store/driver.js';

export type { Param, Row, SqlExecutor };

/** A piece of a statement: SQL text, or the 0-based index of the parameter a `$n` placeholder names. */
export type StatementPiece = string | number;

/**
 * Splits `text` at its `$n` placeholders, outside quoted literals ('…'), quoted identifiers ("…") and
 * `--` comments (PostgreSQL 17 §4.1): `select $2::int, '$1'` → `['select ', 1, "::int, '$1'"]`. For
 * ORMs whose raw call numbers parameters itself (Drizzle's `sql.param`, Knex's `?`): each occurrence
 * becomes its own parameter with the same value, and every placeholder of the store's SQL carries
 * its own cast, so each keeps its type.
 */
export function splitPlaceholders(text: string): StatementPiece[] {
  const pieces: StatementPiece[] = [];
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1); // a doubled quote ('' or "") closes and reopens: same result
      i = end === -1 ? text.length : end + 1;
    } else if (c === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
    } else if (c === '$' && /[0-9]/.test(text[i + 1] ?? '') && !/[A-Za-z0-9_]/.test(text[i - 1] ?? '')) {
      const digits = /^[0-9]+/.exec(text.slice(i + 1))?.[0] as string;
      if (i > start) pieces.push(text.slice(start, i));
      pieces.push(Number(digits) - 1);
      i += 1 + digits.length;
      start = i;
    } else {
      i++;
    }
  }
  if (start < text.length) pieces.push(text.slice(start));
  return pieces;
}

/**
 * The database error inside what an ORM threw, so the store translates it as its own
 * (`ConnectionLostError`, `StoreError` with the SQLSTATE…): the first error in the `cause` chain
 * (Drizzle's `DrizzleQueryError`) or in Prisma's `meta.driverAdapterError.cause` that carries a
 * server `severity`; `error` itself when none does. A plain object found there becomes an `Error`
 * with its `message`, `code` and `severity` (the ORM's error as `cause`).
 */
export function driverErrorOf(error: unknown): unknown {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const e = current as { severity?: unknown; cause?: unknown; code?: unknown; message?: unknown; meta?: { driverAdapterError?: unknown } };
    if (typeof e.severity === 'string') {
      if (current instanceof Error) return current;
      return Object.assign(new Error(String(e.message), { cause: error }), { code: e.code, severity: e.severity });
    }
    current = e.cause ?? e.meta?.driverAdapterError;
  }
  return error;
}

/** Runs `op`, rethrowing the driver error an ORM wrapped (see {@link driverErrorOf}). */
export async function unwrapped<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (error) {
    throw driverErrorOf(error);
  }
}

/** ValidationError NOT_IN_TRANSACTION `tx`: `value` is not an open transaction of the ORM (a top-level client would write outside it). */
export function notATransaction(what: string): ValidationError {
  return new ValidationError('NOT_IN_TRANSACTION', 'tx', `must be ${what}`);
}

/**
 * ValidationError NOT_IN_TRANSACTION `tx`: the ORM says its transaction already ended (committed or
 * rolled back), so nothing was sent. `cause` is the ORM's own error when it threw one.
 */
export function transactionEnded(orm: string, cause?: unknown): ValidationError {
  return new ValidationError('NOT_IN_TRANSACTION', 'tx', `the ${orm} transaction already ended (a handle kept past its transaction): nothing was written`, { cause });
}
