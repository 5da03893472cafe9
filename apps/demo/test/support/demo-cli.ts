/**
 * Runs the built demo (`dist/main.js`) as a child process against the test database, as a user
 * would run `pnpm demo`, and reads its JSON report. Every run is bounded in time.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import type { DemoReport } from '../../src/report.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const main = join(root, 'dist', 'main.js');

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Builds `dist` when missing (a test run without the turbo build). */
export function ensureBuilt(): void {
  if (!existsSync(main)) execFileSync(process.execPath, [join(root, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')]);
}

/** Runs the demo with `args`; kills it and rejects after `timeoutMs`. */
export function runCli(args: readonly string[], timeoutMs: number): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], { env: { ...process.env, DATABASE_URL: testDatabaseUrl() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`demo did not exit within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    // 'close', not 'exit': 'exit' may come before the last of stdout and stderr has been read.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Runs the demo with `args` and returns its exit and its JSON report. */
export async function runReport(args: readonly string[], timeoutMs: number): Promise<{ result: CliResult; report: DemoReport }> {
  const dir = mkdtempSync(join(tmpdir(), 'postpone-demo-'));
  try {
    const reportFile = join(dir, 'report.json');
    const result = await runCli([...args, '--no-progress', '--report-json', reportFile], timeoutMs);
    if (!existsSync(reportFile)) throw new Error(`the demo wrote no report (exit ${result.code})\n${result.stdout}\n${result.stderr}`);
    return { result, report: JSON.parse(readFileSync(reportFile, 'utf8')) as DemoReport };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
