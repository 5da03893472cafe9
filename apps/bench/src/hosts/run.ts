/**
 * The `--hosts` bench: for each host count (default 1, 4, 8, 16) × `processesPerHost` worker
 * processes (default 2), every process started inside its host's network namespace with
 * `ip netns exec` (`NetnsHosts` of `packages/faultnet/src/faults`), reaching PostgreSQL through a counting
 * proxy per host that listens on the bridge address only. Per host count it measures:
 *
 * - server connections: the most `pg_stat_activity` rows of the workers' application names seen
 *   during the busy window, sampled every 500 ms (each proxied client connection is one backend);
 * - idle and busy statements per second per host: `Q` + `E` frontend messages counted by the
 *   host's proxy, over a window with no task due and over the busy window;
 * - claims per task: the workers' claim reports over the tasks scheduled (1.0 when no lease ran out);
 * - p99 lateness: claimed at − due at, by the database clock.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { NetnsHosts, netnsUnavailable } from '@postpone/faultnet';
import { allReady, FaultRun, lateness, startAll, withCaseContext, type WorkerSettings } from '@postpone/faultnet';
import { CountingProxy } from './counting-proxy.js';

export interface HostsBenchOptions {
  /** The primary (e.g. the bench's embedded PostgreSQL on 127.0.0.1). */
  readonly databaseUrl: string;
  readonly hostCounts?: readonly number[];
  readonly processesPerHost?: number;
  /** `pg` (default) or `postgres`. */
  readonly driver?: 'pg' | 'postgres';
  /** `poll` (default) or `hybrid`. */
  readonly discovery?: 'poll' | 'hybrid';
  /** Window with workers running and nothing due, ms (default 5 000). */
  readonly idleMs?: number;
  /** Window over which the tasks fall due, ms (default 10 000). */
  readonly busyMs?: number;
  /** Tasks due per second over the busy window, for the whole fleet (default 50: below what 2 processes sustain on a 2-core machine, so lateness is latency, not backlog). */
  readonly tasksPerSecond?: number;
  /** Called with a line of progress. */
  readonly onProgress?: (line: string) => void;
}

export interface HostsRow {
  readonly hosts: number;
  readonly processes: number;
  readonly serverConnections: number;
  readonly connectionsPerProcess: number;
  readonly idleStatementsPerSecPerHost: number;
  readonly busyStatementsPerSecPerHost: number;
  readonly tasks: number;
  readonly claimsPerTask: number;
  readonly latenessP50Ms: number;
  readonly latenessP99Ms: number;
}

export interface HostsBenchResult {
  readonly skipped?: string;
  readonly settings: WorkerSettings & { readonly driver: string; readonly processesPerHost: number; readonly idleMs: number; readonly busyMs: number; readonly tasksPerSecond: number };
  readonly rows: readonly HostsRow[];
}

/** Worker settings of the bench: a production-like lease, batch claims of up to `concurrency`. */
export const HOSTS_WORKER: WorkerSettings = Object.freeze({ concurrency: 8, leaseMs: 10_000, renewEveryMs: 3_000, pollIntervalMs: 250, backoffBaseMs: 500 });

const round1 = (x: number) => Math.round(x * 10) / 10;

/**
 * Runs the section. Hosts, proxies and processes are removed after each host count, also on failure.
 * @returns `skipped` with the reason when this machine cannot make network namespaces
 */
