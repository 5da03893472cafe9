/**
 * The SQL of `PostgresStore.vacuumHealth()` (docs/contract.md#vacuum): what autovacuum has done to
 * the store's tables (`task_history` summed over its partitions), and the oldest snapshot that holds back its cleanup. Conventions as in
 * `./sql.ts` (times as epoch ms, aliases without underscores). Reads statistics views only; takes no
 * lock on the tables. `vacuumHealthFrom` turns their rows into the answer (`VacuumHealth`).
 */
import { literal } from './quote.js';


/**
 * `$1` schema name → one row per store table that has statistics: `task` and `effect` as
 * `pg_stat_user_tables` gives them (`partitions` null), and `task_history` (migration 11) as ONE row
 * summed over its leaf partitions (`pg_partition_tree`, PostgreSQL 17 System Administration Functions, "Partitioning Information Functions"): rows, updates and
 * vacuum counts added up, the latest vacuum and analyze times, and `partitions` the number of leaves.
 * A schema before migration 11 has no `task_history` row. Every row also carries `notifyqueue`, the
 * share of the cluster's NOTIFY queue in use (`pg_notification_queue_usage()`, 0–1).
 */
const tables = `select s.relname::text as tablename,
       s.n_live_tup::float8 as live, s.n_dead_tup::float8 as dead,
       s.n_tup_upd::float8 as updates, s.n_tup_hot_upd::float8 as hotupdates,
       s.autovacuum_count::float8 as autovacuums, s.vacuum_count::float8 as vacuums,
       (extract(epoch from s.last_autovacuum) * 1000)::float8 as lastautovacuumms,
       (extract(epoch from s.last_vacuum) * 1000)::float8 as lastvacuumms,
       (extract(epoch from s.last_autoanalyze) * 1000)::float8 as lastautoanalyzems,
       null::float8 as partitions,
       (extract(epoch from now()) * 1000)::float8 as nowms,
       pg_notification_queue_usage()::float8 as notifyqueue
  from pg_stat_user_tables s
 where s.schemaname = $1::text and s.relname in (${literal('task')}, ${literal('effect')})
union all
select ${literal('task_history')},
       sum(s.n_live_tup)::float8, sum(s.n_dead_tup)::float8,
       sum(s.n_tup_upd)::float8, sum(s.n_tup_hot_upd)::float8,
       sum(s.autovacuum_count)::float8, sum(s.vacuum_count)::float8,
       (extract(epoch from max(s.last_autovacuum)) * 1000)::float8,
       (extract(epoch from max(s.last_vacuum)) * 1000)::float8,
       (extract(epoch from max(s.last_autoanalyze)) * 1000)::float8,
       count(*)::float8,
       (extract(epoch from now()) * 1000)::float8,
       pg_notification_queue_usage()::float8
  from pg_partition_tree(to_regclass(format('%I.%I', $1::text, ${literal('task_history')}))) p
  join pg_stat_user_tables s on s.relid = p.relid
 where p.isleaf
having count(*) > 0
 order by 1`;

/**
 * → at most one row: of everything that keeps an old transaction id visible in this database — an
 * open transaction or statement of another session (`pg_stat_activity.backend_xmin`), a prepared
 * transaction, a replication slot — the one with the oldest xmin, which VACUUM must not clean past
 * (PostgreSQL 17 §24.1.5, §27.2.3). `xminage` is in transactions, `agems` in ms since that
 * transaction (or statement) began, null for a slot.
 */
const oldestSnapshot = `select o.source, o.xminage, o.agems, o.pid, o.holder, o.state from (
  select ${literal('session')}::text as source, age(a.backend_xmin)::float8 as xminage,
         (extract(epoch from (clock_timestamp() - coalesce(a.xact_start, a.query_start))) * 1000)::float8 as agems,
         a.pid, coalesce(nullif(a.application_name, ''), a.usename::text, a.backend_type) as holder, a.state
    from pg_stat_activity a
   where a.backend_xmin is not null and a.pid <> pg_backend_pid()
     and (a.datname = current_database() or a.datname is null)
  union all
  select ${literal('prepared transaction')}, age(p.transaction)::float8,
         (extract(epoch from (clock_timestamp() - p.prepared)) * 1000)::float8, null, p.gid, null
    from pg_prepared_xacts p where p.database = current_database()
  union all
  select ${literal('replication slot')}, age(r.xmin)::float8, null, r.active_pid, r.slot_name::text, null
    from pg_replication_slots r where r.xmin is not null
) o order by o.xminage desc limit 1`;

export interface HealthStatements {
  readonly tables: string;
  readonly oldestSnapshot: string;
}

/** The statements of `vacuumHealth()`; they take the schema as a parameter, so one set serves every schema. */
export const HEALTH_STATEMENTS: HealthStatements = Object.freeze({ tables, oldestSnapshot });

/**
 * What autovacuum has done to one table of the store (from `pg_stat_user_tables`, PostgreSQL 17
 * §27.2.21). For the partitioned `task_history` every figure is summed over its leaf partitions and
 * every time is the latest of theirs.
 */
export interface TableVacuumHealth {
  /** `task`, `effect` or `task_history`. */
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
  /** `task_history` only: the leaf partitions summed (one per state and UTC day, plus each state's DEFAULT and `_legacy`); absent for a plain table. */
  readonly partitions?: number;
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
  /** One entry per store table that has statistics (`effect`, `task`, and `task_history` summed over its partitions), by name. */
  readonly tables: readonly TableVacuumHealth[];
  /** Null when nothing in this database holds back cleanup. */
  readonly oldestSnapshot: OldestSnapshot | null;
  /**
   * Share of the cluster's NOTIFY queue in use, 0–1 (`pg_notification_queue_usage()`). At 0.5 or more
   * the store sends no notices (a session that LISTENs and does not read is pinning it; README
   * "Failure modes"); at 1 every transaction that notifies fails at commit.
   */
  readonly notifyQueueUsage: number;
}

const num = (v: unknown): number => Number(v ?? 0);
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(Number(v)));

/** Builds the answer of `vacuumHealth()` from the rows of the two statements of `@postpone/postgres`. */
export function vacuumHealthFrom(tableRows: readonly Record<string, unknown>[], snapshotRows: readonly Record<string, unknown>[], fallbackNowMs: number): VacuumHealth {
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
      ...(r.partitions === null || r.partitions === undefined ? {} : { partitions: num(r.partitions) }),
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
  return {
    now: new Date(nowMs === undefined || nowMs === null ? fallbackNowMs : Number(nowMs)),
    tables,
    oldestSnapshot,
    notifyQueueUsage: num(tableRows[0]?.notifyqueue),
  };
}
