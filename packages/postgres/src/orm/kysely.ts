/**
 * `@postpone/postgres/kysely` — a Kysely transaction as the `tx` of a PostgreSQL store (Kysely 0.29 with
 * its `PostgresDialect`, a peer dependency).
 *
 * ```ts
 * await db.transaction().execute(async (trx) => {
 *   await trx.insertInto('reservation').values({ id: 42, status: 'pending' }).execute();
 *   await store.schedule({ kind: 'close-reservation', payload: { id: 42 }, delayMs: 30 * 60_000 }, { tx: kyselyTx(trx) });
 * });
 * ```
 */
import { CompiledQuery, type Kysely } from 'kysely';
import { notATransaction, type Param, type Row, type SqlExecutor, unwrapped } from './adapter.js';

/**
 * An {@link SqlExecutor} on `trx`: each statement goes through `trx.executeQuery(CompiledQuery.raw(text,
 * params))`, text and `$n` parameters unchanged, on the transaction's connection.
 * @param trx the `trx` of `db.transaction().execute(…)` or of `db.startTransaction().execute()`
 * @throws ValidationError INVALID_OPTION `tx` when `trx` is not a transaction (e.g. the top-level `db`)
 */
export function kyselyTx(trx: Kysely<any>): SqlExecutor {
  if ((trx as { isTransaction?: unknown } | null)?.isTransaction !== true) {
    throw notATransaction('the trx of db.transaction().execute() or db.startTransaction() (not the top-level db)');
  }
  return {
    query: (text: string, params: readonly Param[] = []) =>
      unwrapped(async () => ({ rows: (await trx.executeQuery<Row>(CompiledQuery.raw(text, [...params]))).rows })),
  };
}
