/**
 * The SQL-only ceiling on a real PostgreSQL, at a tiny size: every task is claimed and completed
 * through the store's own statements (the loop throws on a completion that missed a claimed task),
 * at each batch size. No timing assertion: only counts.
 */
import { openStatementCounter } from '../../dist/peers/db/statements.js';
import { RunDatabases } from '../../dist/peers/run-databases.js';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { afterAll, describe, expect, it } from 'vitest';
// The built package: the ceiling forks dist/ceiling/child.js.
import { ceilingModes, runSqlCeiling } from '../../dist/ceiling/index.js';

// The ceiling's processes need no Node.js 24: run them on this Node.js (no download in tests).
process.env.POSTPONE_BENCH_NODE = process.execPath;

describe('runSqlCeiling', () => {
  const databases = new RunDatabases(testDatabaseUrl());
  afterAll(async () => await databases.dropTemplates());

  it('claims and completes every task at each batch size, in at least tasks / batch claims', async () => {
    const counter = await openStatementCounter(testDatabaseUrl());
    const tasks = 300;
    const processes = 2;
    const { points } = await runSqlCeiling({ adminUrl: testDatabaseUrl(), databases, counter }, { tasks, processes, batches: [10, 50] }, true);
    expect(points.map((p) => p.batch)).toEqual([10, 50]);
    for (const p of points) {
      expect(p.completed).toBe(tasks);
      expect(p.processes).toBe(processes);
      // Each non-empty claim is followed by one completeMany; each process ends on one empty claim.
      const statements = Math.round(p.statementsPerTask * tasks);
      expect(statements % 2).toBe(0);
      expect(statements).toBeGreaterThanOrEqual(2 * Math.ceil(tasks / p.batch) + processes);
      expect(p.tasksPerSecond).toBeGreaterThan(0);
      expect(p.walBytesPerTask).toBeGreaterThan(0);
      // The embedded test server runs on this host, so /proc gives its processes' CPU (a server behind
      // DATABASE_URL may be elsewhere: NaN there, not checked). Only that it was read: /proc counts in
      // 10 ms ticks, and the dozen statements of batch 50 may all fall inside one (0 in a .ci/run
      // preview's Node.js 24 pass). That the reading grows with work: test/peers/server-cpu.test.ts.
      if (process.env.DATABASE_URL === undefined) expect(p.serverCpuMsPerTask).toBeGreaterThanOrEqual(0);
    }
  });

  it('with DONE not kept completes every task through the drop statement, and writes less WAL per task', async () => {
    const counter = await openStatementCounter(testDatabaseUrl());
    const params = { tasks: 200, processes: 2, batches: [50] };
    const ctx = { adminUrl: testDatabaseUrl(), databases, counter };
    const kept = await runSqlCeiling(ctx, params, true);
    const dropped = await runSqlCeiling(ctx, params, false);
    // The loop throws when the drop statement finishes fewer tasks than were claimed.
    expect(dropped.keepDone).toBe(false);
    expect(dropped.points.map((p) => [p.batch, p.completed])).toEqual([[50, 200]]);
    // No history row: the WAL of a whole run (claims included) is smaller by at least the history insert.
    expect(dropped.points[0]?.walBytesPerTask).toBeLessThan(kept.points[0]?.walBytesPerTask ?? 0);
  });

  it('measures both records of DONE each round, only the drop under --done-not-kept', () => {
    expect(ceilingModes()).toEqual([true, false]);
    process.env.POSTPONE_BENCH_DONE = 'not-kept';
    try {
      expect(ceilingModes()).toEqual([false]);
    } finally {
      delete process.env.POSTPONE_BENCH_DONE;
    }
  });
});
