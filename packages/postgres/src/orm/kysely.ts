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
import { notATransaction, type Param, type Row, type SqlExecutor, transactionEnded, unwrapped } from './adapter.js';

/**
 * An {@link SqlExecutor} on `trx`: each statement goes through `trx.executeQuery(CompiledQuery.raw(text,
 * params))`, text and `$n` parameters unchanged, on the transaction's connection.
 * @param trx the `trx` of `db.transaction().execute(…)` or of `db.startTransaction().execute()`
 * @throws ValidationError NOT_IN_TRANSACTION `tx` when `trx` is not a transaction (e.g. the top-level `db`, or
 *   `db.connection()`); its executor throws it too once `trx` has committed or rolled back
 */
export function kyselyTx(trx: Kysely<any>): SqlExecutor {
  if ((trx as { isTransaction?: unknown } | null)?.isTransaction !== true) {
    throw notATransaction('the trx of db.transaction().execute() or db.startTransaction() (not the top-level db)');
  }
  return {
    query: (text: string, params: readonly Param[] = []) =>
      unwrapped(async () => {
        try {
          return { rows: (await trx.executeQuery<Row>(CompiledQuery.raw(text, [...params]))).rows };
        } catch (error) {
          // Kysely 0.29 refuses a finished trx with a plain Error, before sending anything.
          if (error instanceof Error && /^Transaction is already (committed|rolled back)$/.test(error.message)) throw transactionEnded('Kysely', error);
          throw error;
        }
      }),
  };
}
