/**
 * The demo through the sharded front (`--groups 2`, docs/sharding.md) on the test database (plain
 * PostgreSQL: two schemas of one server), the same run `scripts/citus-demo.sh` makes on Citus.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, runReport } from './support/demo-cli.js';

describe('pnpm demo --groups 2', () => {
  beforeAll(ensureBuilt);

  it('runs 3 worker processes over 2 shard groups through a SIGKILL with nothing lost and nothing done twice', async () => {
    const tasks = 60;
    const { result, report } = await runReport(['--groups', '2', '--tasks', String(tasks), '--spread-ms', '1500', '--kill-after-ms', '400'], 90_000);
    expect(report.invariants.filter((i) => !i.pass)).toEqual([]);
    expect({ code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(result.stdout).toContain('2 shard groups (sharded front)');
    // The parent's log names both group schemas.
    expect(result.stderr).toMatch(/2 shard groups behind the sharded front: demo_\S+_g0, demo_\S+_g1/);
    expect(report.options.groups).toBe(2);
    expect(report.db.states).toEqual({ SCHEDULED: 0, CLAIMED: 0, DONE: tasks, CANCELLED: 0, DEAD: 0 });
    expect(report.db.reservations).toBe(tasks);
    expect(report.db.effects).toBe(tasks);
    expect(report.db.reservationsExpired).toBe(tasks);
    expect(report.db.reservationsExpiredTwice).toBe(0);
    expect(report.killed?.exitSignal).toBe('SIGKILL');
  });
});
