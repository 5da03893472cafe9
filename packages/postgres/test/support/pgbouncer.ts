/**
 * A real PgBouncer in transaction pooling mode on 127.0.0.1, in front of the test database, for
 * the pooler tests. Installed by `install-pgbouncer.sh` when missing.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@postpone/embedded';

export interface PgBouncer {
  /** A URL through the pooler to the same database and user as the target. */
  readonly url: string;
  stop(): Promise<void>;
}

const INSTALL = join(dirname(fileURLToPath(import.meta.url)), 'install-pgbouncer.sh');
const PATH = `${process.env.PATH ?? ''}:/usr/sbin:/sbin`;

/**
 * Makes sure pgbouncer is installed.
 * @returns undefined when it is, else why it cannot be (the tests skip with that reason)
 */
export function ensurePgBouncer(): string | undefined {
  const result = spawnSync('sh', [INSTALL], { encoding: 'utf8', timeout: 300_000, env: { ...process.env, PATH } });
  if (result.status === 0) return undefined;
  if (result.status === 3) return `pgbouncer is not installed and cannot be installed here: ${result.stderr.trim()}`;
  throw new Error(`installing pgbouncer failed (exit ${result.status}): ${result.stderr}`);
}

async function accepts(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts `pgbouncer` (pool_mode transaction, `default_pool_size` server connections) in front of
 * the server of `targetUrl`. As root it runs as the `postgres` user (pgbouncer refuses root).
 * @throws Error when it does not accept connections within 10 s (with its log)
 */
export async function startPgBouncer(targetUrl: string, defaultPoolSize = 4): Promise<PgBouncer> {
  const target = new URL(targetUrl);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'postpone-pgbouncer-'));
  chmodSync(dir, 0o777);
  const database = decodeURIComponent(target.pathname.slice(1)) || 'postgres';
  const ini = join(dir, 'pgbouncer.ini');
  const log = join(dir, 'pgbouncer.log');
  writeFileSync(
    ini,
    [
      '[databases]',
      `${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database} user=${decodeURIComponent(target.username)} password=${decodeURIComponent(target.password)}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      'pool_mode = transaction',
      `default_pool_size = ${defaultPoolSize}`,
      'max_client_conn = 200',
      'ignore_startup_parameters = extra_float_digits,options',
      `logfile = ${log}`,
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const child: ChildProcess = spawn('pgbouncer', [...(isRoot ? ['-u', 'postgres'] : []), ini], {
    stdio: 'ignore',
    env: { ...process.env, PATH },
  });
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => {
    exited = true;
    resolve();
  }));
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (exited || Date.now() > deadline) {
      child.kill('SIGKILL');
      let text = '';
      try {
        text = readFileSync(log, 'utf8');
      } catch {
        // no log yet
      }
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer did not start on port ${port}: ${text}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    async stop() {
      if (!exited) {
        child.kill('SIGTERM');
        await Promise.race([exit, new Promise((resolve) => setTimeout(resolve, 3_000))]);
        if (!exited) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
