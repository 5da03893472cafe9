/**
 * The worker settings the evidence cases use: leases of about a second (faults show within
 * seconds), renewal at under a third of the lease, fast polling. Teaching values, not advice.
 */
import type { WorkerSettings } from './child/protocol.js';

/** Most cases. */
export const CASE_WORKER: WorkerSettings = Object.freeze({
  concurrency: 10,
  leaseMs: 1_000,
  renewEveryMs: 300,
  pollIntervalMs: 50,
  reclaimEveryMs: 100,
  backoffBaseMs: 200,
});

/**
 * Cases that fault no worker and assert every task claimed once at attempt 1 (bulk cancel, kind caps,
 * key limits, pause and resume, queues): CASE_WORKER with a 5 s lease renewed every second. On a loaded
 * 2-core CI machine a worker's renewal could land more than 700 ms late and a 1 s lease expire, so a
 * correct reclaim (attempt 2) failed a case about something else. Expiry here needs a 4 s stall.
 */
export const STEADY_WORKER: WorkerSettings = Object.freeze({ ...CASE_WORKER, leaseMs: 5_000, renewEveryMs: 1_000 });

/** `stall_event_loop_fenced`: lease 500 ms, renewal every 150 ms (the numbers). */
export const STALL_WORKER: WorkerSettings = Object.freeze({
  concurrency: 1,
  leaseMs: 500,
  renewEveryMs: 150,
  pollIntervalMs: 50,
  reclaimEveryMs: 50,
  backoffBaseMs: 200,
});

/** The naive-claim control and its twin: claim batch, the race window, lease, idle poll. */
export const CLAIM_LOAD = Object.freeze({ tasks: 300, workers: 3, limit: 10, pauseMs: 30, leaseMs: 1_000, idleMs: 20 });

/** A one-line description of worker settings for `evidence/env.txt`. */
export function describeSettings(s: WorkerSettings): string {
  return Object.entries(s)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(' ');
}
