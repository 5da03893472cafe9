/**
 * Runs the real demo end to end (worker processes, a SIGKILL, reclaim) against the test database,
 * smaller than `pnpm demo`, in both discovery modes, and checks its report.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, runCli, runReport } from './support/demo-cli.js';

describe('pnpm demo', () => {
  beforeAll(ensureBuilt);

  it.each(['poll', 'hybrid'] as const)('runs 3 worker processes (%s discovery) through a SIGKILL with nothing lost and nothing done twice', async (discovery) => {
    const tasks = 60;
    const { result, report } = await runReport(['--discovery', discovery, '--tasks', String(tasks), '--spread-ms', '1500', '--kill-after-ms', '400'], 90_000);
    expect(report.invariants.filter((i) => !i.pass)).toEqual([]);
    expect(result.stdout).toContain('RESULT PASS');
    expect(result.stdout).toContain(discovery === 'hybrid' ? 'hybrid discovery' : 'poll 50 ms');
    expect({ code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(report.pass).toBe(true);
    expect(report.options.discovery).toBe(discovery);
    expect(report.scheduled).toBe(tasks);
    expect(report.db.states).toEqual({ SCHEDULED: 0, CLAIMED: 0, DONE: tasks, CANCELLED: 0, DEAD: 0 });
    expect(report.db.effects).toBe(tasks);
    expect(report.db.reservationsExpired).toBe(tasks);
    expect(report.db.reservationsExpiredTwice).toBe(0);
    expect(report.db.earlyAttempts).toBe(0);
    expect(report.earlyClaimEvents).toBe(0);
    expect(report.killed?.exitSignal).toBe('SIGKILL');
    expect(report.killed?.holding).toBeGreaterThan(0);
    // What it left unfinished (nearly always all it held) was reclaimed and claimed again.
    const unfinished = report.killed?.unfinished ?? 0;
    expect(report.reclaimed).toBeGreaterThanOrEqual(unfinished);
    expect(report.db.tasksClaimedMoreThanOnce).toBeGreaterThanOrEqual(unfinished);
    expect(report.db.claims).toBeGreaterThanOrEqual(tasks + report.db.tasksClaimedMoreThanOnce);
    expect(report.lateness.count).toBe(tasks);
    expect(report.lateness.min).toBeGreaterThanOrEqual(0);
    // Hybrid workers read near tasks (at least once each, at start); polling workers never do.
    expect(report.queries.claims).toBeGreaterThan(0);
    if (discovery === 'hybrid') expect(report.queries.peeks).toBeGreaterThanOrEqual(report.options.workers);
    else expect(report.queries.peeks).toBe(0);
  });

  it('refuses bad flags with exit code 2', async () => {
    const result = await runCli(['--tasks', '-5'], 30_000);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--tasks/);
    const renew = await runCli(['--lease-ms', '500', '--renew-ms', '500'], 30_000);
    expect(renew.code).toBe(2);
    expect(renew.stderr).toMatch(/--renew-ms \(500\) must be below --lease-ms \(500\)/);
    const mode = await runCli(['--discovery', 'wheel'], 30_000);
    expect(mode.code).toBe(2);
    expect(mode.stderr).toMatch(/--discovery/);
    const restart = await runCli(['--no-kill', '--restart'], 30_000);
    expect(restart.code).toBe(2);
    expect(restart.stderr).toMatch(/--restart needs a kill/);
  });
});
