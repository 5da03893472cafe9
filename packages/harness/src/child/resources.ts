/**
 * What a child process holds: its name, a small `pg` pool of its own, and the real PostgreSQL store
 * over that pool in the test's schema.
 */
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import type { Store } from '@postpone/core';
import pg from 'pg';
import type { ChildConfig } from './protocol.js';

export interface ChildResources {
  readonly name: string;
  readonly schema: string;
  readonly pool: pg.Pool;
  readonly store: Store<PgTx>;
  close(): Promise<void>;
}

/** What a child runs: started by the test (or at once), stopped gracefully. */
export interface Runner {
  start(): void;
  stop(): Promise<void>;
}

/**
 * Opens the pool and the store, and makes one round trip, so a child reports `ready` only once it can
 * reach the database (and its first claim pays no connection setup).
 * @throws the driver's error when the database cannot be reached
 */
export async function openResources(config: ChildConfig): Promise<ChildResources> {
  // A worker refuses a shared pool below concurrency + 3 (+1 for LISTEN): see POOL_RESERVE in @postpone/worker.
  const max = config.poolSize ?? (config.run.mode === 'worker' ? config.run.worker.concurrency + 4 : 4);
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max });
  // An idle client whose connection dies is dropped by the pool, which then emits 'error'.
  pool.on('error', () => {});
  const store = createPgStore({ pool, schema: config.schema });
  await pool.query('select 1');
  return {
    name: config.name,
    schema: config.schema,
    pool,
    store,
    async close() {
      await store.close();
      await pool.end();
    },
  };
}
