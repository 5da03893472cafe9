/**
 * What one evidence case gets: a fresh schema migrated by the real store, a test-side store and pool,
 * a process group for its workers, and teardown that kills every child, closes every server and drops
 * the schema — whatever happened.
 */
import { uniqueSchemaName, dropSchema } from '@postpone/embedded';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import type { Store } from '@postpone/core';
import { ExternalService } from './faults/external-service.js';
import { TcpProxy } from '@postpone/testkit';
import type { ChildConfig } from './child/protocol.js';
import { NegativeControls } from './child/negative/controls.js';
import pg from 'pg';
import { createAppEffectTable } from './app-effect.js';
import { DbInspector } from './db-inspect.js';
import { spawnHarnessChild, type HarnessChild } from './harness-child.js';
import { ProcessGroup } from './process-group.js';

export interface CaseContext {
  readonly databaseUrl: string;
  readonly schema: string;
  /** A pool of the test process (10 connections). */
  readonly pool: pg.Pool;
  /** The real store, from the test process (schedule, cancel, read). */
  readonly store: Store<PgTx>;
  readonly db: DbInspector;
  readonly negative: NegativeControls;
  readonly group: ProcessGroup;
  /** Spawns a child on this case's database and schema. */
  spawn(config: Omit<ChildConfig, 'databaseUrl' | 'schema'> & { readonly databaseUrl?: string }): HarnessChild;
  /** A fake external service, closed at teardown. */
  externalService(): Promise<ExternalService>;
  /** A TCP proxy in front of the database, closed at teardown. */
  proxy(): Promise<TcpProxy>;
}

/**
 * Runs `body` with a fresh case context and always tears it down.
 * @param databaseUrl the server to use
 * @param prefix schema name prefix
 * @param options `migrate: false` leaves the schema to the body (default: migrated)
 */
export async function withCaseContext<T>(
  databaseUrl: string,
  prefix: string,
  body: (ctx: CaseContext) => Promise<T>,
  options: { readonly migrate?: boolean } = {},
): Promise<T> {
  const schema = uniqueSchemaName(prefix);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  pool.on('error', () => {});
  const store = createPgStore({ pool, schema });
  const group = new ProcessGroup();
  const closers: (() => Promise<void>)[] = [];
  const ctx: CaseContext = {
    databaseUrl,
    schema,
    pool,
    store,
    db: new DbInspector(pool, schema),
    negative: new NegativeControls(pool, schema),
    group,
    spawn: (config) => spawnHarnessChild(group, { databaseUrl, schema, ...config }),
    async externalService() {
      const service = await ExternalService.start();
      closers.push(() => service.close());
      return service;
    },
    async proxy() {
      const proxy = await TcpProxy.forUrl(databaseUrl);
      closers.push(() => proxy.close());
      return proxy;
    },
  };
  try {
    if (options.migrate !== false) {
      await store.migrate();
      await createAppEffectTable(pool, schema);
    }
    return await body(ctx);
  } finally {
    await group.killAll();
    for (const close of closers.reverse()) await close().catch(() => {});
    await store.close().catch(() => {});
    await pool.end().catch(() => {});
    await dropSchema(databaseUrl, schema).catch(() => {});
  }
}
