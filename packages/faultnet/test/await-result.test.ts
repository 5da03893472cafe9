/**
 * Evidence for awaiting a result (docs/contract.md#awaiting-a-result): 1 000 `waitFor` callers in
 * the test process on 1 000 tasks that 3 worker processes run. Each caller resolves with its own
 * task (DONE, its result echoing its payload, its handler's progress). What the waiting costs is
 * counted at the waiting store's own pool — every statement checks a connection out of it (the `pg`
 * driver), the LISTEN connection once — and by the store's own counters (batched reads, fallback
 * re-reads, finish notices heard, presence writes to `task_waiter`): about a hundred statements for
 * the thousand callers, not one per caller per interval.
 */
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const TASKS = 1_000;
const FALLBACK_MS = 2_000;

describe('evidence: awaiting a result', () => {
  it(`await_result: ${TASKS} waitFor callers on ${TASKS} tasks run by 3 worker processes; each resolves with its own result; the waiting's statements counted`, async () => {
    await runCase('await_result', async (v, ctx) => {
      const handler = { kind: 'answer', workMs: 20, echoWithProgress: true };
      const workers = ['w1', 'w2', 'w3'].map((name) => ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker: CASE_WORKER, handler } }));
      await allReady(workers);
      const scheduled = await ctx.store.scheduleMany(Array.from({ length: TASKS }, (_, i) => ({ kind: 'answer', payload: { question: i } })));

      // The waiting store: its own pool, so every statement it sends is counted there.
      const pool = new pg.Pool({ connectionString: ctx.databaseUrl, max: 4 });
      pool.on('error', () => {});
      let checkouts = 0;
      pool.on('acquire', () => {
        checkouts += 1;
      });
      // The dialect given: a store left to detect it reads `pg_extension` once before its first statement
      // (on a plain server, one statement per store, not per caller), which is not the waiting's cost.
      const waiter = createPgStore({ pool, schema: ctx.schema, waitFallbackMs: FALLBACK_MS, dialect: 'postgres' });
      try {
        const startedAt = performance.now();
        const resolvedAt: number[] = [];
        const waits = scheduled.map((t) =>
          waiter.waitFor(t.id, { timeoutMs: 120_000 }).then((task) => {
            resolvedAt.push(performance.now() - startedAt);
            return task;
          }),
        );
        // Every caller registered and read once before any task runs.
        await pollUntil(async () => waiter.waitStats.reads >= 1 && checkouts >= 2, { timeoutMs: 10_000, intervalMs: 20, what: 'first batched read' });
        const beforeRun = { checkouts, ...waiter.waitStats };
        await startAll(workers);
        const settled = await Promise.allSettled(waits);
        const elapsedMs = performance.now() - startedAt;
        await stopAll(workers);
        const tasks = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
        const rejected = settled.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason));
        const own = tasks.filter((task, i) => {
          const result = task.result as { echo?: string } | null;
          return task.id === scheduled[i]?.id && task.state === 'DONE' && result?.echo === JSON.stringify({ question: i }) && JSON.stringify(task.progress) === JSON.stringify({ half: task.id });
        }).length;
        const stats = waiter.waitStats;
        const statements = checkouts;
        await pollUntil(async () => (await ctx.db.countIn(['DONE'], scheduled.map((t) => t.id))) === TASKS, { timeoutMs: 10_000, intervalMs: 50, what: 'all DONE' });
        resolvedAt.sort((a, b) => a - b);
        v.set('callers', TASKS)
          .set('workers', workers.length)
          .set('resolved', tasks.length)
          .set('ownResult', own)
          .set('rejected', rejected.length)
          .set('statements', statements)
          .set('statementsBeforeRun', beforeRun.checkouts)
          .set('batchedReads', stats.reads)
          .set('fallbackReads', stats.fallbackReads)
          .set('finishNotices', stats.notices)
          .set('listens', stats.listens)
          .set('presenceWrites', stats.presenceWrites)
          .set('statementsPerCaller', Number((statements / TASKS).toFixed(3)))
          .set('elapsedMs', Math.round(elapsedMs))
          .set('lastResolvedMs', Math.round(resolvedAt.at(-1) ?? 0));
        v.equal('callers rejected', rejected.slice(0, 3), []);
        v.equal('callers resolved with their own task, DONE, result and progress', own, TASKS);
        v.equal('LISTEN subscriptions (one shared connection)', stats.listens, 1);
        // One checkout per batched read, the LISTEN connection, and the presence record (task_waiter:
        // the first caller, one refresh per fallback interval): nothing else is sent.
        v.atMost('statements of the waiting store (checkouts)', statements, stats.reads + stats.listens + stats.presenceWrites);
        v.atMost('presence writes (first caller + one per fallback interval)', stats.presenceWrites, 1 + Math.ceil(elapsedMs / FALLBACK_MS));
        // Each read is the first batched read, or follows finish notices or a fallback interval.
        v.atMost('batched reads (first read + notice-driven + fallback)', stats.reads, 1 + stats.notices + stats.fallbackReads);
        v.atMost('statements per caller (per-caller polling would be ≥ 1 per interval)', statements / TASKS, 0.5);
        v.atMost('fallback re-reads (the notices woke the callers)', stats.fallbackReads, Math.ceil(elapsedMs / FALLBACK_MS) + 1);
      } finally {
        await waiter.close();
        await pool.end();
      }
    });
  }, 180_000);
});
