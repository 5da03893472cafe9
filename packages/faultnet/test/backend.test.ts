import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, it } from 'vitest';
import { ALL_VARIANTS, type CaseContext, type FaultRun, runCase, runVariant, variantName, type Verdict, type Variant } from '../src/index.js';

const APP = 'pp_fault_worker';

/** The case's database URL with `application_name` (and optionally another role) set, so the test can find the workers' sessions. */
function workerUrl(ctx: CaseContext, user?: { name: string; password: string }): string {
  const u = new URL(ctx.databaseUrl);
  u.searchParams.set('application_name', APP);
  if (user) {
    u.username = user.name;
    u.password = user.password;
  }
  return u.toString();
}

/** Sleeps until `atMs` after `startedAt`. */
async function at(startedAt: number, atMs: number): Promise<void> {
  await sleep(Math.max(0, startedAt + atMs - performance.now()));
}

function countReasons(run: FaultRun, reason: string): number {
  return run.children.flatMap((c) => c.eventsOf('wheelRebuilt')).filter((e) => e.reason === reason).length;
}

/** Lateness p99 of the claims of tasks due after `fromMs` (database clock), in ms. */
function latenessAfter(run: FaultRun, fromMs: number): number {
  const values = run
    .claims()
    .filter((c) => c.dueAtMs >= fromMs)
    .map((c) => c.claimedAtMs - c.dueAtMs)
    .sort((a, b) => a - b);
  return values.length === 0 ? -1 : values[Math.min(values.length - 1, Math.ceil(0.99 * values.length) - 1)]!;
}

const WORKLOAD = { workers: 2, tasks: 100, firstDueMs: 300, spreadMs: 5_000, settleMs: 30_000, handler: { workMs: 350 } } as const;

async function terminateVariant(v: Verdict, ctx: CaseContext, variant: Variant): Promise<number> {
  const p = `${variantName(variant)}_`;
  const terminated: number[] = [];
  let lastAtMs = 0;
  const { run, violations } = await runVariant(v, ctx, variant, { ...WORKLOAD, databaseUrl: workerUrl(ctx), prefix: p }, async (_run, startedAt) => {
    for (const atMs of [1_500, 3_000]) {
      await at(startedAt, atMs);
      const { rows } = await ctx.pool.query<{ ok: boolean }>(
        'select pg_terminate_backend(pid) as ok from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()',
        [APP],
      );
      terminated.push(rows.filter((r) => r.ok).length);
      lastAtMs = Date.now();
    }
  });
  const reconnects = countReasons(run, 'reconnect');
  v.set(`${p}terminated`, terminated).set(`${p}reconnectRebuilds`, reconnects).set(`${p}latenessP99AfterMs`, latenessAfter(run, lastAtMs + 1_000));
  v.holds(`${p}sessions terminated each time`, terminated.every((n) => n > 0), `terminated ${JSON.stringify(terminated)}`);
  // Every hybrid worker listens again and re-reads the store after its LISTEN session was terminated.
  if (variant.discovery === 'hybrid') v.atLeast(`${p}reconnect rebuilds`, reconnects, WORKLOAD.workers);
  return violations;
}

async function roleTimeoutVariant(v: Verdict, ctx: CaseContext, variant: Variant): Promise<number> {
  const p = `${variantName(variant)}Timeouts_`;
  const role = { name: `pp_fault_${Math.random().toString(36).slice(2, 8)}`, password: 'fault' };
  const r = pg.escapeIdentifier(role.name);
  await ctx.pool.query(`create role ${r} login superuser password '${role.password}'`);
  try {
    await ctx.pool.query(`alter role ${r} set idle_session_timeout = '1000ms'`);
    await ctx.pool.query(`alter role ${r} set idle_in_transaction_session_timeout = '1000ms'`);
    await ctx.pool.query(`alter role ${r} set statement_timeout = '150ms'`);
    const { run, violations } = await runVariant(v, ctx, variant, { ...WORKLOAD, databaseUrl: workerUrl(ctx, role), prefix: p }, async () => {});
    v.set(`${p}reconnectRebuilds`, countReasons(run, 'reconnect'));
    return violations;
  } finally {
    await ctx.pool.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [role.name]).catch(() => {});
    await ctx.pool.query(`drop role if exists ${r}`).catch(() => {});
  }
}

describe('evidence: backends terminated and session timeouts', () => {
  it('backend_terminated: pg_terminate_backend of every worker session twice; idle/idle-in-transaction/statement timeouts on the role', async () => {
    await runCase('backend_terminated', async (v, ctx) => {
      v.set('violations', 0).set('idleSessionTimeoutMs', 1_000).set('idleInTransactionTimeoutMs', 1_000).set('statementTimeoutMs', 150);
      let total = 0;
      for (const variant of ALL_VARIANTS) total += await terminateVariant(v, ctx, variant);
      for (const variant of ALL_VARIANTS) total += await roleTimeoutVariant(v, ctx, variant);
      v.set('violations', total);
    });
  }, 300_000);
});

describe('evidence: read-only window', () => {
  it('read_only_window: default_transaction_read_only = on for 3 s (the issue says 10 s): writes fail with 25006, retried, never a handler failure', async () => {
    await runCase('read_only_window', async (v, ctx) => {
      v.set('violations', 0).set('windowMs', 3_000);
      let total = 0;
      for (const variant of ALL_VARIANTS) {
        const p = `${variantName(variant)}_`;
        const { run, violations } = await runVariant(v, ctx, variant, { ...WORKLOAD, prefix: p }, async (_run, startedAt) => {
          await at(startedAt, 1_500);
          // One session of the test's own, read-write whatever the server default becomes.
          const admin = new pg.Client({ connectionString: ctx.databaseUrl });
          await admin.connect();
          try {
            await admin.query('set default_transaction_read_only = off');
            await admin.query('alter system set default_transaction_read_only = on');
            await admin.query('select pg_reload_conf()');
            await sleep(3_000);
          } finally {
            await admin.query('alter system reset default_transaction_read_only');
            await admin.query('select pg_reload_conf()');
            await admin.end();
          }
        });
        total += violations;
        const readOnly = run.children.flatMap((c) => c.eventsOf('error')).filter((e) => /read-only|25006/.test(e.message)).length;
        v.set(`${p}readOnlyErrors`, readOnly);
        v.atLeast(`${p}writes refused during the window`, readOnly, 1);
      }
      v.set('violations', total);
    });
  }, 300_000);
});
