/**
 * `@postpone/postgres/prisma` — a Prisma interactive transaction as the `tx` of a PostgreSQL store (Prisma 7
 * with the `@prisma/adapter-pg` driver adapter; the generated client is yours, so nothing is imported).
 *
 * ```ts
 * await prisma.$transaction(async (tx) => {
 *   await tx.reservation.create({ data: { id: 42, status: 'pending' } });
 *   await store.schedule({ kind: 'close-reservation', payload: { id: 42 }, delayMs: 30 * 60_000 }, { tx: prismaTx(tx) });
 * });
 * ```
 */
import { notATransaction, type Param, type Row, type SqlExecutor, transactionEnded, unwrapped } from './adapter.js';

/** What this adapter needs of a Prisma transaction client (the `tx` of `prisma.$transaction(async (tx) => …)`). */
export interface PrismaTransactionClient {
  $queryRawUnsafe<T = unknown>(query: string, ...values: any[]): PromiseLike<T>;
}

/**
 * An {@link SqlExecutor} on `tx`: each statement goes through `tx.$queryRawUnsafe(text, ...params)`,
 * text and `$n` parameters unchanged, on the interactive transaction's connection. Mind Prisma's
 * interactive-transaction `timeout` (default 5 000 ms): the schedule must fit in it with your writes.
 * @throws ValidationError NOT_IN_TRANSACTION `tx` when `tx` is the top-level client (it has `$disconnect`; Prisma leaves
 *   `$connect`, `$disconnect`, `$on`, `$use` and `$extends` off the transaction client)
 */
export function prismaTx(tx: PrismaTransactionClient): SqlExecutor {
  const client = tx as { $queryRawUnsafe?: unknown; $disconnect?: unknown } | null;
  if (typeof client?.$queryRawUnsafe !== 'function' || typeof client.$disconnect === 'function') {
    throw notATransaction('the tx of prisma.$transaction(async (tx) => …) (not the top-level client)');
  }
  return {
    query: (text: string, params: readonly Param[] = []) =>
      unwrapped(async () => {
        try {
          return { rows: await tx.$queryRawUnsafe<Row[]>(text, ...params) };
        } catch (error) {
          // P2028: "Transaction already closed" (committed, rolled back or timed out), nothing sent.
          if ((error as { code?: unknown } | null)?.code === 'P2028') throw transactionEnded('Prisma', error);
          throw error;
        }
      }),
  };
}
