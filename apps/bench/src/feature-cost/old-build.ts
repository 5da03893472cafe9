/**
 * The code of an older commit, exported with `git archive` into a cache folder of the OS temp dir,
 * installed from the pnpm store (`--offline`) and built (`@postpone/postgres` with its dependencies)
 * once; a later run reuses it (a `.built` marker). The same folder and steps as `pnpm
 * version-skew-git` of `@postpone/faultnet`, so the two share a build of the same commit.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface OldCode {
  readonly sha: string;
  /** `%h %ad %s` of the commit. */
  readonly subject: string;
  /** Folder of the exported commit. */
  readonly dir: string;
  /** Whether the build was found already made. */
  readonly cached: boolean;
}

/**
 * Exports, installs and builds `rev` of the repository holding `cwd`, unless already built.
 * @throws Error when git, pnpm or the build fail (the message of the failing command)
 */
export function buildOldCode(rev: string, cwd: string = process.cwd()): OldCode {
  const repo = execFileSync('git', ['-C', cwd, 'rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
  const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();
  const sha = git('rev-parse', rev);
  const subject = git('log', '-1', '--format=%h %ad %s', '--date=short', sha).slice(0, 160);
  const dir = join(tmpdir(), `postpone-old-${sha.slice(0, 12)}`);
  if (existsSync(join(dir, '.built'))) return { sha, subject, dir, cached: true };
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git -C "${repo}" archive ${sha} | tar -x -C "${dir}"`], { stdio: 'inherit', timeout: 120_000 });
  execFileSync('pnpm', ['install', '--frozen-lockfile', '--offline'], { cwd: dir, stdio: 'inherit', timeout: 300_000 });
  execFileSync('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@postpone/postgres...', '--output-logs=errors-only'], { cwd: dir, stdio: 'inherit', timeout: 600_000 });
  writeFileSync(join(dir, '.built'), `${sha}\n`);
  return { sha, subject, dir, cached: false };
}

/** Imports a module of the old commit's `@postpone/postgres` build (e.g. `dist/index.js`). */
export async function importOld<T>(old: OldCode, path: string): Promise<T> {
  return (await import(pathToFileURL(join(old.dir, 'packages', 'postgres', path)).href)) as T;
}
