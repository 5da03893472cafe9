/**
 * Evidence for kind-filtered claims and priorities (docs/contract.md#queues, #priorities), with real
 * worker processes: a worker never claims a kind it has no handler for (so no attempt is burned), and
 * a single worker taking one task per claim takes due tasks in priority order.
 */
import { describe, it } from 'vitest';
import { allReady, STEADY_WORKER, collectClaims, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

describe('evidence: queues, kinds and priorities', () => {
  it('claim_only_known_kinds: a worker without the handler never claims the kind (0 attempts used); a worker with it runs every task once', async () => {
    await runCase('claim_only_known_kinds', async (v, ctx) => {
      // The "old" worker of a rolling deploy: a handler for `old` only.
      const old = ctx.spawn({ name: 'old', waitForStart: true, run: { mode: 'worker', worker: STEADY_WORKER, handler: { kind: 'old' } } });
      await allReady([old]);
      // The new kind is due at once with a single attempt: one claim by the old worker would make it DEAD.
      const fresh = await ctx.store.scheduleMany(Array.from({ length: 20 }, (_, i) => ({ kind: 'new', payload: { i }, maxAttempts: 1 })));
      // Old tasks due over the next 1.5 s keep the old worker claiming all that time, with the new ones due.
      const olds = await ctx.store.scheduleMany(Array.from({ length: 30 }, (_, i) => ({ kind: 'old', payload: { i }, delayMs: 50 * i })));
      const freshIds = fresh.map((t) => t.id);
      const oldIds = olds.map((t) => t.id);
      await startAll([old]);
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], oldIds)) === oldIds.length, { timeoutMs: 30_000, intervalMs: 50, what: '30 old tasks DONE' });
      const oldClaimsOfNew = collectClaims([old]).filter((c) => freshIds.includes(c.id)).length;
      const attemptsBefore = await Promise.all(freshIds.map(async (id) => (await ctx.db.task(id)).attempt));
      const scheduledBefore = await ctx.db.countIn(['SCHEDULED'], freshIds);

      // The new worker, with the handler, joins.
      const next = ctx.spawn({ name: 'new', waitForStart: true, run: { mode: 'worker', worker: STEADY_WORKER, handler: { kind: 'new' } } });
      await allReady([next]);
      await startAll([next]);
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], freshIds)) === freshIds.length, { timeoutMs: 30_000, intervalMs: 50, what: '20 new tasks DONE' });
      await stopAll([old, next]);

      const attemptsAfter = await Promise.all(freshIds.map(async (id) => (await ctx.db.task(id)).attempt));
      const newClaims = collectClaims([next]).filter((c) => freshIds.includes(c.id)).length;
      const oldClaimsTotal = collectClaims([old]).filter((c) => freshIds.includes(c.id)).length;
      const dead = await ctx.db.countIn(['DEAD'], freshIds);
      v.set('newTasks', freshIds.length)
        .set('oldTasks', oldIds.length)
        .set('oldWorkerClaimsOfNew', oldClaimsTotal)
        .set('attemptsUsedBeforeNewWorker', attemptsBefore.reduce((a, b) => a + b, 0))
        .set('scheduledBeforeNewWorker', scheduledBefore)
        .set('newWorkerClaims', newClaims)
        .set('newDone', await ctx.db.countIn(['DONE'], freshIds))
        .set('newDead', dead)
        .set('maxAttemptAfter', Math.max(...attemptsAfter));
      v.equal('old worker claims of the new kind while alone', oldClaimsOfNew, 0);
      v.equal('old worker claims of the new kind in all', oldClaimsTotal, 0);
      v.equal('attempts used before the new worker', attemptsBefore.reduce((a, b) => a + b, 0), 0);
      v.equal('new tasks still SCHEDULED before the new worker', scheduledBefore, 20);
      v.equal('new worker claims', newClaims, 20);
      v.equal('new tasks DEAD', dead, 0);
      v.equal('attempt of every new task', [...new Set(attemptsAfter)], [1]);
    });
  });

  it('priority_order: 30 due tasks of priorities -1, 0, 1, one worker taking one task per claim, claimed highest priority first', async () => {
    await runCase('priority_order', async (v, ctx) => {
      // concurrency 1: every claim asks for one task (the worker's free slots), so the order is observable.
      const w = ctx.spawn({ name: 'w1', waitForStart: true, run: { mode: 'worker', worker: { ...STEADY_WORKER, concurrency: 1 }, handler: { kind: 'job' } } });
      await allReady([w]);
      const now = await ctx.store.now();
      // Interleaved priorities; the lower a task's priority, the earlier it fell due (so due order alone would be the reverse).
      const inputs = Array.from({ length: 30 }, (_, i) => ({ kind: 'job', payload: { i }, priority: (i % 3) - 1, runAt: new Date(now.getTime() - 10_000 + i * 10) }));
      const scheduled = await ctx.store.scheduleMany(inputs);
      const priorityOf = new Map(scheduled.map((s, i) => [s.id, inputs[i]!.priority]));
      const dueOf = new Map(scheduled.map((s, i) => [s.id, inputs[i]!.runAt.getTime()]));
      const ids = scheduled.map((s) => s.id);
      await startAll([w]);
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], ids)) === ids.length, { timeoutMs: 30_000, intervalMs: 50, what: '30 tasks DONE' });
      await stopAll([w]);

      const claimed = collectClaims([w]).map((c) => c.id);
      const priorities = claimed.map((id) => priorityOf.get(id) as number);
      const inversions = priorities.filter((p, i) => i > 0 && p > (priorities[i - 1] as number)).length;
      // Within one priority, by due time.
      const dueInversions = claimed.filter(
        (id, i) => i > 0 && priorityOf.get(id) === priorityOf.get(claimed[i - 1] as string) && (dueOf.get(id) as number) < (dueOf.get(claimed[i - 1] as string) as number),
      ).length;
      v.set('tasks', ids.length)
        .set('claims', claimed.length)
        .set('order', priorities)
        .set('priorityInversions', inversions)
        .set('dueInversionsWithinPriority', dueInversions);
      v.equal('claims', claimed.length, 30);
      v.equal('distinct tasks claimed', new Set(claimed).size, 30);
      v.equal('priority order', priorities, [...Array(10).fill(1), ...Array(10).fill(0), ...Array(10).fill(-1)]);
      v.equal('priority inversions', inversions, 0);
      v.equal('due inversions within a priority', dueInversions, 0);
    });
  });
});
