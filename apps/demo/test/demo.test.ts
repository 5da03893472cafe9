/**
 * Runs the real demo end to end (worker processes, a SIGKILL, reclaim) against the test database,
 * smaller than `pnpm demo`, and checks its report.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DemoReport } from '../src/report.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const main = join(root, 'dist', 'main.js');

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
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
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe('pnpm demo', () => {
  beforeAll(() => {
    if (!existsSync(main)) execFileSync(process.execPath, [join(root, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')]);
  });

  it('runs 3 worker processes through a SIGKILL with nothing lost and nothing done twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postpone-demo-'));
    try {
      const reportFile = join(dir, 'report.json');
      const tasks = 60;
      const result = await run(['--tasks', String(tasks), '--spread-ms', '1500', '--kill-after-ms', '400', '--no-progress', '--report-json', reportFile], 90_000);
      expect(result.stdout).toContain('RESULT PASS');
      expect({ code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({ code: 0, stderr: '' });
      const report = JSON.parse(readFileSync(reportFile, 'utf8')) as DemoReport;
      expect(report.pass).toBe(true);
      expect(report.scheduled).toBe(tasks);
      expect(report.db.states).toEqual({ SCHEDULED: 0, CLAIMED: 0, DONE: tasks, CANCELLED: 0, DEAD: 0 });
      expect(report.db.effects).toBe(tasks);
      expect(report.db.reservationsExpired).toBe(tasks);
      expect(report.db.reservationsExpiredTwice).toBe(0);
      expect(report.db.earlyAttempts).toBe(0);
      expect(report.earlyClaimEvents).toBe(0);
      expect(report.killed?.exitSignal).toBe('SIGKILL');
      expect(report.killed?.holding).toBeGreaterThan(0);
      expect(report.reclaimed).toBeGreaterThanOrEqual(1);
      expect(report.db.tasksClaimedMoreThanOnce).toBeGreaterThanOrEqual(1);
      expect(report.db.claims).toBeGreaterThanOrEqual(tasks + report.db.tasksClaimedMoreThanOnce);
      expect(report.lateness.count).toBe(tasks);
      expect(report.lateness.min).toBeGreaterThanOrEqual(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad flags with exit code 2', async () => {
    const result = await run(['--tasks', '-5'], 30_000);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--tasks/);
    const renew = await run(['--lease-ms', '500', '--renew-ms', '500'], 30_000);
    expect(renew.code).toBe(2);
    expect(renew.stderr).toMatch(/--renew-ms \(500\) must be below --lease-ms \(500\)/);
  });
});
