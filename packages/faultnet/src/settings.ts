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
