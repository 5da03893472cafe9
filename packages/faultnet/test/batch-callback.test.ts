/**
 * Evidence for batches with a callback (docs/contract.md#batches), with real worker processes: three
 * batches of 500 members, each filled in five calls of 100 and sealed while three workers (completing
 * in `completeMany` batches, so one statement often finishes members of several batches) run them.
 * About one member in ten has `maxAttempts: 1` and ends DEAD (every first attempt fails; the others
 * succeed on their second), 40 per batch are scheduled an hour ahead and cancelled, and 20 more per
 * batch are cancelled at random while the workers run. Each batch schedules exactly one callback task,
 * whose counts equal the members' terminal states in `task_history`.
 */
import type { BatchStore } from '@postpone/core';
import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const MEMBERS = 500;
const BATCHES = 3;
const CALLS = 5;
const HELD = 40;
const RANDOM_CANCELS = 20;
const CALLBACK = 'batch-report';

describe('evidence: batches with a callback', () => {
  it(`batch_callback_once: ${BATCHES} batches of ${MEMBERS}, random DEAD and cancels, 3 worker processes: one callback each, counts equal to the history`, { timeout: 240_000 }, async () => {
    await runCase('batch_callback_once', async (v, ctx) => {
      const store = ctx.store as typeof ctx.store & BatchStore;
      const worker = { ...CASE_WORKER, concurrency: 10, backoffBaseMs: 20 };
      const handler = { kind: 'member', workMs: 5, failAttempts: 1, effect: false };
      const workers = ['w1', 'w2', 'w3'].map((name) => ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker, handler } }));
      await allReady(workers);
      await startAll(workers);
      // A seeded choice (mulberry32), so a rerun makes the same batches.
      let seed = 29;
      const random = () => {
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
      };
      const batches: { id: string; members: string[]; held: string[] }[] = [];
      for (let b = 0; b < BATCHES; b++) {
        const id = await store.createBatch({ callback: { kind: CALLBACK, payload: { batch: b } } });
        const members: string[] = [];
        const held: string[] = [];
        for (let call = 0; call < CALLS; call++) {
          const per = MEMBERS / CALLS;
          const inputs = Array.from({ length: per }, (_, i) => {
            const n = call * per + i;
            if (n < HELD) return { kind: 'member', payload: { b, n }, delayMs: 3_600_000 };
            return { kind: 'member', payload: { b, n }, maxAttempts: random() < 0.1 ? 1 : 3 };
          });
          const scheduled = await store.scheduleInBatch(id, inputs);
          for (const [i, s] of scheduled.entries()) (call * per + i < HELD ? held : members).push(s.id);
        }
        await store.sealBatch(id);
        batches.push({ id, members: [...held, ...members], held });
      }
      // Cancels: the held members (SCHEDULED) and random others, whatever their state by then.
      const outcomes: Record<string, number> = {};
      for (const b of batches) {
        const random20 = b.members.slice(HELD).filter(() => random() < RANDOM_CANCELS / (MEMBERS - HELD));
        for (const id of [...b.held, ...random20]) {
          const outcome = await store.cancel(id);
          outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
        }
      }
      const callbacks = async () =>
        (await ctx.pool.query<{ batch: string; n: number; payload: { batch: { id: string; total: number; done: number; dead: number; cancelled: number } } }>(
          `select payload->'batch'->>'id' as batch, count(*) over (partition by payload->'batch'->>'id')::int as n, payload from "${ctx.schema}".task where kind = $1`,
          [CALLBACK],
        )).rows;
      await pollUntil(async () => new Set((await callbacks()).map((r) => r.batch)).size === BATCHES, { timeoutMs: 180_000, intervalMs: 200, what: `${BATCHES} callbacks` });
      // Time for a second (wrong) callback to appear, had one been scheduled twice.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await stopAll(workers);

      const rows = await callbacks();
      const allMembers = batches.flatMap((b) => b.members);
      v.set('batches', BATCHES).set('membersEach', MEMBERS).set('workers', workers.length).set('cancelOutcomes', Object.entries(outcomes).map(([k, n]) => `${k}:${n}`));
      v.set('callbackTasks', rows.length);
      v.equal('callback tasks', rows.length, BATCHES);
      const live = await ctx.pool.query<{ n: number }>(`select count(*)::int as n from "${ctx.schema}".task where id = any($1::bigint[])`, [allMembers]);
      v.equal('members still live', live.rows[0]?.n, 0);
      for (const [i, b] of batches.entries()) {
        const { rows: states } = await ctx.pool.query<{ state: string; n: number }>(
          `select state, count(*)::int as n from "${ctx.schema}".task_history where id = any($1::bigint[]) group by state`,
          [b.members],
        );
        const history = { DONE: 0, DEAD: 0, CANCELLED: 0 } as Record<string, number>;
        for (const s of states) history[s.state] = s.n;
        const mine = rows.filter((r) => r.batch === b.id);
        const counts = mine[0]?.payload.batch;
        const info = await store.getBatch(b.id);
        v.set(`batch${i}`, [history.DONE ?? 0, history.DEAD ?? 0, history.CANCELLED ?? 0]);
        v.equal(`batch ${i}: callbacks`, mine.length, 1);
        v.equal(
          `batch ${i}: callback counts = history`,
          [counts?.id, counts?.total, counts?.done, counts?.dead, counts?.cancelled],
          [b.id, MEMBERS, history.DONE, history.DEAD, history.CANCELLED],
        );
        v.equal(`batch ${i}: history rows`, (history.DONE ?? 0) + (history.DEAD ?? 0) + (history.CANCELLED ?? 0), MEMBERS);
        v.equal(`batch ${i}: getBatch`, [info?.state, info?.remaining, info?.callbackTaskId === null], ['CALLED_BACK', 0, false]);
        v.atLeast(`batch ${i}: DEAD members`, history.DEAD ?? 0, 1);
        v.atLeast(`batch ${i}: CANCELLED members`, history.CANCELLED ?? 0, HELD);
        v.atLeast(`batch ${i}: DONE members`, history.DONE ?? 0, 1);
      }
    });
  });
});