export async function runHostsBench(options: HostsBenchOptions): Promise<HostsBenchResult> {
  const hostCounts = options.hostCounts ?? [1, 4, 8, 16];
  const perHost = options.processesPerHost ?? 2;
  const idleMs = options.idleMs ?? 5_000;
  const busyMs = options.busyMs ?? 10_000;
  const rate = options.tasksPerSecond ?? 50;
  const driver = options.driver ?? 'pg';
  const settings = { ...HOSTS_WORKER, discovery: options.discovery ?? 'poll' } as const;
  const header = { ...settings, driver, processesPerHost: perHost, idleMs, busyMs, tasksPerSecond: rate };
  const unavailable = netnsUnavailable();
  if (unavailable !== undefined) return { skipped: unavailable, settings: header, rows: [] };
  const progress = options.onProgress ?? (() => {});
  const target = new URL(options.databaseUrl);
  const rows: HostsRow[] = [];
  for (const count of hostCounts) {
    progress(`hosts: ${count} × ${perHost} processes`);
    const hosts = NetnsHosts.create(count);
    const proxies: CountingProxy[] = [];
    try {
      for (let i = 0; i < count; i++) proxies.push(await CountingProxy.start(hosts.gateway, target.hostname, Number(target.port || 5432)));
      const tag = `pphb${process.pid}_`;
      const row = await withCaseContext(options.databaseUrl, 'bhosts', async (ctx) => {
        const run = new FaultRun(ctx, { settings, connection: { driver } });
        await run.prepare();
        const children = hosts.hosts.flatMap((host, h) =>
          Array.from({ length: perHost }, (_, p) => {
            const u = new URL(proxies[h]!.rewrite(options.databaseUrl));
            u.searchParams.set('application_name', `${tag}h${host.index}`);
            return run.spawn(`h${host.index}p${p + 1}`, { command: hosts.command(host), databaseUrl: u.toString() });
          }),
        );
        await allReady(children, 60_000 + 5_000 * children.length);
        await startAll(children);
        await sleep(2_000);
        const statements = () => proxies.reduce((sum, proxy) => sum + proxy.statements, 0);
        const idleFrom = statements();
        const idleStart = performance.now();
        await sleep(idleMs);
        const idlePerSec = (statements() - idleFrom) / ((performance.now() - idleStart) / 1_000) / count;
        const tasks = Math.max(1, Math.round((rate * busyMs) / 1_000));
        const busyFrom = statements();
        const busyStart = performance.now();
        // Server connections: the most seen in pg_stat_activity, sampled every 500 ms while busy.
        let peak = 0;
        const sample = async () => {
          const { rows } = await ctx.pool.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where application_name like $1', [`${tag}%`]);
          peak = Math.max(peak, rows[0]?.n ?? 0);
        };
        const sampler = setInterval(() => void sample().catch(() => undefined), 500);
        try {
          await run.schedule(tasks, 500, busyMs);
          await run.waitAllTerminal(busyMs + 60_000, 200);
        } finally {
          clearInterval(sampler);
        }
        await sample();
        const busyPerSec = (statements() - busyFrom) / ((performance.now() - busyStart) / 1_000) / count;
        const claims = run.claims();
        const late = lateness(claims);
        await run.stop(20_000);
        const serverConnections = peak;
        return {
          hosts: count,
          processes: children.length,
          serverConnections,
          connectionsPerProcess: round1(serverConnections / children.length),
          idleStatementsPerSecPerHost: round1(idlePerSec),
          busyStatementsPerSecPerHost: round1(busyPerSec),
          tasks,
          claimsPerTask: Math.round((claims.length / tasks) * 1_000) / 1_000,
          latenessP50Ms: Math.round(late.p50Ms),
          latenessP99Ms: Math.round(late.p99Ms),
        } satisfies HostsRow;
      });
      rows.push(row);
      progress(`hosts: ${count} → ${JSON.stringify(row)}`);
    } finally {
      await Promise.all(proxies.map((p) => p.close().catch(() => undefined)));
      hosts.destroy();
    }
  }
  return { settings: header, rows };
}

/** The section as Markdown: settings, then one row per host count. */
export function hostsMarkdown(result: HostsBenchResult): string {
  const s = result.settings;
  const lines = [
    '# Many worker hosts on one primary',
    '',
    `Hosts are Linux network namespaces on a private bridge; each runs ${s.processesPerHost} worker processes (\`ip netns exec\`), driver \`${s.driver}\`, discovery \`${s.discovery}\`, concurrency ${s.concurrency}, lease ${s.leaseMs} ms, poll ${s.pollIntervalMs} ms. PostgreSQL is reached through one counting proxy per host on the bridge address (statements = \`Q\` + \`E\` frontend messages). Idle: ${s.idleMs} ms with nothing due; busy: ${s.tasksPerSecond} tasks/s due over ${s.busyMs} ms. Budget formula: docs/contract.md#connection-budget.`,
    '',
  ];
  if (result.skipped) return [...lines, `Skipped: ${result.skipped}`, ''].join('\n');
  lines.push('| hosts | processes | server connections (peak) | per process | idle statements/s per host | busy statements/s per host | tasks | claims per task | lateness p50 ms | lateness p99 ms |');
  lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of result.rows) {
    lines.push(`| ${r.hosts} | ${r.processes} | ${r.serverConnections} | ${r.connectionsPerProcess} | ${r.idleStatementsPerSecPerHost} | ${r.busyStatementsPerSecPerHost} | ${r.tasks} | ${r.claimsPerTask} | ${r.latenessP50Ms} | ${r.latenessP99Ms} |`);
  }
  return [...lines, ''].join('\n');
}
