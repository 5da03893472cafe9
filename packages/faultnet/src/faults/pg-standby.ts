/**
 * A primary and a streaming standby of a fault case's own, for failover cases: two embedded servers
 * on loopback, the standby made from a low-level base backup of the primary (`pg_backup_start` /
 * a file copy / `pg_backup_stop`, PostgreSQL 17 §25.3.4: the embedded binaries have no
 * `pg_basebackup`) and streaming through a physical replication slot. With `synchronous`, the
 * primary's commits wait for the standby's flush (`synchronous_standby_names = '*'`), so every
 * commit a client saw acknowledged is on the standby when it is promoted.
 *
 * The failover the case runs ({@link PgStandbyPair.failover}): the old primary is fenced (made
 * read-only by `default_transaction_read_only = on` and a reload: its open connections stay, and
 * every write on them, and on any connection still routed to it, fails with 25006), the standby
 * catches up and is promoted. The suite's shared server is never touched.
 */
import { chownSync, copyFileSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { TcpProxy, withTimeout } from '@postpone/testkit';
import pg from 'pg';

/** The replication slot the standby streams through (keeps the WAL it still needs on the primary). */
const SLOT = 'failover_standby';
/** `application_name` of the standby's WAL receiver, as `pg_stat_replication` shows it. */
const STANDBY_NAME = 'failover_standby';

/** Files and folders of a data folder a base backup leaves out (PostgreSQL 17 §25.3.4). */
const SKIPPED = new Set(['postmaster.pid', 'postmaster.opts', 'pg_internal.init']);
/** Folders whose contents a base backup leaves out (the folders themselves are kept). */
const EMPTIED = new Set(['pg_wal', 'pg_replslot', 'pg_stat_tmp', 'pgsql_tmp', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_subtrans']);

/** Same settings on both servers: a hot standby needs limits at least the primary's. */
const FLAGS = ['-c', 'max_connections=200', '-c', 'wal_level=replica', '-c', 'max_wal_senders=5', '-c', 'max_replication_slots=5', '-c', 'hot_standby=on'];

/**
 * Copies a live data folder file by file: a file that vanishes during the copy (a temporary file, a
 * dropped relation) is skipped, as a base backup does; the WAL replayed from the backup's start
 * repairs whatever changed meanwhile. Everything is owned by `uid`:`gid` (the server's OS user).
 */
function copyDataFolder(from: string, to: string, uid: number, gid: number): number {
  let files = 0;
  const walk = (src: string, dst: string, emptied: boolean) => {
    let entries: string[];
    try {
      entries = readdirSync(src);
    } catch {
      return; // vanished
    }
    for (const name of entries) {
      if (SKIPPED.has(name)) continue;
      const s = join(src, name);
      const d = join(dst, name);
      let stat: ReturnType<typeof lstatSync>;
      try {
        stat = lstatSync(s);
      } catch {
        continue;
      }
      if (stat.isDirectory()) {
        // Inside an emptied folder only pg_wal/archive_status is kept (a slot's folder without its state would not start).
        if (emptied && name !== 'archive_status') continue;
        mkdirSync(d, { mode: 0o700 });
        chownSync(d, uid, gid);
        if (!emptied) walk(s, d, EMPTIED.has(name));
      } else if (stat.isFile() && !emptied) {
        try {
          copyFileSync(s, d);
          chownSync(d, uid, gid);
          files++;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
    }
  };
  walk(from, to, false);
  return files;
}

/** Runs `fn` with a fresh client on `url` (always ended). */
async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Polls `probe` every 50 ms until it returns true, at most `timeoutMs`. @throws Error naming `what` */
async function until(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (let i = 0; i < Math.ceil(timeoutMs / 50) + 1; i++) {
    if (await probe().catch(() => false)) return;
    if (performance.now() >= deadline) break;
    await sleep(50);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

export interface FailoverTimes {
  /** ms (performance.now) when the old primary was made read-only. */
  readonly fencedAt: number;
  /** ms (performance.now) when `pg_promote` returned on the standby. */
  readonly promotedAt: number;
  /** WAL bytes the standby had not replayed when the primary was fenced. */
  readonly lagBytes: number;
}

export class PgStandbyPair {
  private constructor(
    readonly primary: EmbeddedDatabase,
    readonly standby: EmbeddedDatabase,
    readonly synchronous: boolean,
    /** The replication link: the standby streams through this proxy, which can cut it ({@link cutReplication}). */
    private readonly link: TcpProxy,
  ) {}

  /**
   * Starts a primary, makes a standby from its base backup and waits until it streams (and, with
   * `synchronous`, until it is the primary's synchronous standby).
   * @throws Error when a server does not start or the standby does not stream within 30 s (both servers are stopped)
   */
  static async start(options: { readonly synchronous: boolean }): Promise<PgStandbyPair> {
    const primary = await startEmbeddedPostgres({ postgresFlags: FLAGS });
    let standby: EmbeddedDatabase | undefined;
    let link: TcpProxy | undefined;
    try {
      link = await TcpProxy.forUrl(primary.url);
      standby = await startEmbeddedPostgres({ postgresFlags: FLAGS, onLog: (line) => { if (process.env.POSTPONE_PG_LOG) process.stderr.write(`[standby] ${line}`); } });
      await standby.stopServer('fast');
      const owner = statSync(standby.dataDir);
      await withClient(primary.url, async (c) => {
        await c.query('select pg_create_physical_replication_slot($1, true)', [SLOT]);
        await c.query("select pg_backup_start('failover standby', true)");
        rmSync(standby!.dataDir, { recursive: true, force: true });
        mkdirSync(standby!.dataDir, { mode: 0o700 });
        chownSync(standby!.dataDir, owner.uid, owner.gid);
        copyDataFolder(primary.dataDir, standby!.dataDir, owner.uid, owner.gid);
        const { rows } = await c.query<{ labelfile: string; spcmapfile: string | null }>('select labelfile, spcmapfile from pg_backup_stop(false)');
        const write = (name: string, text: string) => {
          writeFileSync(join(standby!.dataDir, name), text, { mode: 0o600 });
          chownSync(join(standby!.dataDir, name), owner.uid, owner.gid);
        };
        write('backup_label', rows[0]!.labelfile);
        if (rows[0]!.spcmapfile) write('tablespace_map', rows[0]!.spcmapfile);
        write('standby.signal', '');
      });
      const u = new URL(primary.url);
      const conninfo = `host=127.0.0.1 port=${link.port} user=${decodeURIComponent(u.username)} password=${decodeURIComponent(u.password)} application_name=${STANDBY_NAME}`;
      appendFileSync(join(standby.dataDir, 'postgresql.auto.conf'), `primary_conninfo = '${conninfo}'\nprimary_slot_name = '${SLOT}'\n`);
      await withTimeout(standby.startServer(), 30_000, 'the standby to start');
      const pair = new PgStandbyPair(primary, standby, options.synchronous, link);
      await until('the standby to stream', 30_000, async () => (await pair.replicationState()) === 'streaming');
      if (options.synchronous) {
        await withClient(primary.url, async (c) => {
          await c.query(`alter system set synchronous_standby_names = '${STANDBY_NAME}'`);
          await c.query('select pg_reload_conf()');
        });
        await until('the standby to be synchronous', 10_000, async () =>
          withClient(primary.url, async (c) => (await c.query("select 1 from pg_stat_replication where sync_state = 'sync'")).rowCount === 1),
        );
      }
      return pair;
    } catch (error) {
      await link?.close().catch(() => {});
      await standby?.stop().catch(() => {});
      await primary.stop().catch(() => {});
      throw error;
    }
  }

  /** `state` of the standby's row in the primary's `pg_stat_replication` (undefined when none). */
  async replicationState(): Promise<string | undefined> {
    return await withClient(this.primary.url, async (c) => (await c.query<{ state: string }>('select state from pg_stat_replication')).rows[0]?.state);
  }

  /**
   * The failover: fences the old primary (read-only for every transaction that starts from now on,
   * its open connections kept), waits (at most 5 s) until no write transaction is open there and
   * the standby has replayed all its WAL, then promotes the standby (`pg_promote`, waiting for it).
   * @throws Error when the standby does not catch up or the promotion does not finish
   */
  async failover(options: { readonly catchUp?: boolean } = {}): Promise<FailoverTimes> {
    const catchUp = options.catchUp ?? true;
    return await withClient(this.primary.url, async (old) => {
      await old.query('set default_transaction_read_only = off');
      await old.query('alter system set default_transaction_read_only = on');
      await old.query('select pg_reload_conf()');
      const fencedAt = performance.now();
      const lsnAtFence = (await old.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0]!.lsn;
      let lagBytes = 0;
      await withClient(this.standby.url, async (standby) => {
        lagBytes = Number(
          (await standby.query<{ lag: string }>('select pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())::text as lag', [lsnAtFence])).rows[0]!.lag,
        );
        if (!catchUp) {
          // A crash-like failover: promote what the standby has (an asynchronous standby may lack acknowledged commits).
          const { rows } = await standby.query<{ ok: boolean }>('select pg_promote(true, 30) as ok');
          if (rows[0]?.ok !== true) throw new Error('pg_promote did not finish within 30 s');
          return;
        }
        // Transactions that began before the reload are still read-write: wait for them to end.
        await until('the old primary to have no write transaction open', 5_000, async () => {
          const { rows } = await old.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where backend_xid is not null and pid <> pg_backend_pid()');
          return rows[0]!.n === 0;
        });
        const lsn = (await old.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0]!.lsn;
        await until('the standby to replay the old primary WAL', 5_000, async () => {
          const { rows } = await standby.query<{ behind: boolean }>('select pg_last_wal_replay_lsn() < $1::pg_lsn as behind', [lsn]);
          return rows[0]!.behind === false;
        });
        const { rows } = await standby.query<{ ok: boolean }>('select pg_promote(true, 30) as ok');
        if (rows[0]?.ok !== true) throw new Error('pg_promote did not finish within 30 s');
      });
      return { fencedAt, promotedAt: performance.now(), lagBytes };
    });
  }

  /** Client backends on the old primary other than the caller's (the connections still there), only those of `applicationName` when given. */
  async sessionsOnOldPrimary(applicationName?: string): Promise<number> {
    return await withClient(this.primary.url, async (c) => {
      const { rows } = await c.query<{ n: number }>(
        "select count(*)::int as n from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid() and ($1::text is null or application_name = $1)",
        [applicationName ?? null],
      );
      return rows[0]!.n;
    });
  }

  /** What the client backends on the old primary are doing (application, state, last statement), for a timeline. */
  async describeOldPrimarySessions(): Promise<string[]> {
    return await withClient(this.primary.url, async (c) => {
      const { rows } = await c.query<{ d: string }>(
        "select application_name || ' ' || state || ' ' || left(query, 60) || ' ' || (now() - backend_start)::text as d from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()",
      );
      return rows.map((r) => r.d);
    });
  }

  /**
   * Cuts the replication link without a FIN or RST (its bytes are swallowed both ways): the standby
   * receives nothing more, and an asynchronous primary goes on acknowledging commits it alone holds.
   */
  cutReplication(): void {
    this.link.setFault({ mode: 'blackhole' });
  }

  /** Stops both servers and deletes their folders. Idempotent. */
  async close(): Promise<void> {
    await this.link.close().catch(() => {});
    await this.standby.stop().catch(() => {});
    await this.primary.stop().catch(() => {});
  }
}
