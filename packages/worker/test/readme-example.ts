/**
 * The README's worker example, kept here so `tsc` (typecheck) proves it compiles. Not run.
 */
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import { createWorker } from '../src/index.js';

export async function readmeExample(databaseUrl: string): Promise<void> {
  const store = createPgStore({ connectionString: databaseUrl });
  await store.migrate();

  type Payloads = {
    'expire-reservation': { reservationId: number };
  };

  const worker = createWorker<PgTx, Payloads>({
    store,
    concurrency: 10, // handlers running at once
    leaseMs: 30_000, // lease per claim and per renewal (database clock)
    renewEveryMs: 10_000, // renewal period (monotonic clock), below leaseMs
    pollIntervalMs: 1_000, // wait between claims when nothing more is due
    backoffBaseMs: 1_000, // retry n is due after 1 s × 2^(n−1)…
    maxBackoffMs: 3_600_000, // …capped at one hour
    shutdownTimeoutMs: 10_000, // stop(): let handlers finish this long, then hand back
    logLevel: 'info',
    handlers: {
      'expire-reservation': async (task, ctx) => {
        const { reservationId } = task.payload;
        // External call: the key is the same for every attempt of this task, so a retry after a
        // crash is applied once. The signal aborts on lease loss, cancel, timeout or shutdown.
        const response = await fetch('https://payments.example/holds/release', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': ctx.idempotencyKey },
          body: JSON.stringify({ reservationId }),
          signal: ctx.signal,
        });
        if (!response.ok) throw new Error(`payments answered ${response.status}`); // retried after backoff

        // Local write in the completing transaction: it commits with DONE, or not at all.
        ctx.onCompleteTx(async (tx) => {
          await tx.query(`update reservation set status = 'expired' where id = $1 and status = 'pending'`, [reservationId]);
        });
        return { released: true }; // the task's JSON result
      },
    },
  });
  worker.installSignalHandlers({ onStopped: () => store.close() });
  worker.start();

  await store.schedule({ kind: 'expire-reservation', payload: { reservationId: 42 }, delayMs: 30 * 60_000, maxAttempts: 5 });
}
