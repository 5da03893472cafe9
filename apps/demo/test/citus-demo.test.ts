/**
 * `pnpm demo:citus` (scripts/citus-demo.sh) end to end: a 3-node Citus cluster started from
 * `CITUS_TARBALL`, the demo over 2 shard groups through a SIGKILL, the cluster stopped and deleted.
 * Runs only where `CITUS_TARBALL` is set (install-citus.sh needs root the first time); otherwise it
 * is skipped with one line. 11–33 s on this 2-core machine, depending on its load.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DemoReport } from '../src/report.js';
import { ensureBuilt } from './support/demo-cli.js';

const enabled = (process.env.CITUS_TARBALL ?? '') !== '';
if (!enabled) console.log('Citus demo skipped: set CITUS_TARBALL to a Citus 13.2 tarball for PostgreSQL 15 (with install-citus.sh and citus-cluster.sh beside it, or in CITUS_DIR) to run it');

const script = fileURLToPath(new URL('../../../scripts/citus-demo.sh', import.meta.url));

function run(args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new Error(`citus-demo.sh did not exit within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe.skipIf(!enabled)('pnpm demo:citus', () => {
  beforeAll(ensureBuilt);

  it('runs the demo over 2 shard groups on a 3-node Citus cluster and removes the cluster', async () => {
    const tasks = 60;
    const tmp = mkdtempSync(join(tmpdir(), 'postpone-citus-demo-test-'));
    chmodSync(tmp, 0o755); // as root the servers run as user postgres, who must reach the cluster's folder in it
    try {
      const reportFile = join(tmp, 'report.json');
      const env = { ...process.env, TMPDIR: tmp, DATABASE_URL: '' };
      const result = await run(['--tasks', String(tasks), '--spread-ms', '1500', '--kill-after-ms', '400', '--no-progress', '--report-json', reportFile], env, 170_000);
      expect({ code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({ code: 0, stderr: '' });
      expect(result.stdout).toContain('RESULT PASS');
      // Each group's task table is a Citus shard on a node (`citus_shards`): the log names its port.
      expect(result.stderr).toMatch(/2 shard groups behind the sharded front: \S+_g0 on node :\d+, \S+_g1 on node :\d+/);
      expect(existsSync(reportFile)).toBe(true);
      const report = JSON.parse(readFileSync(reportFile, 'utf8')) as DemoReport;
      expect(report.invariants.filter((i) => !i.pass)).toEqual([]);
      expect(report.db.states).toEqual({ SCHEDULED: 0, CLAIMED: 0, DONE: tasks, CANCELLED: 0, DEAD: 0 });
      expect(report.db.effects).toBe(tasks);
      expect(report.db.reservationsExpiredTwice).toBe(0);
      expect(report.killed?.exitSignal).toBe('SIGKILL');
      // The cluster's folder (made under TMPDIR) is gone: only the report is left.
      expect(readdirSync(tmp)).toEqual(['report.json']);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 180_000);
});
