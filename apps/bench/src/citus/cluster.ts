/**
 * A throwaway 3-node Citus 13.2 cluster (a coordinator and two workers, PostgreSQL 15, loopback
 * only) for `pnpm bench --citus`, started from `CITUS_TARBALL` as the store's Citus suite does
 * (packages/postgres/test/citus/citus-setup.ts): `install-citus.sh` and `citus-cluster.sh` are read
 * from `CITUS_DIR` (default: the tarball's folder). Unlike the suite, every node also loads
 * `pg_stat_statements` (PostgreSQL 15 contrib, part of Debian's `postgresql-15`), so the bench can
 * count statements and server time per node; that needs one restart of each node after the start.
 */
import { execFile } from 'node:child_process';
import { appendFileSync, existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { citusBasePort } from '@postpone/testkit';

const run = promisify(execFile);

/** Why the cluster could not be started or stopped: the script, its exit and the end of its stderr. */
export class CitusClusterError extends Error {
  override readonly name = 'CitusClusterError';
}

/** One node of the cluster: its name (`coordinator`, `worker1`, `worker2`), port and data folder. */
export interface CitusNode {
  readonly name: string;
  readonly port: number;
  readonly dataDir: string;
}

export interface CitusCluster {
  /** Coordinator first, then the two workers. */
  readonly nodes: readonly CitusNode[];
  /** `postgres://postgres@127.0.0.1:<port>/<database>` (trust auth on loopback). */
  url(port: number, database?: string): string;
  /** Stops the three servers and deletes the cluster's folder. */
  stop(): Promise<void>;
}

const PGBIN = process.env.PGBIN || '/usr/lib/postgresql/15/bin';

async function command(file: string, args: readonly string[], timeoutMs: number): Promise<string> {
  try {
    const { stdout } = await run(file, [...args], { timeout: timeoutMs, env: process.env, maxBuffer: 4 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as { code?: unknown; stderr?: string };
    throw new CitusClusterError(`${file} ${args.join(' ')} failed (exit ${String(e.code)}): ${(e.stderr ?? '').trim().split('\n').slice(-5).join(' | ')}`, { cause: error });
  }
}

/** `pg_ctl` as the servers' OS user: `postgres` when this process is root (as `citus-cluster.sh` runs them), else this user. */
function pgCtl(args: readonly string[]): Promise<string> {
  const isRoot = process.getuid?.() === 0;
  return isRoot ? command('runuser', ['-u', 'postgres', '--', join(PGBIN, 'pg_ctl'), ...args], 120_000) : command(join(PGBIN, 'pg_ctl'), args, 120_000);
}

/**
 * Installs Citus from `CITUS_TARBALL` (idempotent; root) and starts the cluster in a fresh folder
 * under the OS temp dir, with `pg_stat_statements` loaded on every node.
 * @throws CitusClusterError when `CITUS_TARBALL` is unset, a script is missing, or a start fails
 */
export async function startCitusCluster(log: (line: string) => void): Promise<CitusCluster> {
  const tarball = process.env.CITUS_TARBALL;
  if (tarball === undefined || tarball === '') {
    throw new CitusClusterError('CITUS_TARBALL is not set: point it at a Citus 13.2 tarball for PostgreSQL 15 (with install-citus.sh and citus-cluster.sh beside it, or in CITUS_DIR)');
  }
  const scripts = process.env.CITUS_DIR || dirname(tarball);
  const clusterScript = join(scripts, 'citus-cluster.sh');
  for (const f of [tarball, join(scripts, 'install-citus.sh'), clusterScript]) if (!existsSync(f)) throw new CitusClusterError(`${f} not found`);
  log('citus: install-citus.sh (idempotent)');
  await command('bash', [join(scripts, 'install-citus.sh'), tarball], 300_000);
  const port = await citusBasePort();
  const parent = await mkdtemp(join(tmpdir(), 'postpone-bench-citus-'));
  await chmod(parent, 0o755); // the servers run as user postgres under root: the folder must be searchable by it
  const dir = join(parent, 'cluster');
  const nodes: CitusNode[] = ['coordinator', 'worker1', 'worker2'].map((name, i) => ({ name, port: port + i, dataDir: join(dir, name) }));
  let started = false;
  const stop = async () => {
    try {
      if (started) await command('bash', [clusterScript, 'stop', dir, String(port)], 60_000);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  };
  try {
    log(`citus: citus-cluster.sh start (ports ${port}..${port + 2})`);
    started = true;
    await command('bash', [clusterScript, 'start', dir, String(port)], 180_000);
    // A later line wins in postgresql.conf: Citus must stay first in the list.
    for (const n of nodes) {
      appendFileSync(join(n.dataDir, 'postgresql.conf'), "\n# pnpm bench --citus\nshared_preload_libraries = 'citus,pg_stat_statements'\npg_stat_statements.max = 5000\n");
      await pgCtl(['-D', n.dataDir, '-l', `${n.dataDir}.log`, '-m', 'fast', '-w', '-t', '60', '-s', 'restart']);
    }
    log('citus: pg_stat_statements loaded on the three nodes');
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return { nodes, url: (p, database = 'postgres') => `postgres://postgres@127.0.0.1:${p}/${database}`, stop };
}
