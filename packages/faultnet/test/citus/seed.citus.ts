/**
 * The seed's four main evidence cases on the coordinator of a 3-node Citus cluster (issue 25), as
 * `citus_*` CASE lines: the same bodies as the plain suite (`../cases/seed.ts`), on a schema that is
 * one shard group of schema-based sharding (the store detects the Citus dialect at `migrate()`),
 * with the worker processes connected to the coordinator. Run by `vitest.citus.config.ts`.
 */
import { describe, it } from 'vitest';
import { runCase } from '../../src/index.js';
import { crashKill9LeaseRetry, normalThreeWorkers, raceDueVsCancel, sigstopLateCommitRejected } from '../cases/seed.js';

describe('evidence on Citus: the seed cases', () => {
  it('citus_normal_three_workers: 3 worker processes, 300 tasks, each claimed and done once', async () => {
    await runCase('citus_normal_three_workers', normalThreeWorkers);
  });

  it('citus_crash_kill9_lease_retry: kill -9 mid-task, reclaimed after the lease, done at attempt 2', async () => {
    await runCase('citus_crash_kill9_lease_retry', crashKill9LeaseRetry);
  });

  it('citus_sigstop_late_commit_rejected: a worker stopped past its lease commits late and is rejected', async () => {
    await runCase('citus_sigstop_late_commit_rejected', sigstopLateCommitRejected);
  });

  it('citus_race_due_vs_cancel: 200 rounds of cancel near the due time end only in allowed combinations', async () => {
    await runCase('citus_race_due_vs_cancel', raceDueVsCancel);
  });
});
