import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, it } from 'vitest';
import { ALL_VARIANTS, childOps, failoverLoss, PgStandbyPair, runCase, runVariant, TcpProxy, type Variant, variantName, type Verdict, withCaseContext } from '../src/index.js';

/**
 * failover_promote (issue #26, item 1): a primary and a synchronous streaming standby; workers reach
 * the primary through an endpoint (the harness proxy) that, like a DNS name or a cloud endpoint,
 * keeps every open connection where it is and sends new ones to the old node for `DNS_LAG_MS` after
 * the promotion. The old primary is fenced read-only (`default_transaction_read_only = on`, no
 * restart: its connections stay open and every write on them fails with 25006). Workers must leave
 * it by themselves (the claim, renew and completion connections and the listener) and claim on the
 * new primary; the history is judged on the new primary.
 */
const FAILOVER_AT_MS = 2_000;
const DNS_LAG_MS = 2_000;
/** Longest time a worker connection may stay on the old primary after the endpoint moved. */
const LEAVE_WITHIN_MS = 15_000;

/**
 * The store's sessions on the old primary every 100 ms from `fromAt` until none is left or `untilMs`
 * passed; returns when the last one went, ms after `fromAt` (-1: never). With postgres.js the
 * store's sessions are those named `postgres.js`: the harness child's own `pg` pool (its readiness
 * probe; idle, closed by pg's idle timeout) is not the store's. With `pg` that pool is the store's.
 */
async function watchOldPrimary(pair: PgStandbyPair, variant: Variant, fromAt: number, untilMs: number): Promise<{ lastSeenMs: number; emptyAtMs: number; peak: number }> {
  let lastSeenMs = 0;
  let peak = 0;
  const applicationName = variant.driver === 'postgres' ? 'postgres.js' : undefined;
  for (let i = 0; i < Math.ceil(untilMs / 100) + 1; i++) {
    const n = await pair.sessionsOnOldPrimary(applicationName).catch(() => -1);
    const at = performance.now() - fromAt;
    if (n > 0) {
      if (process.env.POSTPONE_FAILOVER_DEBUG && i % 10 === 0) console.error(at.toFixed(0), await pair.describeOldPrimarySessions());
      lastSeenMs = at;
      peak = Math.max(peak, n);
    } else if (n === 0) return { lastSeenMs: Math.round(lastSeenMs), emptyAtMs: Math.round(at), peak };
    if (at >= untilMs) break;
    await sleep(100);
  }
  return { lastSeenMs: Math.round(lastSeenMs), emptyAtMs: -1, peak };
}

/** Asynchronous variant: how long the replication link is cut before the crash-like failover (the primary acknowledges commits the standby never gets). */
const LOSS_WINDOW_MS = 1_000;

/**
 * One variant. `multiHost` (postgres.js): the store's `sql` gets both servers' addresses with
 * `target_session_attrs=read-write` instead of the lagging endpoint, so a new connection skips a
 * read-only server itself; the connections it holds on the old primary must still leave it.
 */
/** Both servers in one postgres.js URL, the primary first, `target_session_attrs=read-write`. */
function multiHostUrl(pair: PgStandbyPair): string {
  const a = new URL(pair.primary.url);
  const b = new URL(pair.standby.url);
  return `postgres://${a.username}:${a.password}@127.0.0.1:${a.port},127.0.0.1:${b.port}${a.pathname}?target_session_attrs=read-write`;
}

