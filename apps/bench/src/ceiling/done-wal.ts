/**
 * WAL per task, by step (schedule, claim, complete), DONE kept against DONE not kept
 * (docs/contract.md#done-not-kept), and the claim on the live-table indexes of today against those of
 * before migration 19 (`task_state_id_idx`, `task_state_kind_id_idx` and history's B-tree on `finished_at`, rebuilt by hand
 * in the `kept-pre19` mode): `tasks` due tasks are scheduled with `scheduleMany` (batches of 10 000), claimed with `claim`
 * (limit 1 000), then completed with the store's own `completeMany` in batches of `batch`;
 * `pg_current_wal_lsn()` read around each step (`pg_wal_lsn_diff`) gives its WAL. Both modes run on one server,
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

type Mode = 'kept' | 'not-kept' | 'kept-pre19';
type Steps = { schedule: number; claim: number; complete: number };

async function walNow(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ wal: number }>(`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as wal`);
  return Number(rows[0]?.wal);
}

async function measure(url: string, admin: pg.Client, mode: Mode, round: number, tasks: number, batch: number): Promise<Steps> {
  const schema = `done_wal_${mode.replace('-', '_')}_${round}`;
  const store = createPgStore({ connectionString: url, schema });
  try {
    await store.migrate();
    if (mode === 'kept-pre19') {
      await admin.query(`create index task_state_id_idx on ${schema}.task (state, id); create index task_state_kind_id_idx on ${schema}.task (state, kind, id); drop index ${schema}.task_scheduled_kind_idx; drop index ${schema}.task_history_finished_brin; create index task_history_finished_idx on ${schema}.task_history (finished_at)`);
    }
    await admin.query('checkpoint');
    let mark = await walNow(admin);
    const step = async () => {
      const now = await walNow(admin);
      const bytes = (now - mark) / tasks;
      await admin.query('checkpoint');
      mark = await walNow(admin);
      return bytes;
    };
    for (let i = 0; i < tasks; i += 10_000) await store.scheduleMany(Array.from({ length: Math.min(10_000, tasks - i) }, () => ({ kind: 'wal', payload: {} })));
    const schedule = await step();
    const claimed = [];
    for (let i = 0; i < tasks && claimed.length < tasks; i++) {
      const got = await store.claim({ owner: 'wal', limit: 1_000, leaseMs: 600_000, kinds: ['wal'] });
      if (got.length === 0) break;
      claimed.push(...got);
    }
    if (claimed.length !== tasks) throw new Error(`claimed ${claimed.length} of ${tasks}`);
    const claim = await step();
    for (let i = 0; i < claimed.length; i += batch) {
      const items = claimed.slice(i, i + batch).map((t) => ({ id: t.id, attempt: t.attempt, owner: 'wal', ...(mode === 'not-kept' ? { keep: false } : {}) }));
      const outcomes = await store.completeMany(items);
      if (outcomes.some((o) => o !== 'DONE')) throw new Error(`a completion answered ${outcomes.find((o) => o !== 'DONE')}`);
    }
    const complete = await step();
    return { schedule, claim, complete };
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
    const modes: Mode[] = ['kept', 'not-kept', 'kept-pre19'];
    const per = new Map<Mode, Steps[]>(modes.map((m) => [m, []]));
    for (let round = 1; round <= rounds; round++) {
      for (const mode of modes) {
        const b = await measure(db.url, admin, mode, round, tasks, batch);
        per.get(mode)?.push(b);
        console.log(
          `round ${round} ${mode.padEnd(10)} B WAL per task: schedule ${b.schedule.toFixed(0)}, claim ${b.claim.toFixed(0)}, complete ${b.complete.toFixed(0)}, total ${(b.schedule + b.claim + b.complete).toFixed(0)} (${tasks} tasks, completeMany batches of ${batch})`,
        );
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    for (const mode of modes) {
      const runs = per.get(mode) ?? [];
      const m = (k: keyof Steps) => median(runs.map((r) => r[k]));
      console.log(`median ${mode.padEnd(10)} schedule ${m('schedule').toFixed(0)} B, claim ${m('claim').toFixed(0)} B, complete ${m('complete').toFixed(0)} B per task`);
    }
  } finally {
    await admin.end();
    await db.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
