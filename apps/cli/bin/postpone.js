#!/usr/bin/env node
// The `postpone` command. Runs the compiled CLI (dist/main.js). Inside a checkout where it was not
// built yet (a clean clone), it first builds it and its workspace dependencies with turbo, once.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const main = join(root, 'dist', 'main.js');
if (!existsSync(main)) {
  const workspace = join(root, '..', '..');
  if (!existsSync(join(workspace, 'pnpm-workspace.yaml'))) {
    process.stderr.write(`postpone: ${main} is missing; reinstall @postpone/cli\n`);
    process.exit(1);
  }
  process.stderr.write('postpone: building @postpone/cli and its dependencies (first run in this checkout)…\n');
  const built = spawnSync('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@postpone/cli...', '--output-logs=errors-only'], {
    cwd: workspace,
    stdio: ['ignore', 2, 2], // build output on stderr: stdout stays the command's own
  });
  if (built.status !== 0 || !existsSync(main)) {
    process.stderr.write('postpone: the build failed; run `pnpm turbo run build --filter=@postpone/cli...` to see why\n');
    process.exit(1);
  }
}
await import(main);