async function failoverVariant(v: Verdict, variant: Variant, synchronous = true, multiHost = false): Promise<number> {
  const p = `${variantName(variant)}${multiHost ? 'MultiHost' : ''}_`;
  const pair = await PgStandbyPair.start({ synchronous });
  // The test's own endpoint follows the promotion at once (the judge reads the new primary); the workers' lags.
  const testEndpoint = await TcpProxy.forUrl(pair.primary.url);
  const workerEndpoint = await TcpProxy.forUrl(pair.primary.url);
  const standbyPort = Number(new URL(pair.standby.url).port);
  try {
    return await withCaseContext(testEndpoint.rewrite(pair.primary.url), 'failover', async (ctx) => {
      let promotedAt = 0;
      let switchedAt = 0;
      let watch = { lastSeenMs: 0, emptyAtMs: -1, peak: 0 };
      const { run, violations, verdict } = await runVariant(
        v,
        ctx,
        variant,
        {
          workers: 2,
          tasks: 150,
          firstDueMs: 300,
          spreadMs: 6_000,
          settleMs: 40_000,
          prefix: p,
          databaseUrl: workerEndpoint.rewrite(pair.primary.url),
          ...(multiHost ? { connection: { postgresJsUrl: multiHostUrl(pair) } } : {}),
          // A lease longer than the failover window (fence, catch-up, promotion, DNS lag): no lease
          // needs to run out, so no attempt is used up by it.
          settings: { leaseMs: 6_000, renewEveryMs: 1_000 },
          handler: { workMs: 200 },
          history: synchronous ? 'strict' : 'report',
        },
        async (_run, startedAt) => {
          await sleep(Math.max(0, startedAt + FAILOVER_AT_MS - performance.now()));
          if (!synchronous) {
            pair.cutReplication();
            await sleep(LOSS_WINDOW_MS);
          }
          const times = await pair.failover({ catchUp: synchronous });
          promotedAt = times.promotedAt;
          v.set(`${p}fenceToPromotedMs`, Math.round(times.promotedAt - times.fencedAt)).set(`${p}lagBytesAtFence`, times.lagBytes);
          testEndpoint.retarget('127.0.0.1', standbyPort);
          for (const c of testEndpoint.list()) if (c.open) testEndpoint.setConnectionFault(c.id, { mode: 'drop' });
          await sleep(DNS_LAG_MS);
          workerEndpoint.retarget('127.0.0.1', standbyPort);
          switchedAt = performance.now();
          watch = await watchOldPrimary(pair, variant, switchedAt, LEAVE_WITHIN_MS);
        },
      );
      const claimsAfter = run.children.flatMap((c) => c.eventsOf('claimed')).filter((e) => e.receivedAt > promotedAt);
      const firstClaimMs = claimsAfter.length > 0 ? Math.round(Math.min(...claimsAfter.map((e) => e.receivedAt)) - promotedAt) : -1;
      const readOnlyErrors = run.children.flatMap((c) => c.eventsOf('error')).filter((e) => /25006|read-only/.test(e.message));
      const lastReadOnlyMs = readOnlyErrors.length > 0 ? Math.round(Math.max(...readOnlyErrors.map((e) => e.receivedAt)) - promotedAt) : -1;
      // Attempts used up, read on the new primary (the history is there).
      const q = pg.escapeIdentifier(ctx.schema);
      const { rows } = await ctx.pool.query<{ failures: number; reclaimed: number }>(
        `select coalesce(sum(failures), 0)::int as failures, 0 as reclaimed from (select failures from ${q}.task where id = any($1::bigint[])
         union all select failures from ${q}.task_history where id = any($1::bigint[])) x`,
        [run.ids],
      );
      const failures = rows[0]!.failures;
      v.set(`${p}promotionToFirstClaimMs`, firstClaimMs)
        .set(`${p}dnsLagMs`, multiHost ? 0 : DNS_LAG_MS)
        .set(`${p}readOnlyErrors`, readOnlyErrors.length)
        .set(`${p}lastReadOnlyErrorAfterPromotionMs`, lastReadOnlyMs)
        .set(`${p}oldPrimarySessionsPeak`, watch.peak)
        .set(`${p}oldPrimaryEmptyAfterSwitchMs`, watch.emptyAtMs)
        .set(`${p}failuresUsed`, failures);
      v.holds(`${p}claimed on the new primary`, firstClaimMs >= 0, 'no claim after the promotion');
      v.holds(`${p}claimed within 5 s after the endpoint moved`, firstClaimMs >= 0 && firstClaimMs <= DNS_LAG_MS + 5_000, `first claim ${firstClaimMs} ms after promotion`);
      v.holds(`${p}workers left the old primary`, watch.emptyAtMs >= 0, `sessions still there ${LEAVE_WITHIN_MS} ms after the endpoint moved`);
      if (synchronous) {
        v.equal(`${p}attempts used up by the failover`, failures, 0);
        return violations;
      }
      // Asynchronous: what was lost, exactly, and whether what is there agrees with itself.
      // The whole history as the judge saw it: the test's schedules and every child's operations, in each child's order.
      const history = { ...run.recorder.history(), ops: [...run.recorder.ops, ...run.children.flatMap((c) => childOps(c))] };
      const loss = failoverLoss(history, verdict);
      v.set(`${p}lostSchedules`, loss.schedules.length)
        .set(`${p}lostDone`, loss.done.length)
        .set(`${p}lostDoneFirst`, loss.done.slice(0, 5))
        .set(`${p}lostClaims`, loss.claims.length)
        .set(`${p}effectsWithoutDone`, loss.effectsWithoutDone)
        .set(`${p}duplicateEffects`, loss.duplicateEffects);
      v.holds(`${p}the cut lost acknowledged DONE transitions`, loss.done.length > 0, 'nothing lost: the case did not test a loss');
      v.equal(`${p}effects without DONE on the new primary`, loss.effectsWithoutDone, 0);
      v.equal(`${p}duplicate effects on the new primary`, loss.duplicateEffects, 0);
      v.equal(`${p}violations not explained by the loss`, loss.unexplained.map((x) => `${x.kind}:${x.taskId}:${x.detail}`).slice(0, 10), []);
      return loss.unexplained.length;
    });
  } finally {
    await workerEndpoint.close();
    await testEndpoint.close();
    await pair.close();
  }
}

