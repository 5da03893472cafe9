/**
 * Evidence for rate limits (docs/contract.md#rate-limits), with real worker processes: a kind limited
 * to 20 starts per second by one `setRateLimit` row, 400 tasks all due, three worker processes (two
 * polling, one hybrid) of concurrency 10. From the database-clock claim times the children report,
 * no window of one second holds more than 20 starts; every task runs once and ends DONE; and the
 * workers sleep while held back instead of polling: the claim calls (each one transaction of the
 * store) stay within twice the starts.
 */
import { isRateLimitStore } from '@postpone/core';
import { describe, it } from 'vitest';
import { allReady, CASE_WORKER, collectClaims, pollUntil, runCase, startAll, stopAll } from '../src/index.js';

const KIND = 'send-email';
const LIMIT = 20;
const WINDOW_MS = 1_000;
const TASKS = 400;

/** Most of the sorted `times` in one half-open window `[t, t + windowMs)`, over every start `t`. */
function maxInWindow(times: readonly number[], windowMs: number): number {
  let max = 0;
  let j = 0;
  for (let i = 0; i < times.length; i++) {
    while (j < times.length && (times[j] as number) < (times[i] as number) + windowMs) j++;
    max = Math.max(max, j - i);
  }
  return max;
}

describe('evidence: rate limits', () => {
  it(`rate_limit_exact: 3 worker processes, ${KIND} limited to ${LIMIT} starts per ${WINDOW_MS} ms, ${TASKS} due tasks: at most ${LIMIT} starts in every window, all DONE at attempt 1, claims within 2× the starts`, async () => {
    await runCase('rate_limit_exact', async (v, ctx) => {
      const store = ctx.store;
      if (!isRateLimitStore(store)) throw new Error('the PostgreSQL store has no rate limits');
      await store.setRateLimit({ kind: KIND, limit: LIMIT, windowMs: WINDOW_MS });
      const handler = { kind: KIND, workMs: 5 };
      const workers = [
        ctx.spawn({ name: 'w1', waitForStart: true, run: { mode: 'worker', worker: CASE_WORKER, handler } }),
        ctx.spawn({ name: 'w2', waitForStart: true, run: { mode: 'worker', worker: CASE_WORKER, handler } }),
        ctx.spawn({ name: 'w3', waitForStart: true, run: { mode: 'worker', worker: { ...CASE_WORKER, discovery: 'hybrid', fallbackPollMs: 1_000 }, handler } }),
      ];
      await allReady(workers);
      const ids = (await ctx.store.scheduleMany(Array.from({ length: TASKS }, (_, i) => ({ kind: KIND, payload: { i } })))).map((t) => t.id);
      await startAll(workers);
      await pollUntil(async () => (await ctx.db.countIn(['DONE'], ids)) === ids.length, { timeoutMs: 90_000, intervalMs: 100, what: `${TASKS} tasks DONE` });
      await stopAll(workers);

      const claims = collectClaims(workers);
      const starts = claims.map((c) => c.claimedAtMs).sort((a, b) => a - b);
      const calls = workers.flatMap((w) => w.eventsOf('claimTimed'));
      const failedCalls = calls.filter((c) => !c.ok).length;
      const emptyCalls = calls.filter((c) => c.ok && c.count === 0).length;
      const maxStarts = maxInWindow(starts, WINDOW_MS);
      const spanMs = (starts.at(-1) ?? 0) - (starts[0] ?? 0);
      const done = await ctx.db.countIn(['DONE'], ids);
      const attemptsAbove1 = claims.filter((c) => c.attempt > 1).length;
      const [row] = await store.listRateLimits();
      v.set('workers', workers.length)
        .set('limit', LIMIT)
        .set('windowMs', WINDOW_MS)
        .set('tasks', TASKS)
        .set('starts', starts.length)
        .set('maxStartsInAnyWindow', maxStarts)
        .set('startSpanMs', spanMs)
        .set('claimCalls', calls.length)
        .set('emptyClaimCalls', emptyCalls)
        .set('failedClaimCalls', failedCalls)
        // Each claim call is one transaction: BEGIN, rateLimitLock, COMMIT when held back before claiming;
        // BEGIN, rateLimitLock, taskClaimLimited, (rateLimitRooms when short), COMMIT otherwise: at most 5 statements.
        .set('claimStatementsAtMost', 5 * calls.length)
        .set('claimCallsPerStart', Math.round((calls.length / Math.max(1, starts.length)) * 100) / 100)
        .set('startsByWorker', workers.map((w) => claims.filter((c) => c.worker === w.name).length))
        .set('attemptsAbove1', attemptsAbove1)
        .set('done', done);
      v.atMost('starts in any window of 1 s (database clock)', maxStarts, LIMIT);
      v.equal('the limit was reached in some window', maxStarts, LIMIT);
      v.equal('starts', starts.length, TASKS);
      v.equal('distinct tasks started', new Set(claims.map((c) => c.id)).size, TASKS);
      v.equal('attempts above 1', attemptsAbove1, 0);
      v.equal('DONE', done, TASKS);
      v.atLeast('start span (400 starts at 20 per s need 19 s)', spanMs, (TASKS / LIMIT - 1) * WINDOW_MS);
      v.atMost('claim calls within 2x the starts', calls.length, 2 * TASKS);
      v.equal('failed claim calls', failedCalls, 0);
      v.equal('the limit row reads back', row?.limit ?? null, LIMIT);
    });
  });
});
