/**
 * Evidence for per-key concurrency and fair share (docs/contract.md#per-key-concurrency), with real
 * worker processes and one `setKeyConcurrency` row (the workers pass nothing new):
 *
 * - `per_key_concurrency`: three workers of concurrency 10, 50 limit keys × 20 tasks, limit 1 per key:
 *   never more than 1 task of a key CLAIMED (database samples) or running (the children's own
 *   handler start/end reports); every task DONE at attempt 1.
 * - `fair_share`: key A has a backlog of due tasks, key B schedules 20 tasks 1 s after the workers
 *   started: each B task is claimed after at most about one fleet-wide round of claimed tasks
 *   (tasks claimed between its due time and its own claim, over the fleet's 30 slots), where a
 *   first-in-first-out claim would first take A's whole backlog; A still drains.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isKeyLimitStore } from '@postpone/core';
import { describe, it } from 'vitest';
import { allReady, STEADY_WORKER, collectClaims, type HarnessChild, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const KIND = 'tenant-sync';

/** Most handler runs overlapping at one instant per group, from the children's `handlerStarted`/`handlerEnded` wall times (an end before a start at the same ms). */
function maxConcurrentPerGroup(children: readonly HarnessChild[], groupOf: ReadonlyMap<string, string>): number {
  const edges: [number, number, string][] = [];
  for (const child of children) {
    for (const e of child.eventsOf('handlerStarted')) if (groupOf.has(e.id)) edges.push([e.wallMs, 1, groupOf.get(e.id) as string]);
    for (const e of child.eventsOf('handlerEnded')) if (groupOf.has(e.id)) edges.push([e.wallMs, -1, groupOf.get(e.id) as string]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const running = new Map<string, number>();
  let max = 0;
  for (const [, delta, group] of edges) {
    const n = (running.get(group) ?? 0) + delta;
    running.set(group, n);
    max = Math.max(max, n);
  }
  return max;
}

describe('evidence: per-key concurrency and fair share', () => {
  it('per_key_concurrency: 3 worker processes of concurrency 10, 50 keys × 20 tasks, limit 1 per key: never more than 1 CLAIMED or running per key, all DONE', async () => {
    await runCase('per_key_concurrency', async (v, ctx) => {
      const store = ctx.store;
      if (!isKeyLimitStore(store)) throw new Error('the PostgreSQL store has no per-key limits');
      await store.setKeyConcurrency({ kind: KIND, limit: 1 });
      const handler = { kind: KIND, workMs: 20, reportEnd: true };
      const workers = ['w1', 'w2', 'w3'].map((name) => ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker: STEADY_WORKER, handler } }));
      await allReady(workers);
      const keys = Array.from({ length: 50 }, (_, k) => `tenant-${k}`);
      const inputs = Array.from({ length: 1_000 }, (_, i) => ({ kind: KIND, limitKey: keys[i % keys.length] as string, payload: { i } }));
      const scheduled = await store.scheduleMany(inputs);
      const keyOf = new Map(scheduled.map((t, i) => [t.id, inputs[i]?.limitKey as string]));
      const ids = [...keyOf.keys()];

      const sampled = { max: 0, samples: 0 };
      let sampling = true;
      const sampler = (async () => {
        for (let i = 0; i < 20_000 && sampling; i++) {
          const { rows } = await ctx.pool.query<{ n: number }>(`select count(*)::int as n from "${ctx.schema}".task where state = 'CLAIMED' and kind = $1 group by limit_key`, [KIND]);
          for (const r of rows) sampled.max = Math.max(sampled.max, r.n);
          sampled.samples += 1;
          await sleep(2);
        }
      })();
      await startAll(workers);
      try {
        await pollUntil(async () => (await ctx.db.countIn(['DONE'], ids)) === ids.length, { timeoutMs: 120_000, intervalMs: 100, what: '1 000 tasks DONE' });
      } finally {
        sampling = false;
        await sampler;
      }
      await stopAll(workers);

      const claims = collectClaims(workers);
      const maxRunning = maxConcurrentPerGroup(workers, keyOf);
      const ended = workers.flatMap((w) => w.eventsOf('handlerEnded')).length;
      const done = await ctx.db.countIn(['DONE'], ids);
      const starts = claims.map((c) => c.claimedAtMs).sort((a, b) => a - b);
      v.set('workers', workers.length)
        .set('concurrencyEach', STEADY_WORKER.concurrency)
        .set('keys', keys.length)
        .set('tasksPerKey', 20)
        .set('limitPerKey', 1)
        .set('samples', sampled.samples)
        .set('maxClaimedPerKeySampled', sampled.max)
        .set('maxRunningPerKey', maxRunning)
        .set('claims', claims.length)
        .set('startSpanMs', (starts.at(-1) ?? 0) - (starts[0] ?? 0))
        .set('startsByWorker', workers.map((w) => claims.filter((c) => c.worker === w.name).length))
        .set('done', done);
      v.atMost('CLAIMED of one key in any sample', sampled.max, 1);
      v.atMost('handlers of one key running at once', maxRunning, 1);
      v.equal('the limit was reached', maxRunning, 1);
      v.atLeast('samples taken', sampled.samples, 1);
      v.equal('every handler reported its end', ended, ids.length);
      v.equal('claims', claims.length, ids.length);
      v.equal('distinct tasks claimed', new Set(claims.map((c) => c.id)).size, ids.length);
      v.equal('attempts', [...new Set(claims.map((c) => c.attempt))], [1]);
      v.equal('DONE', done, ids.length);
    });
  });

  const A_TASKS = Number(process.env.POSTPONE_FAIR_SHARE_A_TASKS ?? 20_000);
  const B_TASKS = 20;
  it(`fair_share: key A with ${A_TASKS} due tasks, key B schedules ${B_TASKS} 1 s later: every B task claimed within 2 rounds of its due time, A drains`, { timeout: 600_000 }, async () => {
    await runCase('fair_share', async (v, ctx) => {
      const store = ctx.store;
      if (!isKeyLimitStore(store)) throw new Error('the PostgreSQL store has no per-key limits');
      // A limit no key reaches here (30 slots): the declaration is what turns on the fair order.
      await store.setKeyConcurrency({ kind: KIND, limit: 1_000 });
      const handler = { kind: KIND, workMs: 2 };
      const workers = ['w1', 'w2', 'w3'].map((name) => ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker: STEADY_WORKER, handler } }));
      await allReady(workers);
      const aIds: string[] = [];
      for (let from = 0; from < A_TASKS; from += 1_000) {
        const batch = Array.from({ length: Math.min(1_000, A_TASKS - from) }, (_, i) => ({ kind: KIND, limitKey: 'A', payload: { i: from + i } }));
        aIds.push(...(await store.scheduleMany(batch)).map((t) => t.id));
      }
      await startAll(workers);
      await sleep(1_000);
      const b = await store.scheduleMany(Array.from({ length: B_TASKS }, (_, i) => ({ kind: KIND, limitKey: 'B', payload: { i } })));
      const bIds = new Set(b.map((t) => t.id));
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], [...bIds])) === B_TASKS, { timeoutMs: 60_000, intervalMs: 50, what: 'B tasks DONE' });
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], aIds)) === A_TASKS, { timeoutMs: 540_000, intervalMs: 500, what: `${A_TASKS} A tasks DONE` });
      await stopAll(workers);

      const claims = collectClaims(workers).sort((x, y) => x.claimedAtMs - y.claimedAtMs);
      const slots = workers.length * STEADY_WORKER.concurrency;
      const bDueMs = Math.min(...b.map((t) => t.dueAt.getTime()));
      const bClaims = claims.filter((c) => bIds.has(c.id));
      // Per B task: tasks claimed (any key) after B fell due and before it (its claim time, database clock), and the claim statements among them.
      const before = bClaims.map((c) => claims.filter((o) => o.claimedAtMs >= bDueMs && o.claimedAtMs < c.claimedAtMs).length);
      const statementsBefore = bClaims.map((c) => new Set(claims.filter((o) => o.claimedAtMs >= bDueMs && o.claimedAtMs < c.claimedAtMs).map((o) => `${o.worker}:${o.claimedAtMs}`)).size);
      const aLeftAtLastB = A_TASKS - claims.filter((c) => !bIds.has(c.id) && c.claimedAtMs <= Math.max(...bClaims.map((x) => x.claimedAtMs))).length;
      const maxBefore = Math.max(...before);
      const rounds = Math.round((maxBefore / slots) * 100) / 100;
      const lateMs = bClaims.map((c) => c.claimedAtMs - bDueMs);
      const done = await ctx.db.countIn(['DONE'], [...aIds, ...bIds]);
      v.set('workers', workers.length)
        .set('slots', slots)
        .set('aTasks', A_TASKS)
        .set('bTasks', B_TASKS)
        .set('bClaimed', bClaims.length)
        .set('maxTasksClaimedBeforeAB', maxBefore)
        .set('maxClaimStatementsBeforeAB', Math.max(...statementsBefore))
        .set('maxRoundsBeforeAB', rounds)
        .set('maxBLateMs', Math.max(...lateMs))
        .set('aLeftWhenLastBClaimed', aLeftAtLastB)
        .set('claims', claims.length)
        .set('done', done);
      v.equal('B tasks claimed', bClaims.length, B_TASKS);
      v.atMost('rounds (tasks claimed before a B task / slots)', rounds, 2);
      v.atLeast('A still had a backlog when B was served', aLeftAtLastB, 1);
      v.equal('distinct tasks claimed', new Set(claims.map((c) => c.id)).size, A_TASKS + B_TASKS);
      v.equal('DONE', done, A_TASKS + B_TASKS);
    });
  });
});
