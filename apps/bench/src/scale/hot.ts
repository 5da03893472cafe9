/**
 * HOT renewals before and after migration 7 (docs/contract.md#vacuum): the same lease renewals,
 * through the store's `extendMany`, on a schema as migrated today ("after": no index reads
 * `lease_until`) and on one where the index of migrations 1–6, `task_lease_idx (lease_until) where
 * state = 'CLAIMED'`, is put back ("before"). A renewal is a heap-only-tuple update only when no
 * index reads a changed column and the page has room (PostgreSQL 17 §66.7); the counts come from
 * `pg_stat_user_tables` (`n_tup_upd`, `n_tup_hot_upd`, §27.2.21), read after the renewing session
 * flushed its statistics.
 */
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';

/** One layout's renewals. */
export interface HotLayout {
  /** `after` (as migrated today) or `before` (`task_lease_idx` on `lease_until` put back). */
  readonly layout: 'before' | 'after';
  readonly renewals: number;
  /** Row updates the table counted while renewing (one per renewal). */
  readonly updates: number;
  readonly hotUpdates: number;
  /** Size of the table's indexes after the renewals, bytes. */
  readonly indexBytes: number;
}

export interface HotResult {
  readonly at: string;
  readonly commit: string;
  /** Tasks claimed and held, renewals per task. */
  readonly tasks: number;
  readonly rounds: number;
  readonly layouts: readonly HotLayout[];
}

const PREFIX = 'bench_hot_';

/** Reads the table's update counters once the statistics of finished transactions are visible. */
async function counters(client: pg.Client, schema: string): Promise<{ upd: number; hot: number; idx: number }> {
  const { rows } = await client.query<{ upd: string; hot: string; idx: string }>(
    `select n_tup_upd::text as upd, n_tup_hot_upd::text as hot, pg_indexes_size(relid)::text as idx
       from pg_stat_user_tables where schemaname = $1 and relname = 'task'`,
    [schema],
  );
  const r = rows[0];
  if (!r) throw new Error(`no statistics for ${schema}.task`);
  return { upd: Number(r.upd), hot: Number(r.hot), idx: Number(r.idx) };
}

async function measureLayout(url: string, layout: HotLayout['layout'], tasks: number, rounds: number): Promise<HotLayout> {
  const schema = `${PREFIX}${layout}`;
  const admin = new pg.Client({ connectionString: url, application_name: 'bench-scale-hot' });
  await admin.connect();
  // One connection, so the backend that renewed is the one told to flush (pg_stat_force_next_flush, §9.28.8).
  const pool = new pg.Pool({ connectionString: url, max: 1, application_name: 'bench-scale-hot' });
  const store = createPgStore({ pool, schema });
  try {
    await admin.query(`drop schema if exists ${pg.escapeIdentifier(schema)} cascade`);
    await store.migrate();
    if (layout === 'before') await admin.query(`create index task_lease_idx on ${pg.escapeIdentifier(schema)}.task (lease_until) where state = 'CLAIMED'`);
    await store.scheduleMany(Array.from({ length: tasks }, (_, i) => ({ kind: 'bench_hot', payload: { n: i }, runAt: new Date(Date.now() - 1_000) })));
    const held: { id: string; attempt: number }[] = [];
    for (let i = 0; i < 1_000 && held.length < tasks; i++) {
      const got = await store.claim({ owner: 'bench-hot', limit: 100, leaseMs: 600_000 });
      if (got.length === 0) break;
      held.push(...got.map((t) => ({ id: t.id, attempt: t.attempt })));
    }
    if (held.length !== tasks) throw new Error(`claimed ${held.length} of ${tasks} tasks`);
    await pool.query('select pg_stat_force_next_flush()');
    await pool.query('select 1');
    const before = await counters(admin, schema);
    let renewals = 0;
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < held.length; i += 100) {
        const renewed = await store.extendMany({ items: held.slice(i, i + 100), leaseMs: 600_000 });
        renewals += renewed.filter(Boolean).length;
      }
    }
    // The renewing backend flushes its pending statistics at its next transaction end when forced.
    await pool.query('select pg_stat_force_next_flush()');
    await pool.query('select 1');
    const after = await counters(admin, schema);
    return { layout, renewals, updates: after.upd - before.upd, hotUpdates: after.hot - before.hot, indexBytes: after.idx };
  } finally {
    await store.close();
    await pool.end();
    await admin.query(`drop schema if exists ${pg.escapeIdentifier(schema)} cascade`).catch(() => {});
    await admin.end();
  }
}

/** Measures `rounds` renewals of `tasks` held tasks on both layouts. */
export async function measureHotRenewals(url: string, commit: string, tasks = 1_000, rounds = 10): Promise<HotResult> {
  const layouts = [await measureLayout(url, 'before', tasks, rounds), await measureLayout(url, 'after', tasks, rounds)];
  return { at: new Date().toISOString(), commit, tasks, rounds, layouts };
}
