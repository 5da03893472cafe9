/**
 * Progress, waitFor and reschedule on PostgreSQL beyond the conformance cases (migration 18):
 * - a progress write is a HOT update (`progress` is in no index; PostgreSQL 17 §66.7);
 * - the finish notice (`task_finished_notice`, one per statement) and what it costs a completion
 *   nobody waits for, measured against the same completions with the trigger disabled;
 * - many `waitFor` callers cost a few batched reads, not one per caller; one LISTEN per store;
 * - reschedule sends the `scheduled` notice with the new due time.
 */
import { parseTaskNotice } from '@postpone/postgres';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { finishChannel } from '../src/index.js';
import { migratedKit } from './support/kits.js';

const { admin, kit } = migratedKit('progress_wait');

async function claimAll(store: ReturnType<typeof kit.store>, n: number) {
  await store.scheduleMany(Array.from({ length: n }, (_, i) => ({ kind: 'k', payload: { i } })));
  const claimed = [];
  while (claimed.length < n) claimed.push(...(await store.claim({ owner: 'w', limit: 1_000, leaseMs: 600_000 })));
  return claimed;
}

describe('progress, waitFor and reschedule (PostgreSQL)', () => {
  it('progress writes are HOT updates; the column is in no index', async () => {
    const store = kit.store({ schema: admin.schema });
    const [task] = await claimAll(store, 1);
    // The store's own statement, 200 times in autocommit on one connection of our own, whose
    // statistics we flush (pg_stat_force_next_flush, PostgreSQL 17 §27.2.25) before reading them.
    const client = new pg.Client({ connectionString: kit.url });
    await client.connect();
    const stats = async (): Promise<{ upd: number; hot: number }> => {
      await client.query('select pg_stat_force_next_flush()');
      await client.query('select 1');
      const { rows } = await client.query(`select n_tup_upd::int as upd, n_tup_hot_upd::int as hot from pg_stat_user_tables where relid = $1::regclass`, [admin.t('task')]);
      return { upd: Number(rows[0]?.upd), hot: Number(rows[0]?.hot) };
    };
    try {
      const before = await stats();
      for (let i = 0; i < 200; i++) {
        const { rowCount } = await client.query(store.progressSql.taskProgress, [task!.id, task!.attempt, JSON.stringify({ i, note: 'x'.repeat(i % 50) })]);
        expect(rowCount).toBe(1);
      }
      const after = await stats();
      const counts = { upd: after.upd - before.upd, hot: after.hot - before.hot };
      console.log(`PROGRESS_HOT updates=${counts.upd} hot=${counts.hot}`);
      expect(counts.upd).toBeGreaterThanOrEqual(200);
      expect(counts.hot).toBeGreaterThanOrEqual(195);
    } finally {
      await client.end();
    }
    expect((await store.getTask(task!.id))?.progress).toEqual({ i: 199, note: 'x'.repeat(199 % 50) });
    const indexed = await admin.query<{ n: number }>(
      `select count(*)::int as n from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
        where i.indrelid = $1::regclass and a.attname = 'progress'`,
      [admin.t('task')],
    );
    expect(indexed[0]?.n).toBe(0);
    await store.close();
  });

  it('one finish notice per statement names every task it finished, only while a waiter is present; measured cost per completion', async () => {
    const store = kit.store({ schema: admin.schema });
    const heard: string[][] = [];
    const listener = kit.store({ schema: admin.schema });
    const { parseFinishNotice } = await import('../src/index.js');
    const driverListen = (listener as unknown as { driver: { listen: (c: string, f: (p: string) => void) => Promise<() => Promise<void>> } }).driver;
    const unlisten = await driverListen.listen(finishChannel(admin.schema), (payload) => {
      const ids = parseFinishNotice(payload);
      if (ids) heard.push(ids);
    });
    const present = (on: boolean) =>
      on ? admin.query(`insert into ${admin.t('task_waiter')} (waiter, until) values ('test', now() + interval '10 minutes') on conflict (waiter) do nothing`) : admin.query(`delete from ${admin.t('task_waiter')} where waiter = 'test'`);
    try {
      // Nobody waiting (no task_waiter row): nothing is sent.
      const quiet = await claimAll(store, 30);
      await store.completeMany(quiet.map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w' })));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(heard).toEqual([]);
      // A waiter present: one notice for the whole statement.
      await present(true);
      const batch = await claimAll(store, 120);
      expect(await store.completeMany(batch.map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w' })))).toEqual(batch.map(() => 'DONE'));
      for (let i = 0; i < 100 && heard.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(heard.length).toBe(1);
      expect(new Set(heard[0])).toEqual(new Set(batch.map((c) => c.id)));
      await present(false);
    } finally {
      await unlisten();
      await listener.close();
    }

    // Cost: single completes (one transaction each, the worst case), in rounds of each mode in turn
    // so load on the machine hits them alike: trigger off, trigger on with nobody waiting (the look
    // at task_waiter only), and with a waiter present (one NOTIFY per commit).
    const ROUNDS = 6;
    const PER_ROUND = 150;
    const modes = ['off', 'idle', 'waited'] as const;
    const perComplete: Record<(typeof modes)[number], number[]> = { off: [], idle: [], waited: [] };
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) {
          await admin.query(`alter table ${admin.t('task')} ${mode === 'off' ? 'disable' : 'enable'} trigger task_finished`);
          await present(mode === 'waited');
          const tasks = await claimAll(store, PER_ROUND);
          const start = performance.now();
          for (const c of tasks) await store.complete({ id: c.id, attempt: c.attempt, owner: 'w' });
          perComplete[mode].push(((performance.now() - start) / PER_ROUND) * 1000);
        }
      }
    } finally {
      await admin.query(`alter table ${admin.t('task')} enable trigger task_finished`);
      await present(false);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    const us = Object.fromEntries(modes.map((m) => [m, Math.round(median(perComplete[m]))])) as Record<(typeof modes)[number], number>;
    console.log(
      `FINISH_NOTICE_COST completes=${ROUNDS * PER_ROUND * modes.length} medianPerCompleteUs off=${us.off} idle=${us.idle} waited=${us.waited} ` +
        modes.map((m) => `${m}Rounds=${perComplete[m].map((x) => x.toFixed(0)).join('/')}`).join(' '),
    );
    expect(us.idle).toBeGreaterThan(0);
    await store.close();
  });

  it('300 waitFor callers cost a few batched reads and one LISTEN, and each gets its own result', async () => {
    const store = kit.store({ schema: admin.schema, waitFallbackMs: 60_000 });
    const worker = kit.store({ schema: admin.schema });
    const tasks = await claimAll(worker, 300);
    const waits = tasks.map((c) => store.waitFor(c.id, { timeoutMs: 60_000 }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (let i = 0; i < tasks.length; i += 25) {
      const slice = tasks.slice(i, i + 25);
      await worker.completeMany(slice.map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w', result: { id: c.id } })));
    }
    const done = await Promise.all(waits);
    expect(done.map((t) => (t.result as { id: string }).id)).toEqual(tasks.map((c) => c.id));
    const stats = store.waitStats;
    console.log(`WAIT_COST callers=300 reads=${stats.reads} fallbackReads=${stats.fallbackReads} notices=${stats.notices} listens=${stats.listens}`);
    expect(stats.listens).toBe(1);
    expect(stats.fallbackReads).toBe(0);
    // First reads batch into one or two; each completeMany statement's notice at most one more read.
    expect(stats.reads).toBeLessThanOrEqual(2 + tasks.length / 25);
    await store.close();
    await worker.close();
  });

  it('without finish notices (trigger disabled) the batched fallback re-read resolves every caller', async () => {
    const store = kit.store({ schema: admin.schema, waitFallbackMs: 200 });
    const worker = kit.store({ schema: admin.schema });
    const tasks = await claimAll(worker, 20);
    await admin.query(`alter table ${admin.t('task')} disable trigger task_finished`);
    try {
      const waits = tasks.map((c) => store.waitFor(c.id, { timeoutMs: 30_000 }));
      await new Promise((resolve) => setTimeout(resolve, 100));
      await worker.completeMany(tasks.map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w', result: c.id })));
      const done = await Promise.all(waits);
      expect(done.map((t) => t.result)).toEqual(tasks.map((c) => c.id));
      const stats = store.waitStats;
      console.log(`WAIT_FALLBACK reads=${stats.reads} fallbackReads=${stats.fallbackReads} notices=${stats.notices}`);
      expect(stats.notices).toBe(0);
      expect(stats.fallbackReads).toBeGreaterThanOrEqual(1);
    } finally {
      await admin.query(`alter table ${admin.t('task')} enable trigger task_finished`);
      await store.close();
      await worker.close();
    }
  });

  it('a caller still waiting when the listening connection is terminated resolves after the reconnect (re-read), without the fallback', async () => {
    const store = kit.store({ schema: admin.schema, waitFallbackMs: 600_000 });
    const worker = kit.store({ schema: admin.schema });
    const [task] = await claimAll(worker, 1);
    const waiting = store.waitFor(task!.id, { timeoutMs: 60_000 });
    const channel = finishChannel(admin.schema);
    const pids = async () =>
      (await admin.query<{ pid: number }>("select pid from pg_stat_activity where query ilike 'listen %' and query like $1", [`%${channel}%`])).map((r) => r.pid);
    let pid: number | undefined;
    for (let i = 0; i < 100 && pid === undefined; i++) {
      [pid] = await pids();
      if (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(pid).toBeDefined();
    await admin.query('select pg_terminate_backend($1)', [pid]);
    // Finished while nobody listens: the notice is lost; the re-read after the reconnect finds it.
    expect(await worker.complete({ id: task!.id, attempt: task!.attempt, owner: 'w', result: 'after the cut' })).toBe('DONE');
    expect(await waiting).toMatchObject({ state: 'DONE', result: 'after the cut' });
    expect(store.waitStats.fallbackReads).toBe(0);
    await store.close();
    await worker.close();
  });

  it('reschedule sends the scheduled notice with the new due time; none with scheduleNotices off', async () => {
    const store = kit.store({ schema: admin.schema });
    const notices: { op: string; id: string; dueAt: Date }[] = [];
    const unlisten = await store.listen((n) => notices.push(n));
    const { id } = await store.schedule({ kind: 'later', delayMs: 3_600_000 });
    const r = await store.reschedule(id, { delayMs: 5_000 });
    expect(r.outcome).toBe('RESCHEDULED');
    for (let i = 0; i < 100 && !notices.some((n) => n.id === id); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(notices.filter((n) => n.id === id)).toEqual([{ op: 'scheduled', id, dueAt: (r as { dueAt: Date }).dueAt }]);
    const quiet = kit.store({ schema: admin.schema, scheduleNotices: 'off' });
    expect((await quiet.reschedule(id, { delayMs: 6_000 })).outcome).toBe('RESCHEDULED');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(notices.filter((n) => n.id === id).length).toBe(1);
    expect(parseTaskNotice('{"op":"finished","ids":["1"]}')).toBeNull();
    await unlisten();
    await quiet.close();
    await store.close();
  });
});
