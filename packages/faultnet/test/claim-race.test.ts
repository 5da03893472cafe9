import { describe, it } from 'vitest';
import { allReady, CLAIM_LOAD, claimStats, collectClaims, pollUntil, runCase, startAll, stopAll, type CaseContext, type Verdict } from '../src/index.js';

const KIND = 'job';

/**
 * 3 processes, 300 tasks due at once, released together: each round claims up to 10 tasks, pauses
 * 30 ms, then completes each with one row in `effect_nounique`. Records what it measured.
 */
async function claimUnderLoad(v: Verdict, ctx: CaseContext, claim: 'naive' | 'atomic') {
  const { tasks, workers: count, limit, pauseMs, leaseMs, idleMs } = CLAIM_LOAD;
  await ctx.negative.createEffectNoUnique();
  const workers = Array.from({ length: count }, (_, i) =>
    ctx.spawn({ name: `${claim}${i + 1}`, waitForStart: true, run: { mode: 'claimLoop', loop: { claim, limit, pauseMs, leaseMs, idleMs } } }),
  );
  await allReady(workers);
  const ids = (await ctx.store.scheduleMany(Array.from({ length: tasks }, (_, i) => ({ kind: KIND, payload: { i } })))).map((t) => t.id);
  await startAll(workers);
  await pollUntil(async () => (await ctx.db.countIn(['DONE'], ids)) === tasks, { timeoutMs: 60_000, intervalMs: 50, what: `${tasks} tasks DONE` });
  await stopAll(workers);
  const stats = claimStats(collectClaims(workers));
  const effects = await ctx.negative.countEffectsNoUnique();
  const done = await ctx.db.countIn(['DONE'], ids);
  v.set('tasks', tasks)
    .set('claims', stats.claims)
    .set('tasksClaimedMoreThanOnce', stats.tasksClaimedMoreThanOnce)
    .set('byMultipleWorkers', stats.byMultipleWorkers)
    .set('effects', effects.effects)
    .set('duplicateEffects', effects.effects - effects.tasks)
    .set('done', done)
    .set('limit', limit)
    .set('pauseMs', pauseMs);
  return { stats, effects, done };
}

describe('evidence: claiming under contention', () => {
  it('negative_naive_select_then_update: SELECT then UPDATE without a lock claims tasks twice (control)', async () => {
    await runCase('negative_naive_select_then_update', async (v, ctx) => {
      v.set('expect', 'duplicates');
      const { stats, effects, done } = await claimUnderLoad(v, ctx, 'naive');
      // A control that shows no duplicate cannot tell a broken claim from a sound one: FAIL.
      v.atLeast('tasks claimed more than once (control must show the defect)', stats.tasksClaimedMoreThanOnce, 1);
      v.atLeast('claims above tasks', stats.claims, CLAIM_LOAD.tasks + 1);
      v.atLeast('duplicate effects', effects.effects - effects.tasks, 1);
      v.equal('every task ends DONE', done, CLAIM_LOAD.tasks);
    });
  });

  it('control_skip_locked_same_load: the atomic claim under the same load claims each task once', async () => {
    await runCase('control_skip_locked_same_load', async (v, ctx) => {
      const { stats, effects, done } = await claimUnderLoad(v, ctx, 'atomic');
      v.equal('claims', stats.claims, CLAIM_LOAD.tasks);
      v.equal('tasks claimed more than once', stats.tasksClaimedMoreThanOnce, 0);
      v.equal('by multiple workers', stats.byMultipleWorkers, 0);
      v.equal('effects', effects.effects, CLAIM_LOAD.tasks);
      v.equal('duplicate effects', effects.effects - effects.tasks, 0);
      v.equal('done', done, CLAIM_LOAD.tasks);
    });
  });
});
