/**
 * `@postpone/postgres/drizzle` — a Drizzle transaction as the `tx` of a PostgreSQL store (drizzle-orm 0.45,
 * a peer dependency; node-postgres driver, and any PostgreSQL driver whose `execute` returns rows).
 *
 * ```ts
 * await db.transaction(async (tx) => {
 *   await tx.insert(reservation).values({ id: 42, status: 'pending' });
 *   await store.schedule({ kind: 'close-reservation', payload: { id: 42 }, delayMs: 30 * 60_000 }, { tx: drizzleTx(tx) });
 * });
 * ```
 */
import { is, type SQL, sql } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import { notATransaction, type Param, type Row, type SqlExecutor, splitPlaceholders, unwrapped } from './adapter.js';

/**
 * The statement as a Drizzle `SQL`: text as `sql.raw`, each `$n` as `sql.param(params[n-1])`, which
 * Drizzle numbers again in order of appearance (see `splitPlaceholders`); the driver binds the values.
 */
export function drizzleStatement(text: string, params: readonly Param[] = []): SQL {
  return sql.join(splitPlaceholders(text).map((piece) => (typeof piece === 'number' ? sql.param(params[piece] ?? null) : sql.raw(piece))));
}

/**
 * An {@link SqlExecutor} on `tx`: each statement goes through `tx.execute(…)` on the transaction's
 * connection (see {@link drizzleStatement}).
 * @param tx the `tx` of `db.transaction(async (tx) => …)` (a nested `tx.transaction` too: it is a savepoint)
 * @throws ValidationError NOT_IN_TRANSACTION `tx` when `tx` is not a Drizzle PostgreSQL transaction (e.g. the top-level
 *   `db`); a `tx` kept past its transaction is refused by the store's check (its connection is back in the pool)
 */
export function drizzleTx(tx: PgTransaction<any, any, any>): SqlExecutor {
  if (!is(tx, PgTransaction)) throw notATransaction('the tx of db.transaction(async (tx) => …) (not the top-level db)');
  return {
    query: (text: string, params?: readonly Param[]) =>
      unwrapped(async () => {
        const result = (await tx.execute(drizzleStatement(text, params))) as unknown as Row[] | { rows: Row[] };
        return { rows: Array.isArray(result) ? result : result.rows };
      }),
  };
}
