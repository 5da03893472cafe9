/**
 * Counting the statements a system sends to its database.
 *
 * Preferred source: `pg_stat_statements` (PostgreSQL 17 §F.32), summing `calls` over the entries of
 * one database; every top-level statement counts, utility statements such as BEGIN, COMMIT and
 * LISTEN included (`pg_stat_statements.track_utility` is on by default). Fallback when the module is
 * not loaded: `pg_stat_database.xact_commit + xact_rollback` (PostgreSQL 17 §27.2.17), which counts
 * transactions, not statements, and is flushed by each backend at most once a second, so it needs
 * windows of several seconds.
 *
 * The counter connects to the admin database, never to the measured one, so its own queries are not
 * counted.
 */
import type pg from 'pg';
import { withClient } from './admin.js';
import { postmasterOf, serverCpuMs } from './server-cpu.js';

export type StatementSource = 'pg_stat_statements' | 'pg_stat_database';

export interface StatementSnapshot {
  /** Statements (pg_stat_statements) or transactions (pg_stat_database) so far. */
  readonly count: number;
  /** Server execution time of those statements, ms (`total_exec_time`; NaN without pg_stat_statements). */
  readonly execMs: number;
  /** WAL position of the whole server as bytes from `0/0` (`pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')`): two readings give the WAL written between them. */
  readonly walBytes: number;
  /**
   * CPU time of every PostgreSQL process of the server so far, ms (`/proc`, `server-cpu.ts`): two
   * readings give all the server spent between them, not only statement execution. NaN when the
   * server is not on this host.
   */
  readonly serverCpuMs: number;
  readonly atMs: number;
}

/** One normalised statement of `pg_stat_statements` in one database. */
export interface StatementStat {
  /** The statement text, whitespace collapsed, cut to 120 characters. */
  readonly query: string;
  readonly calls: number;
  readonly totalMs: number;
  readonly meanMs: number;
}

export interface StatementCounter {
  readonly source: StatementSource;
  /** Reads the current total for database `database`. */
  snapshot(database: string): Promise<StatementSnapshot>;
  /** Every statement of `database` so far, keyed by `queryid` (empty without pg_stat_statements). */
  statements(database: string): Promise<StatementTotals>;
}

/** Cumulative figures per normalised statement (`queryid`). */
export type StatementTotals = ReadonlyMap<string, StatementStat>;

/**
 * What ran between two {@link StatementCounter.statements} readings, by server time, most first.
 * @param limit how many statements to keep
 */
export function topBetween(before: StatementTotals, after: StatementTotals, limit: number): StatementStat[] {
  const out: StatementStat[] = [];
  for (const [id, a] of after) {
    const b = before.get(id);
    const calls = a.calls - (b?.calls ?? 0);
    const totalMs = a.totalMs - (b?.totalMs ?? 0);
    if (calls > 0) out.push({ query: a.query, calls, totalMs, meanMs: totalMs / calls });
  }
  return out.sort((x, y) => y.totalMs - x.totalMs).slice(0, limit);
}

async function hasPgStatStatements(client: pg.Client): Promise<boolean> {
  const loaded = await client.query<{ ok: boolean }>(
    `select coalesce(current_setting('shared_preload_libraries', true), '') ~ 'pg_stat_statements' as ok`,
  );
  if (!loaded.rows[0]?.ok) return false;
  try {
    await client.query('create extension if not exists pg_stat_statements');
    await client.query('select 1 from pg_stat_statements limit 1');
    return true;
  } catch {
    return false;
  }
}

/**
 * Opens a statement counter against the server of `adminUrl` (the admin database).
 * Creates the `pg_stat_statements` extension there when the module is loaded.
 */
export async function openStatementCounter(adminUrl: string): Promise<StatementCounter> {
  const source: StatementSource = (await withClient(adminUrl, hasPgStatStatements)) ? 'pg_stat_statements' : 'pg_stat_database';
  const sql =
    source === 'pg_stat_statements'
      ? `select coalesce(sum(s.calls), 0)::bigint as n, coalesce(sum(s.total_exec_time), 0)::float8 as ms
           from pg_stat_statements s join pg_database d on d.oid = s.dbid where d.datname = $1`
      : `select coalesce(xact_commit + xact_rollback, 0)::bigint as n, 'NaN'::float8 as ms from pg_stat_database where datname = $1`;
  const postmaster = await withClient(adminUrl, async (client) => postmasterOf((await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid ?? -1));
  return {
    source,
    async snapshot(database: string): Promise<StatementSnapshot> {
      return await withClient(adminUrl, async (client) => {
        if (source === 'pg_stat_database') await client.query('select pg_stat_clear_snapshot()');
        const { rows } = await client.query<{ n: string; ms: number }>(sql, [database]);
        const wal = await client.query<{ wal: number }>(`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as wal`);
        return {
          count: Number(rows[0]?.n ?? 0),
          execMs: Number(rows[0]?.ms ?? Number.NaN),
          walBytes: Number(wal.rows[0]?.wal ?? Number.NaN),
          serverCpuMs: postmaster === undefined ? Number.NaN : serverCpuMs(postmaster),
          atMs: performance.now(),
        };
      });
    },
    async statements(database: string): Promise<StatementTotals> {
      if (source !== 'pg_stat_statements') return new Map();
      return await withClient(adminUrl, async (client) => {
        const { rows } = await client.query<{ id: string; query: string; calls: string; total: number; mean: number }>(
          `select s.queryid::text || ':' || s.userid::text || ':' || s.toplevel::text as id, s.query, s.calls,
                  s.total_exec_time::float8 as total, s.mean_exec_time::float8 as mean
             from pg_stat_statements s join pg_database d on d.oid = s.dbid
            where d.datname = $1`,
          [database],
        );
        return new Map(rows.map((r) => [r.id, { query: r.query.replace(/\s+/g, ' ').trim().slice(0, 120), calls: Number(r.calls), totalMs: r.total, meanMs: r.mean }]));
      });
    },
  };
}

/** Statements (or transactions) per second between two snapshots. */
export function ratePerSecond(before: StatementSnapshot, after: StatementSnapshot): number {
  const seconds = (after.atMs - before.atMs) / 1000;
  return seconds > 0 ? (after.count - before.count) / seconds : Number.NaN;
}
