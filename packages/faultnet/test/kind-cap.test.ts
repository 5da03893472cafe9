/**
 * Evidence for the per-kind concurrency cap (docs/contract.md#kind-concurrency), with real worker
 * processes: three workers of concurrency 5 each, all with `kindConcurrency: { 'call-partner-api': 2 }`,
 * never hold more than 2 tasks of the capped kind at once — seen from the database (CLAIMED rows
 * sampled through the run) and from the children's own handler start/end reports — while the
 * uncapped kind runs on the other slots.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import { allReady, STEADY_WORKER, collectClaims, type HarnessChild, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const CAPPED = 'call-partner-api';
const OTHER = 'other';
const CAP = 2;

/** Most handler runs of `ids` overlapping at one instant, from the children's `handlerStarted`/`handlerEnded` wall times (an end before a start at the same ms). */
function maxConcurrent(children: readonly HarnessChild[], ids: ReadonlySet<string>): number {
  const edges: [number, number][] = [];
  for (const child of children) {
    for (const e of child.eventsOf('handlerStarted')) if (ids.has(e.id)) edges.push([e.wallMs, 1]);
    for (const e of child.eventsOf('handlerEnded')) if (ids.has(e.id)) edges.push([e.wallMs, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, delta] of edges) {
    now += delta;
    max = Math.max(max, now);
  }
  return max;
}

describe('evidence: per-kind concurrency cap', () => {
  it(`kind_concurrency_cap: 3 worker processes of concurrency 5, ${CAPPED} capped at ${CAP}: never more than ${CAP} CLAIMED or running, every task DONE once`, async () => {
    await runCase('kind_concurrency_cap', async (v, ctx) => {
      const worker = { ...STEADY_WORKER, concurrency: 5, kindConcurrency: { [CAPPED]: CAP } };
      const handler = { kind: CAPPED, alsoKinds: [OTHER], workMs: 30, reportEnd: true };
      const workers = ['w1', 'w2', 'w3'].map((name) => ctx.spawn({ name, waitForStart: true, run: { mode: 'worker', worker, handler } }));
      await allReady(workers);
      const capped = await ctx.store.scheduleMany(Array.from({ length: 60 }, (_, i) => ({ kind: CAPPED, payload: { i } })));
      const others = await ctx.store.scheduleMany(Array.from({ length: 60 }, (_, i) => ({ kind: OTHER, payload: { i } })));
      const cappedIds = new Set(capped.map((t) => t.id));
      const otherIds = new Set(others.map((t) => t.id));
      const allIds = [...cappedIds, ...otherIds];

      // Sample the CLAIMED rows of each kind from the database through the whole run.
      const sampled = { capped: 0, other: 0, samples: 0 };
      let sampling = true;
      const sampler = (async () => {
        for (let i = 0; i < 20_000 && sampling; i++) {
          const { rows } = await ctx.pool.query<{ kind: string; n: number }>(
            `select kind, count(*)::int as n from "${ctx.schema}".task where state = 'CLAIMED' group by kind`,
          );
          for (const r of rows) {
            if (r.kind === CAPPED) sampled.capped = Math.max(sampled.capped, r.n);
            if (r.kind === OTHER) sampled.other = Math.max(sampled.other, r.n);
          }
          sampled.samples += 1;
          await sleep(2);
        }
      })();
      await startAll(workers);
      try {
        await pollUntil(async () => (await ctx.db.countIn(['DONE'], allIds)) === allIds.length, { timeoutMs: 60_000, intervalMs: 50, what: '120 tasks DONE' });
      } finally {
        sampling = false;
        await sampler;
      }
      await stopAll(workers);

      const claims = collectClaims(workers);
      const cappedClaims = claims.filter((c) => cappedIds.has(c.id));
      const runsByWorker = workers.map((w) => w.eventsOf('handlerStarted').filter((e) => cappedIds.has(e.id)).length);
      const maxCappedRunning = maxConcurrent(workers, cappedIds);
      const maxOtherRunning = maxConcurrent(workers, otherIds);
      const ended = workers.flatMap((w) => w.eventsOf('handlerEnded')).length;
      const done = await ctx.db.countIn(['DONE'], allIds);
      const attempts = new Set(claims.map((c) => c.attempt));
      v.set('workers', workers.length)
        .set('concurrencyEach', worker.concurrency)
        .set('cap', CAP)
        .set('cappedTasks', cappedIds.size)
        .set('uncappedTasks', otherIds.size)
        .set('samples', sampled.samples)
        .set('maxCappedClaimedSampled', sampled.capped)
        .set('maxCappedRunning', maxCappedRunning)
        .set('maxUncappedClaimedSampled', sampled.other)
        .set('maxUncappedRunning', maxOtherRunning)
        .set('cappedRunsByWorker', runsByWorker)
        .set('claims', claims.length)
        .set('done', done);
      v.atMost('capped kind CLAIMED in any sample', sampled.capped, CAP);
      v.atMost('capped kind handlers running at once', maxCappedRunning, CAP);
      v.equal('the cap was reached (handlers running at once)', maxCappedRunning, CAP);
      v.atLeast('samples taken', sampled.samples, 1);
      v.atLeast('uncapped kind ran wider than the cap', maxOtherRunning, CAP + 1);
      v.equal('every handler reported its end', ended, allIds.length);
      v.equal('claims', claims.length, allIds.length);
      v.equal('distinct tasks claimed', new Set(claims.map((c) => c.id)).size, allIds.length);
      v.equal('capped tasks claimed', cappedClaims.length, cappedIds.size);
      v.equal('attempts', [...attempts], [1]);
      v.equal('DONE', done, allIds.length);
    });
  });
});
