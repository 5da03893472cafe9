/**
 * `@postpone/postgres/knex` — a Knex transaction as the `tx` of a PostgreSQL store (Knex 3 with the `pg`
 * client, a peer dependency).
 *
 * ```ts
 * await knex.transaction(async (trx) => {
 *   await trx('reservation').insert({ id: 42, status: 'pending' });
 *   await store.schedule({ kind: 'close-reservation', payload: { id: 42 }, delayMs: 30 * 60_000 }, { tx: knexTx(trx) });
 * });
 * ```
 */
import type { Knex } from 'knex';
import { notATransaction, type Param, type Row, type SqlExecutor, splitPlaceholders, transactionEnded, unwrapped } from './adapter.js';

/**
 * The statement in Knex's raw form: each `$n` becomes a `?` with its value at that position, and a
 * `?` of the text (a jsonb operator) is escaped as `\?`, so Knex's pg client numbers them back to
 * `$1..$k` (see `splitPlaceholders`).
 */
export function knexStatement(text: string, params: readonly Param[] = []): { sql: string; bindings: Param[] } {
  const bindings: Param[] = [];
  const sql = splitPlaceholders(text)
    .map((piece) => {
      if (typeof piece === 'string') return piece.replaceAll('?', '\\?');
      bindings.push(params[piece] ?? null);
      return '?';
    })
    .join('');
  return { sql, bindings };
}

/**
 * An {@link SqlExecutor} on `trx`: each statement goes through `trx.raw(sql, bindings)` on the
 * transaction's connection (see {@link knexStatement}).
 * @param trx the `trx` of `knex.transaction(async (trx) => …)` or of `await knex.transaction()`
 * @throws ValidationError NOT_IN_TRANSACTION `tx` when `trx` is not a Knex transaction (e.g. the top-level `knex`);
 *   its executor throws it too once `trx` has committed or rolled back
 */
export function knexTx(trx: Knex.Transaction): SqlExecutor {
  if ((trx as { isTransaction?: unknown } | null)?.isTransaction !== true) {
    throw notATransaction('the trx of knex.transaction() (not the top-level knex)');
  }
  return {
    query: (text: string, params?: readonly Param[]) =>
      unwrapped(async () => {
        // Knex refuses a finished trx with a plain Error ("Transaction query already complete").
        if ((trx as { isCompleted?: () => boolean }).isCompleted?.() === true) throw transactionEnded('Knex');
        const { sql, bindings } = knexStatement(text, params);
        return { rows: ((await trx.raw(sql, bindings)) as { rows: Row[] }).rows };
      }),
  };
}
