/**
 * Evidence for dependencies (docs/contract.md#dependencies), with real worker processes:
 * - `dependency_chain_kill9`: A → B → C scheduled in one `scheduleMany`, 3 worker processes; the
 *   process running B (parked after its claim) is killed with SIGKILL; B is reclaimed after its
 *   lease and run by another process. Each task's handler effect (`app_effect` row) exactly once,
 *   in order by the database clock: every claim of B after A's finish, C's claim after B's finish;
 *   C DONE.
 * - `fan_in_exactly_once`: 200 parents due at one instant, run by 3 processes of concurrency 70 (lease 5 s), one
 *   dependent after all of them: released once (one release notice heard on the workers' channel,
 *   its counter at 0, no edge left), claimed once, one effect, DONE. The parents' finish spread
 *   (database clock) is reported.
 */
import { defaultNotifyChannel } from '@postpone/postgres';
import pg from 'pg';
import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, collectClaims, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const A = 'chain-a';
const B = 'chain-b';
const C = 'chain-c';

describe('evidence: dependencies', () => {
  it('dependency_chain_kill9: A → B → C on 3 processes, the one running B killed: each effect once, in order, C DONE', async () => {
    await runCase('dependency_chain_kill9', async (v, ctx) => {
      // w1 runs only B and parks on its first attempt; w3 runs A and C; w2 (all three) starts after the kill.
      const w1 = ctx.spawn({ name: 'w1', run: { mode: 'worker', worker: CASE_WORKER, handler: { kind: B, park: [{ point: 'afterClaim', attempts: [1] }] } } });
      const w3 = ctx.spawn({ name: 'w3', run: { mode: 'worker', worker: CASE_WORKER, handler: { kind: A, alsoKinds: [C] } } });
      const w2 = ctx.spawn({ name: 'w2', waitForStart: true, run: { mode: 'worker', worker: CASE_WORKER, handler: { kind: A, alsoKinds: [B, C] } } });
      await allReady([w1, w2, w3]);
      const [a, b, c] = await ctx.store.scheduleMany([{ kind: A }, { kind: B, after: [{ index: 0 }] }, { kind: C, after: [{ index: 1 }] }]);
      if (a === undefined || b === undefined || c === undefined) throw new Error('three tasks expected');
      await w1.waitFor('parked', (e) => e.id === b.id, 30_000);
      const exit = await w1.kill9();
      await startAll([w2]);
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], [c.id])) === 1, { timeoutMs: 60_000, intervalMs: 50, what: 'C DONE' });
      const workers = [w2, w3];
      await stopAll(workers);
      const q = pg.escapeIdentifier(ctx.schema);
      const { rows: finished } = await ctx.pool.query<{ id: string; state: string; attempt: number; finishedMs: number }>(
        `select id::text as id, state, attempt, floor(extract(epoch from finished_at) * 1000)::float8 as "finishedMs" from ${q}.task_history where id = any($1::bigint[]) order by id`,
        [[a.id, b.id, c.id]],
      );
      const fin = new Map(finished.map((r) => [r.id, r]));
      const claims = [...collectClaims([w1]), ...collectClaims(workers)].filter((e) => [a.id, b.id, c.id].includes(e.id));
      const claimsOf = (id: string) => claims.filter((e) => e.id === id);
      const effects = await ctx.db.effects();
      const effectsOf = (id: string) => effects.filter((e) => e.taskId === id).map((e) => `${e.attempt}:${e.worker}`);
      const aFinish = fin.get(a.id)?.finishedMs ?? Number.NaN;
      const bFinish = fin.get(b.id)?.finishedMs ?? Number.NaN;
      const bAfterA = Math.min(...claimsOf(b.id).map((e) => e.claimedAtMs)) - aFinish;
      const cAfterB = Math.min(...claimsOf(c.id).map((e) => e.claimedAtMs)) - bFinish;
      v.set('exitW1', exit.signal ?? exit.code ?? null)
        .set('states', finished.map((r) => `${r.state}/a${r.attempt}`))
        .set('claimsB', claimsOf(b.id).map((e) => `${e.attempt}`))
        .set('effects', [...effectsOf(a.id), ...effectsOf(b.id), ...effectsOf(c.id)])
        .set('bClaimAfterAFinishMs', bAfterA)
        .set('cClaimAfterBFinishMs', cAfterB);
      v.equal('w1 killed by SIGKILL', exit.signal ?? null, 'SIGKILL');
      v.equal('states', finished.map((r) => r.state), ['DONE', 'DONE', 'DONE']);
      v.equal('A effect once', effectsOf(a.id).length, 1);
      v.equal('B effect once, by its second attempt', effectsOf(b.id).map((e) => e.split(':')[0]), ['2']);
      v.equal('C effect once', effectsOf(c.id).length, 1);
      v.equal('B claimed twice (killed, then reclaimed)', claimsOf(b.id).map((e) => e.attempt), [1, 2]);
      v.equal('C claimed once', claimsOf(c.id).length, 1);
      v.atLeast('every B claim after A finished (database clock, ms)', bAfterA, 0);
      v.atLeast('C claim after B finished (database clock, ms)', cAfterB, 0);
    });
  });

  it('fan_in_exactly_once: 200 parents finishing together on 3 processes, one dependent released once and run once', async () => {
    await runCase('fan_in_exactly_once', async (v, ctx) => {
      // A longer lease than CASE_WORKER's: 200 handlers at once on a loaded machine must not lose leases (a reclaim is not what this case shows).
      const worker = { ...CASE_WORKER, concurrency: 70, leaseMs: 5_000, renewEveryMs: 1_000 };
      const workers = ['w1', 'w2', 'w3'].map((name) => ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker, handler: { kind: 'fan-parent', alsoKinds: ['fan-child'] } } }));
      await allReady(workers);
      const runAt = new Date((await ctx.store.now()).getTime() + 1_500);
      const parents = await ctx.store.scheduleMany(Array.from({ length: 200 }, (_, i) => ({ kind: 'fan-parent', runAt, payload: { i } })));
      const child = await ctx.store.schedule({ kind: 'fan-child', after: parents.map((p) => p.id) });
      const listener = new pg.Client({ connectionString: ctx.databaseUrl });
      await listener.connect();
      const releases: number[] = [];
      listener.on('notification', (n) => {
        const m = JSON.parse(n.payload ?? '{}') as { op?: string; id?: string; dueAtMs?: number };
        if (m.op === 'scheduled' && m.id === child.id && (m.dueAtMs ?? 0) > child.dueAt.getTime()) releases.push(m.dueAtMs as number);
      });
      await listener.query(`listen ${pg.escapeIdentifier(defaultNotifyChannel(ctx.schema))}`);
      try {
        await startAll(workers);
        await pollUntil(async () => (await ctx.db.countIn(['DONE'], [child.id])) === 1, { timeoutMs: 60_000, intervalMs: 50, what: 'the dependent DONE' });
        await stopAll(workers);
      } finally {
        await listener.end();
      }
      const q = pg.escapeIdentifier(ctx.schema);
      const { rows } = await ctx.pool.query<{ spread: number; last: number; n: number }>(
        `select (floor(extract(epoch from max(finished_at) - min(finished_at)) * 1000))::float8 as spread, floor(extract(epoch from max(finished_at)) * 1000)::float8 as last, count(*)::int as n
           from ${q}.task_history where id = any($1::bigint[]) and state = 'DONE'`,
        [parents.map((p) => p.id)],
      );
      const { rows: edges } = await ctx.pool.query<{ n: number }>(`select count(*)::int as n from ${q}.task_dependency`);
      const claims = collectClaims(workers);
      const childClaims = claims.filter((e) => e.id === child.id);
      const effects = (await ctx.db.effects(child.id)).map((e) => `${e.attempt}:${e.worker}`);
      const byWorker = workers.map((w) => w.eventsOf('claimed').filter((e) => e.id !== child.id).length);
      const childDue = (await ctx.db.task(child.id)).dueAtMs;
      const childClaimAfterLast = (childClaims[0]?.claimedAtMs ?? Number.NaN) - (rows[0]?.last ?? Number.NaN);
      v.set('parents', parents.length)
        .set('parentsDone', rows[0]?.n ?? 0)
        .set('parentFinishSpreadMs', rows[0]?.spread ?? null)
        .set('parentClaimsByWorker', byWorker)
        .set('parentClaims', claims.length - childClaims.length)
        .set('releaseNotices', releases.length)
        .set('childClaims', childClaims.map((e) => e.attempt))
        .set('childEffects', effects)
        .set('childDueAfterLastParentMs', childDue - (rows[0]?.last ?? Number.NaN))
        .set('childClaimAfterLastParentMs', childClaimAfterLast)
        .set('edgesLeft', edges[0]?.n ?? -1);
      v.equal('parents DONE', rows[0]?.n, 200);
      v.equal('released once (release notices)', releases.length, 1);
      v.equal('claimed once, attempt 1', childClaims.map((e) => e.attempt), [1]);
      v.equal('one effect', effects.length, 1);
      v.atLeast('claimed after the last parent finished (database clock, ms)', childClaimAfterLast, 0);
      v.equal('no edge left', edges[0]?.n, 0);
      v.atLeast('parents ran on every process', Math.min(...byWorker), 1);
    });
  });
});
