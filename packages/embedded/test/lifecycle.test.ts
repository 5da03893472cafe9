/**
 * The embedded server starts for any user in any folder, and leaves nothing behind: each test here
 * is one way a first run on a new machine failed (issue: "The embedded PostgreSQL starts for any
 * user, in any folder"). Children are real processes; the server is a real PostgreSQL.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shippedBinDir } from '../src/binaries.js';
import { alive } from '../src/server.js';
import { EmbeddedPostgresError, freePort, removeStaleFolders, startEmbeddedPostgres } from '../src/index.js';

const isRoot = process.getuid?.() === 0;
const dist = resolve(import.meta.dirname, '..', 'dist');
const fixture = resolve(import.meta.dirname, 'fixtures', 'embedded-child.mjs');
const TEST_USER = 'postpone-test';

/** Every folder of this file lives under one scratch TMPDIR, removed at the end (mirrors included). */
let scratch = '';
let savedTmp: string | undefined;
beforeAll(() => {
  scratch = mkdtempSync('/tmp/postpone-embedded-test-');
  chmodSync(scratch, 0o755);
  savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = scratch;
});
afterAll(() => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
  rmSync(scratch, { recursive: true, force: true });
});

/** A copy of the shipped native tree (bin, lib, share) inside `parent`. */
function copyNative(parent: string): string {
  const native = join(parent, 'native');
  cpSync(resolve(shippedBinDir(), '..'), native, { recursive: true, verbatimSymlinks: true });
  return join(native, 'bin');
}

/** A folder only its owner may enter, like `mktemp -d` or `/root`, with a space and non-ASCII in its name. */
function privateFolder(): string {
  const dir = mkdtempSync(join(scratch, 'private ü '));
  chmodSync(dir, 0o700);
  return dir;
}


async function waitUntil(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function selectOne(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ one: number }>('select 1 as one');
    return rows[0]?.one ?? 0;
  } finally {
    await client.end();
  }
}

interface ChildInfo {
  url: string;
  dataDir: string;
  root: string;
  binDir: string;
  postmasterPid: number;
}

