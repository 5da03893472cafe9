/**
 * WAL per completion, DONE kept against DONE not kept (docs/contract.md#done-not-kept): `tasks` due
 * tasks are scheduled and claimed first (outside the measurement); then the store's own
 * `completeMany` completes them in batches of `batch`, and `pg_current_wal_lsn()` read before and
 * after (`pg_wal_lsn_diff`) gives the WAL of the completions alone. Both modes run on one server,
 * each on a schema of its own, alternating `rounds` times; a CHECKPOINT before each measurement puts
 * both modes in the same place of the checkpoint cycle (the first change of each page after it
 * writes a full-page image, in both modes alike).
 *
 *   node apps/bench/dist/ceiling/done-wal.js [tasks=5000] [batch=50] [rounds=3]
 *
 * Embedded PostgreSQL unless `DATABASE_URL` is set. Prints one line per measurement and the medians.
 */
import { resolveDatabase } from '@postpone/embedded';
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';

type Mode = 'kept' | 'not-kept';

async function walNow(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ wal: number }>(`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as wal`);
  return Number(rows[0]?.wal);
}

async function measure(url: string, admin: pg.Client, mode: Mode, round: number, tasks: number, batch: number): Promise<number> {
  const schema = `done_wal_${mode === 'kept' ? 'kept' : 'drop'}_${round}`;
  const store = createPgStore({ connectionString: url, schema });
  try {
    await store.migrate();
    for (let i = 0; i < tasks; i += 10_000) await store.scheduleMany(Array.from({ length: Math.min(10_000, tasks - i) }, () => ({ kind: 'wal', payload: {} })));
    const claimed = [];
    while (claimed.length < tasks) {
      const got = await store.claim({ owner: 'wal', limit: 1_000, leaseMs: 600_000, kinds: ['wal'] });
      if (got.length === 0) break;
      claimed.push(...got);
    }
    await admin.query('checkpoint');
    const before = await walNow(admin);
    for (let i = 0; i < claimed.length; i += batch) {
      const items = claimed.slice(i, i + batch).map((t) => ({ id: t.id, attempt: t.attempt, owner: 'wal', ...(mode === 'kept' ? {} : { keep: false }) }));
      const outcomes = await store.completeMany(items);
      if (outcomes.some((o) => o !== 'DONE')) throw new Error(`a completion answered ${outcomes.find((o) => o !== 'DONE')}`);
    }
    const bytes = (await walNow(admin)) - before;
    return bytes / claimed.length;
  } finally {
    await store.close();
    await admin.query(`drop schema if exists ${schema} cascade`);
  }
}

async function main(): Promise<void> {
  const [tasks = 5_000, batch = 50, rounds = 3] = process.argv.slice(2).map(Number);
  const db = await resolveDatabase(process.env);
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  try {
    const per: Record<Mode, number[]> = { kept: [], 'not-kept': [] };
    for (let round = 1; round <= rounds; round++) {
      for (const mode of ['kept', 'not-kept'] as const) {
        const b = await measure(db.url, admin, mode, round, tasks, batch);
        per[mode].push(b);
        console.log(`round ${round} ${mode.padEnd(8)} ${b.toFixed(0)} B WAL per completion (${tasks} tasks, completeMany batches of ${batch})`);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    console.log(`median kept ${median(per.kept).toFixed(0)} B, not kept ${median(per['not-kept']).toFixed(0)} B per completion`);
  } finally {
    await admin.end();
    await db.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
