import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, type CaseContext, effectSummary, runCase, shellExitStatus, startAll, taskSummary, type Verdict } from '../src/index.js';

const KIND = 'job';

/**
 * A calls the external service, then is killed before it commits; B retries after the lease.
 * The key is `task-<id>` (per task) or `task-<id>-a<attempt>` (per attempt).
 */
async function crashAfterExternalCall(v: Verdict, ctx: CaseContext, key: 'task' | 'attempt') {
  const service = await ctx.externalService();
  const handler = (park: boolean) => ({
    kind: KIND,
    external: { url: service.applyUrl, key },
    ...(park ? { park: [{ point: 'afterExternal' as const, attempts: [1] }] } : {}),
  });
  const a = ctx.spawn({ name: 'eA', run: { mode: 'worker', worker: CASE_WORKER, handler: handler(true) } });
  const b = ctx.spawn({ name: 'eB', waitForStart: true, run: { mode: 'worker', worker: CASE_WORKER, handler: handler(false) } });
  await allReady([a, b]);
  const { id } = await ctx.store.schedule({ kind: KIND, payload: {} });
  await a.waitFor('parked', (e) => e.id === id && e.point === 'afterExternal');
  await startAll([b]);
  const exit = await a.kill9();
  await b.waitFor('committed', (e) => e.id === id, 15_000);
  const final = await ctx.db.task(id);
  const effects = await ctx.db.effects(id);
  const stats = service.stats();
  v.set('key', key)
    .set('crashedWorkers', [a, b].filter((w) => w.status?.signal === 'SIGKILL').length)
    .set('exitA', shellExitStatus(exit))
    .set('task', taskSummary(final).slice(0, 2))
    .set('localEffects', effects.length)
    .set('externalCalls', stats.calls)
    .set('externalApplied', stats.applied)
    .set('keysSeen', stats.keysSeen);
  v.equal('exit status of A', shellExitStatus(exit), 137);
  v.equal('task', taskSummary(final), ['DONE', 2, 'eB/a2']);
  v.equal('local effects', effectSummary(effects), ['2:eB']);
  v.equal('external calls', stats.calls, 2);
  return { id, stats };
}

describe('evidence: external side effects and idempotency keys', () => {
  it('ext_key_per_task_dedup: a key per task makes the retried call apply once', async () => {
    await runCase('ext_key_per_task_dedup', async (v, ctx) => {
      const { id, stats } = await crashAfterExternalCall(v, ctx, 'task');
      v.equal('external applied', stats.applied, 1);
      v.equal('keys seen', stats.keysSeen, [`task-${id}`]);
    });
  });

  it('ext_key_per_attempt_duplicates: a key per attempt applies the call twice (control)', async () => {
    await runCase('ext_key_per_attempt_duplicates', async (v, ctx) => {
      v.set('expect', 'duplicate');
      const { id, stats } = await crashAfterExternalCall(v, ctx, 'attempt');
      // A control that does not show the duplicate proves nothing: FAIL.
      v.equal('external applied twice (control must show the defect)', stats.applied, 2);
      v.equal('keys seen', stats.keysSeen, [`task-${id}-a1`, `task-${id}-a2`]);
    });
  });

  it('cancel_after_external_call: cancel after the call is REQUESTED; no local effect, the external one stays', async () => {
    await runCase('cancel_after_external_call', async (v, ctx) => {
      const service = await ctx.externalService();
      const worker = { ...CASE_WORKER, abandonGraceMs: 10_000 };
      const handler = { kind: KIND, external: { url: service.applyUrl, key: 'task' as const }, park: [{ point: 'afterExternal' as const }] };
      const w = ctx.spawn({ name: 'xW', run: { mode: 'worker', worker, handler } });
      await allReady([w]);
      const { id } = await ctx.store.schedule({ kind: KIND, payload: {} });
      await w.waitFor('parked', (e) => e.id === id && e.point === 'afterExternal');
      const cancel = await ctx.store.cancel(id);
      await w.send({ type: 'proceed', id });
      const commit = await w.waitFor('committed', (e) => e.id === id);
      const final = await ctx.db.task(id);
      const effects = await ctx.db.effects(id);
      const stats = service.stats();
      v.set('cancel', cancel)
        .set('complete', commit.outcome)
        .set('final', final.state)
        .set('localEffects', effects.length)
        .set('externalApplied', stats.applied);
      v.equal('cancel', cancel, 'REQUESTED');
      v.equal('complete', commit.outcome, 'CANCELLED_BEFORE_COMMIT');
      v.equal('final', final.state, 'CANCELLED');
      v.equal('local effects', effects.length, 0);
      v.equal('external applied', stats.applied, 1);
    });
  });
});