interface RunningChild {
  child: ChildProcess;
  info: Promise<ChildInfo>;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function runChild(mode: string, options: { binDir?: string; serverModule?: string; node?: string; user?: string; cwd?: string; tmp?: string; fixture?: string } = {}): RunningChild {
  const node = options.node ?? process.execPath;
  const args = [options.fixture ?? fixture, options.serverModule ?? join(dist, 'server.js'), mode, ...(options.binDir ? [options.binDir] : [])];
  const [file, argv] = options.user ? ['runuser', ['-u', options.user, '--', node, ...args]] : [node, args];
  const child = spawn(file, argv as string[], { env: { ...process.env, TMPDIR: options.tmp ?? scratch }, cwd: options.cwd ?? scratch, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const info = new Promise<ChildInfo>((resolveInfo, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      stdout += c.toString();
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (line) resolveInfo(JSON.parse(line) as ChildInfo);
    });
    child.once('close', () => reject(new Error(`child ended before it was ready:\n${stdout}\n${stderr}`)));
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((done) =>
    child.once('close', (code, signal) => done({ code, signal, stdout, stderr })),
  );
  info.catch(() => {});
  return { child, info, exit };
}

describe('runs for any user in any folder', () => {
  it('as root, binaries in a folder the postgres user cannot enter (0700, space, non-ASCII) are mirrored and run', async (ctx) => {
    if (!isRoot) return ctx.skip('needs root: as root the server runs as the OS user postgres');
    const binDir = copyNative(privateFolder());
    const db = await startEmbeddedPostgres({ binDir });
    try {
      expect(db.binDir).not.toBe(binDir);
      expect(db.binDir.startsWith(scratch)).toBe(true);
      expect(await selectOne(db.url)).toBe(1);
    } finally {
      await db.stop();
    }
    // The mirror is kept and reused by the next start: one mirror folder, no staging left.
    const again = await startEmbeddedPostgres({ binDir });
    await again.stop();
    expect(again.binDir).toBe(db.binDir);
    expect(readdirSync(scratch).filter((n) => n.startsWith('postpone-pgbin-staging-'))).toEqual([]);
    // Once the checkout is gone, the next start's cleanup removes its mirror too.
    rmSync(resolve(binDir, '..'), { recursive: true, force: true });
    expect(removeStaleFolders(scratch)).toBeGreaterThanOrEqual(1);
    expect(existsSync(resolve(db.binDir, '..'))).toBe(false);
  });

  it('as root, binaries in a world-traversable folder run where they are', async (ctx) => {
    if (!isRoot) return ctx.skip('needs root');
    const parent = mkdtempSync(join(scratch, 'open '));
    chmodSync(parent, 0o755);
    const binDir = copyNative(parent);
    const db = await startEmbeddedPostgres({ binDir });
    try {
      expect(db.binDir).toBe(binDir);
      expect(await selectOne(db.url)).toBe(1);
    } finally {
      await db.stop();
    }
  });

  it('as root, read-only binaries (a read-only bind mount in a 0700 folder) are never written', async (ctx) => {
    if (!isRoot) return ctx.skip('needs root to bind-mount');
    const source = copyNative(privateFolder());
    const mountPoint = join(privateFolder(), 'ro');
    mkdirSync(mountPoint);
    try {
      execFileSync('mount', ['--bind', resolve(source, '..'), mountPoint], { stdio: 'ignore' });
      execFileSync('mount', ['-o', 'remount,ro,bind', mountPoint], { stdio: 'ignore' });
    } catch {
      return ctx.skip('this machine does not allow bind mounts');
    }
    try {
      const db = await startEmbeddedPostgres({ binDir: join(mountPoint, 'bin') });
      try {
        expect(await selectOne(db.url)).toBe(1);
      } finally {
        await db.stop();
      }
    } finally {
      execFileSync('umount', [mountPoint]);
    }
  });

  it('as a non-root user, from read-only binaries, and a SIGTERM stops the server and removes its folder', async (ctx) => {
    if (!isRoot) return ctx.skip('needs root to create and switch to a second OS user');
    try {
      execFileSync('id', ['-u', TEST_USER], { stdio: 'ignore' });
    } catch {
      execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', TEST_USER], { stdio: 'ignore' });
    }
    // Everything the other user runs must be reachable by it: copy the code, node and the binaries
    // into a world-readable folder (the checkout itself may sit in a 0700 folder).
    const open = mkdtempSync(join(scratch, 'user '));
    chmodSync(open, 0o755);
    for (const file of ['server.js', 'binaries.js', 'errors.js']) copyFileSync(join(dist, file), join(open, file));
    copyFileSync(fixture, join(open, 'embedded-child.mjs'));
    const node = join(open, 'node');
    try {
      linkSync(process.execPath, node);
    } catch {
      copyFileSync(process.execPath, node);
    }
    chmodSync(node, 0o755);
    const binDir = copyNative(open);
    execFileSync('chmod', ['-R', 'a-w', resolve(binDir, '..')]);
    const tmp = join(open, 'tmp');
    mkdirSync(tmp);
    chmodSync(tmp, 0o1777);
    const run = runChild('hold', { binDir, serverModule: join(open, 'server.js'), fixture: join(open, 'embedded-child.mjs'), node, user: TEST_USER, cwd: open, tmp });
    const info = await run.info;
    expect(info.binDir).toBe(binDir); // its own user: no mirror needed
    expect(await selectOne(info.url)).toBe(1);
    run.child.kill('SIGTERM');
    const { signal } = await run.exit;
    expect(signal).toBe('SIGTERM'); // the process still ends the way a SIGTERM ends it
    await waitUntil('server gone', () => !alive(info.postmasterPid));
    expect(existsSync(info.root)).toBe(false);
    execFileSync('chmod', ['-R', 'u+w', resolve(binDir, '..')]);
  });

  it('four processes starting at the same moment all start (and share one mirror)', async (ctx) => {
    const binDir = isRoot ? copyNative(privateFolder()) : undefined;
    const runs = Array.from({ length: 4 }, () => runChild('startstop', binDir ? { binDir } : {}));
    const results = await Promise.all(runs.map((r) => r.exit));
    for (const r of results) {
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('stopped');
    }
    const ports = new Set((await Promise.all(runs.map((r) => r.info))).map((i) => new URL(i.url).port));
    expect(ports.size).toBe(4);
    if (!isRoot) return ctx.skip('the shared mirror is a root-only path');
    const mirrors = new Set((await Promise.all(runs.map((r) => r.info))).map((i) => i.binDir));
    expect(mirrors.size).toBe(1);
  });
});

describe('ports', () => {
  let holder: Server;
  let taken = 0;
  beforeAll(async () => {
    taken = await freePort();
    holder = createServer();
    await new Promise<void>((r) => holder.listen(taken, '127.0.0.1', () => r()));
  });
  afterAll(() => new Promise<void>((r) => holder.close(() => r())));

  it('a port taken between choosing and starting is replaced by another', async () => {
    const chosen: number[] = [];
    const db = await startEmbeddedPostgres({
      choosePort: async () => {
        const port = chosen.length === 0 ? taken : await freePort();
        chosen.push(port);
        return port;
      },
    });
    try {
      expect(chosen[0]).toBe(taken);
      expect(chosen).toHaveLength(2);
      expect(db.port).toBe(chosen[1]);
      expect(await selectOne(db.url)).toBe(1);
    } finally {
      await db.stop();
    }
  });

  it('an explicit port that is taken is a typed PORT_IN_USE error, and nothing is left behind', async () => {
    const before = readdirSync(scratch).filter((n) => n.startsWith('postpone-pg-')).length;
    const error = await startEmbeddedPostgres({ port: taken }).catch((e: unknown) => e);
    expect(EmbeddedPostgresError.isInstance(error)).toBe(true);
    expect((error as EmbeddedPostgresError).code).toBe('PORT_IN_USE');
    expect((error as Error).message).toContain(String(taken));
    expect((error as Error).message).toContain('DATABASE_URL');
    expect(readdirSync(scratch).filter((n) => n.startsWith('postpone-pg-')).length).toBe(before);
  });
});

describe('typed errors instead of stack traces from a child process', () => {
  it('no binaries in binDir: BINARIES_MISSING naming the folder', async () => {
    const empty = mkdtempSync(join(scratch, 'empty-'));
    const error = await startEmbeddedPostgres({ binDir: empty }).catch((e: unknown) => e);
    expect((error as EmbeddedPostgresError).code).toBe('BINARIES_MISSING');
    expect((error as Error).message).toContain(empty);
  });

  it('as root, a TMPDIR the postgres user cannot enter: a typed error naming TMPDIR, nothing left behind', async (ctx) => {
    if (!isRoot) return ctx.skip('needs root');
    const closed = privateFolder();
    process.env.TMPDIR = closed;
    try {
      const error = await startEmbeddedPostgres().catch((e: unknown) => e);
      expect(EmbeddedPostgresError.isInstance(error)).toBe(true);
      expect(['DATA_DIR_UNUSABLE', 'BINARIES_UNREACHABLE']).toContain((error as EmbeddedPostgresError).code);
      expect((error as Error).message).toContain('TMPDIR');
      expect(readdirSync(closed).filter((n) => n.startsWith('postpone-pg-'))).toEqual([]);
    } finally {
      process.env.TMPDIR = scratch;
    }
  });
});

describe('leaves nothing behind', () => {
  for (const mode of ['natural', 'exit', 'throw'] as const) {
    it(`a process that ends by ${mode === 'natural' ? 'draining' : mode === 'exit' ? 'process.exit()' : 'an uncaught exception'} stops its server and removes its folder`, async () => {
      const run = runChild(mode);
      const info = await run.info;
      const { code } = await run.exit;
      expect(code).toBe(mode === 'throw' ? 1 : 0);
      await waitUntil('server gone', () => !alive(info.postmasterPid));
      expect(existsSync(info.root)).toBe(false);
    });
  }

  it('a process killed with SIGKILL leaves its folder and server; the next start removes both', async () => {
    const run = runChild('hold');
    const info = await run.info;
    run.child.kill('SIGKILL');
    await run.exit;
    expect(existsSync(info.root)).toBe(true);
    expect(alive(info.postmasterPid)).toBe(true); // orphaned, still running
    expect(removeStaleFolders(scratch)).toBeGreaterThanOrEqual(1);
    expect(existsSync(info.root)).toBe(false);
    await waitUntil('orphaned server stopped', () => !alive(info.postmasterPid));
  });
});
