/**
 * A vitest `globalSetup` for `vitest.citus.config.ts`: a throwaway 3-node Citus cluster (a
 * coordinator and two workers, PostgreSQL 15, loopback only) for the selection of store tests run
 * against its coordinator.
 *
 * Settings (environment):
 * - `CITUS_TARBALL`: the Citus build tarball (required; the config skips the suite without it).
 * - `CITUS_DIR`: the folder holding `install-citus.sh` and `citus-cluster.sh` (default: the
 *   tarball's folder).
 * - `CITUS_BASEPORT`: the coordinator's port, workers on the next two (default: a free port
 *   between 20000 and 29997 whose two successors are free too, 5 tries).
 *
 * `install-citus.sh` needs root (it is idempotent, about 1 s when PostgreSQL 15 is installed); the
 * cluster lives in a fresh folder under the OS temp dir and is stopped and deleted at teardown.
 * Test files read the coordinator URL with `testDatabaseUrl()` as in the plain suite; fault cases
 * that stop a node (packages/faultnet's Citus suite) read the cluster's folder and base port from
 * `POSTPONE_CITUS_DATA` and `POSTPONE_CITUS_BASEPORT` (nodes `coordinator`, `worker1`, `worker2`
 * under it, on the base port and the next two).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { citusBasePort } from '@postpone/testkit';

const run = promisify(execFile);

interface SetupProject {
  provide(key: 'databaseUrl', value: string): void;
}

/** Why the cluster could not be started: the script, its exit and its stderr. */
export class CitusSetupError extends Error {
  override readonly name = 'CitusSetupError';
}

let cluster: { dir: string; script: string; port: number; parent: string } | undefined;

async function script(file: string, args: readonly string[], timeoutMs: number): Promise<string> {
  try {
    const { stdout } = await run('bash', [file, ...args], { timeout: timeoutMs, env: process.env, maxBuffer: 4 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as { code?: unknown; stderr?: string };
    throw new CitusSetupError(`${file} ${args.join(' ')} failed (exit ${String(e.code)}): ${(e.stderr ?? '').trim().split('\n').slice(-5).join(' | ')}`, { cause: error });
  }
}

/** @throws CitusSetupError when CITUS_TARBALL is unset, or installing or starting the cluster fails */
export async function setup(project: SetupProject): Promise<void> {
  const tarball = process.env.CITUS_TARBALL;
  if (tarball === undefined || tarball === '') throw new CitusSetupError('CITUS_TARBALL is not set');
  const dir = process.env.CITUS_DIR || dirname(tarball);
  await script(join(dir, 'install-citus.sh'), [tarball], 300_000);
  const port = await citusBasePort();
  const parent = await mkdtemp(join(tmpdir(), 'postpone-citus-'));
  // citus-cluster.sh, as root, runs the servers as user postgres: the folder must be searchable by it.
  await run('chmod', ['0755', parent]);
  const data = join(parent, 'cluster');
  const clusterScript = join(dir, 'citus-cluster.sh');
  cluster = { dir: data, script: clusterScript, port, parent };
  const out = await script(clusterScript, ['start', data, String(port)], 180_000);
  const url = out.trim().split('\n').at(-1) ?? '';
  if (!url.startsWith('postgres://')) throw new CitusSetupError(`citus-cluster.sh printed no coordinator URL (last line: ${url})`);
  process.env.POSTPONE_TEST_DATABASE_URL = url;
  process.env.POSTPONE_CITUS_DATA = data;
  process.env.POSTPONE_CITUS_BASEPORT = String(port);
  project.provide('databaseUrl', url);
}

export async function teardown(): Promise<void> {
  const c = cluster;
  cluster = undefined;
  if (c === undefined) return;
  try {
    await script(c.script, ['stop', c.dir, String(c.port)], 60_000);
  } finally {
    await rm(c.parent, { recursive: true, force: true });
  }
}
