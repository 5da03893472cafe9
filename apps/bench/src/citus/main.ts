/**
 * `pnpm bench --citus`: Postpone on plain PostgreSQL 15 vs Citus 13.2 with 1 and 2 worker nodes
 * (issue #25), on a throwaway 3-node cluster started from `CITUS_TARBALL` ({@link startCitusCluster}).
 * Not part of the default bench. Writes `citus.md` and `citus-results.json` into the report folder.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import pg from 'pg';
import { startCitusCluster } from './cluster.js';
import { CITUS_BENCH_DEFAULTS, type CitusBenchOptions, runCitusBench } from './measure.js';
import { writeCitusReport } from './report.js';

const count = (max: number) => (value: string): number => {
  const v = Number(value.replace(/_/g, ''));
  if (!Number.isInteger(v) || v < 1 || v > max) throw new InvalidArgumentError(`must be an integer 1..${max}`);
  return v;
};

interface CitusCli {
  readonly quick?: boolean;
  readonly tasks?: number;
  readonly rounds?: number;
  readonly probes?: number;
  readonly out: string;
}

/**
 * Runs the Citus bench with command-line `args` (without the `--citus` flag itself).
 * @returns the path of the written report
 * @throws CitusClusterError when `CITUS_TARBALL` is unset or the cluster does not start
 */
export async function citusMain(args: readonly string[], repoRoot: string): Promise<string> {
  const program = new Command()
    .name('postpone-bench --citus')
    .description('Postpone on plain PostgreSQL 15 vs Citus 13.2 (1 and 2 worker nodes) through the sharded front; needs CITUS_TARBALL (and root for install-citus.sh).')
    .option('--quick', '1 round of 1 000 tasks, 100 probes')
    .option('--tasks <n>', `tasks per round and set-up (default ${CITUS_BENCH_DEFAULTS.tasks})`, count(100_000))
    .option('--rounds <n>', `rounds (default ${CITUS_BENCH_DEFAULTS.rounds})`, count(20))
    .option('--probes <n>', `statements per kind in the coordinator-overhead probe (default ${CITUS_BENCH_DEFAULTS.probes})`, count(100_000))
    .option('--out <dir>', 'report folder', join(repoRoot, 'evidence', 'bench'))
    .exitOverride();
  program.parse(['node', 'citus', ...args]);
  const o = program.opts<CitusCli>();
  const quick: Partial<CitusBenchOptions> = o.quick ? { tasks: 1_000, rounds: 1, probes: 100 } : {};
  const options: CitusBenchOptions = {
    ...CITUS_BENCH_DEFAULTS,
    ...quick,
    ...(o.tasks ? { tasks: o.tasks } : {}),
    ...(o.rounds ? { rounds: o.rounds } : {}),
    ...(o.probes ? { probes: o.probes } : {}),
  };
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
  } catch {}
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const started = Date.now();
  const loadBefore = loadavg()[0] ?? 0;
  const cluster = await startCitusCluster(log);
  let stopping = false;
  const onSignal = () => {
    if (stopping) return;
    stopping = true;
    log('interrupted: stopping the Citus cluster');
    void cluster.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const coordinator = cluster.nodes[0] as (typeof cluster.nodes)[number];
    const client = new pg.Client({ connectionString: cluster.url(coordinator.port) });
    await client.connect();
    const { rows } = await client.query<{ pg: string; citus: string }>('select version() as pg, citus_version() as citus');
    await client.end();
    const versions = { postgres: (rows[0]?.pg ?? '').split(' on ')[0] ?? '', citus: (rows[0]?.citus ?? '').split(' on ')[0] ?? '' };
    const rounds = await runCitusBench(cluster, options, log);
    return writeCitusReport(o.out, {
      at: new Date(started).toISOString(),
      commit,
      cpus: cpus().length,
      loadBefore,
      loadAfter: loadavg()[0] ?? 0,
      durationS: Math.round((Date.now() - started) / 1000),
      versions,
      options,
      rounds,
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (!stopping) await cluster.stop();
  }
}