describe('evidence: failover', () => {
  it('failover_promote: synchronous standby promoted, old primary fenced read-only, endpoint lags 2 s; both drivers, poll and hybrid', async () => {
    await runCase('failover_promote', async (v) => {
      v.set('violations', 0).set('failoverAtMs', FAILOVER_AT_MS).set('dnsLagMs', DNS_LAG_MS).set('replication', 'synchronous');
      let total = 0;
      for (const variant of ALL_VARIANTS) total += await failoverVariant(v, variant);
      v.set('violations', total);
    });
  }, 600_000);

  it('failover_multihost: postgres.js with both hosts and target_session_attrs=read-write, synchronous standby promoted, old primary fenced; poll and hybrid', async () => {
    await runCase('failover_multihost', async (v) => {
      v.set('violations', 0).set('failoverAtMs', FAILOVER_AT_MS).set('replication', 'synchronous').set('url', 'two hosts, target_session_attrs=read-write');
      let total = 0;
      for (const variant of ALL_VARIANTS.filter((x) => x.driver === 'postgres')) total += await failoverVariant(v, variant, true, true);
      v.set('violations', total);
    });
  }, 600_000);

  it('failover_async_loss: asynchronous standby, replication cut 1 s, crash-like promotion: exactly what was lost, and the effects there agree with DONE; one variant per driver', async () => {
    await runCase('failover_async_loss', async (v) => {
      v.set('violations', 0).set('failoverAtMs', FAILOVER_AT_MS).set('lossWindowMs', LOSS_WINDOW_MS).set('dnsLagMs', DNS_LAG_MS).set('replication', 'asynchronous');
      let total = 0;
      for (const variant of ALL_VARIANTS.filter((x) => ['pgPoll', 'postgresHybrid'].includes(variantName(x)))) total += await failoverVariant(v, variant, false);
      v.set('violations', total);
    });
  }, 600_000);
});
