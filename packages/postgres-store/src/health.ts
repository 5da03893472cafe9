/**
 * `PostgresStore.vacuumHealth()` (docs/contract.md#vacuum): dead rows and autovacuum's record for
 * the store's tables, and the oldest snapshot holding back their cleanup — the figures to watch when
 * the claim slows down on a busy primary (a long transaction elsewhere keeps every dead row of the
 * task table, and of its indexes, until it ends). PostgreSQL-only; the in-memory store has no
 * vacuum.
 */
import type { Row } from './driver.js';

/** What autovacuum has done to one table of the store (from `pg_stat_user_tables`, PostgreSQL 17 §27.2.21). */
export interface TableVacuumHealth {
  /** `task` or `effect`. */
  readonly table: string;
  /** Estimated live and dead rows. */
  readonly liveRows: number;
  readonly deadRows: number;
  /** Row updates since the statistics were reset, and how many of them were HOT (no index entry written). */
  readonly updates: number;
  readonly hotUpdates: number;
  /** Vacuums run by autovacuum and by hand since the statistics were reset. */
  readonly autovacuums: number;
  readonly vacuums: number;
  /** When autovacuum (or a manual VACUUM, or autovacuum's ANALYZE) last finished on this table; null when never. */
  readonly lastAutovacuum: Date | null;
  readonly lastVacuum: Date | null;
  readonly lastAutoanalyze: Date | null;
}

/** The oldest thing that keeps old row versions visible, so VACUUM may not remove them (§24.1.5). */
export interface OldestSnapshot {
  /** An open transaction or running statement of another session, a prepared transaction, or a replication slot. */
  readonly source: 'session' | 'prepared transaction' | 'replication slot';
  /** How many transactions ago its xmin was assigned (`age(xmin)`). */
  readonly xminAge: number;
  /** Ms since that transaction (or statement) began; null for a replication slot. */
  readonly ageMs: number | null;
  /** The backend holding it, when there is one. */
  readonly pid: number | null;
  /** Application name (or user) of the session, gid of the prepared transaction, or slot name. */
  readonly holder: string;
  /** Session state (`active`, `idle in transaction`, …), or null. */
  readonly state: string | null;
}

export interface VacuumHealth {
  /** The database's time at the read. */
  readonly now: Date;
  /** One entry per store table that has statistics (`task`, `effect`), by name. */
  readonly tables: readonly TableVacuumHealth[];
  /** Null when nothing in this database holds back cleanup. */
  readonly oldestSnapshot: OldestSnapshot | null;
}

const num = (v: unknown): number => Number(v ?? 0);
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(Number(v)));

/** Builds the answer of `vacuumHealth()` from the rows of the two statements of `@postpone/postgres-sql`. */
export function vacuumHealthFrom(tableRows: readonly Row[], snapshotRows: readonly Row[], fallbackNowMs: number): VacuumHealth {
  const tables = tableRows.map(
    (r): TableVacuumHealth => ({
      table: String(r.tablename),
      liveRows: num(r.live),
      deadRows: num(r.dead),
      updates: num(r.updates),
      hotUpdates: num(r.hotupdates),
      autovacuums: num(r.autovacuums),
      vacuums: num(r.vacuums),
      lastAutovacuum: dateOrNull(r.lastautovacuumms),
      lastVacuum: dateOrNull(r.lastvacuumms),
      lastAutoanalyze: dateOrNull(r.lastautoanalyzems),
    }),
  );
  const s = snapshotRows[0];
  const oldestSnapshot: OldestSnapshot | null =
    s === undefined
      ? null
      : {
          source: String(s.source) as OldestSnapshot['source'],
          xminAge: num(s.xminage),
          ageMs: s.agems === null || s.agems === undefined ? null : Math.round(Number(s.agems)),
          pid: s.pid === null || s.pid === undefined ? null : Number(s.pid),
          holder: String(s.holder ?? ''),
          state: s.state === null || s.state === undefined ? null : String(s.state),
        };
  const nowMs = tableRows[0]?.nowms;
  return { now: new Date(nowMs === undefined || nowMs === null ? fallbackNowMs : Number(nowMs)), tables, oldestSnapshot };
}
