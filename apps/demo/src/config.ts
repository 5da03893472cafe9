/**
 * The demo's settings: CLI flags in the parent, passed to each worker process as JSON in
 * `POSTPONE_DEMO_WORKER` (its environment).
 */

/** The task kind the demo schedules and its workers handle. */
export const EXPIRE_KIND = 'expire-reservation';

/** How the workers find due tasks (see `@postpone/worker` `discovery`). */
export type DiscoveryMode = 'poll' | 'hybrid';

/** Payload of an expire-reservation task. */
export type ExpirePayload = { readonly reservationId: number };

export interface DemoOptions {
  /** Tasks (and reservations) to create. */
  readonly tasks: number;
  /** Worker processes to fork. */
  readonly workers: number;
  /** Handler slots per worker. */
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly renewMs: number;
  /** `poll`: claim every `pollMs`; `hybrid`: timing wheel + LISTEN/NOTIFY, re-read every `fallbackMs`. */
  readonly discovery: DiscoveryMode;
  readonly pollMs: number;
  readonly fallbackMs: number;
  readonly reclaimMs: number;
  /** Due times are spread uniformly over [firstDueMs, firstDueMs + spreadMs) after scheduling. */
  readonly spreadMs: number;
  readonly firstDueMs: number;
  /** Simulated work per task, uniform in [workMinMs, workMaxMs]. */
  readonly workMinMs: number;
  readonly workMaxMs: number;
  /** SIGKILL one worker while it holds tasks. */
  readonly kill: boolean;
  /** Kill no earlier than this many ms after scheduling. */
  readonly killAfterMs: number;
  /** Start a new worker process in place of the killed one. */
  readonly restart: boolean;
  /** Give up (FAIL, exit 1) after this many ms in all. */
  readonly deadlineMs: number;
  /** pino level of the workers' logs (written to stderr). */
  readonly logLevel: string;
  readonly progress: boolean;
  /** Write the report as JSON to this file too. */
  readonly reportJson: string | undefined;
  /** With DATABASE_URL: keep the demo schema instead of dropping it. */
  readonly keepSchema: boolean;
  /**
   * Shard groups (default 1: one store on one schema). Above 1, the demo runs through the sharded
   * front (`createShardedStore`, docs/sharding.md) over that many schemas, each with its own demo
   * tables: on a Citus coordinator each schema is one shard group (`scripts/citus-demo.sh`).
   */
  readonly groups?: number;
}

/** What a worker process needs to know: its identity and database, plus the worker knobs of the demo. */
export interface WorkerProcessConfig
  extends Pick<
    DemoOptions,
    'concurrency' | 'leaseMs' | 'renewMs' | 'discovery' | 'pollMs' | 'fallbackMs' | 'reclaimMs' | 'workMinMs' | 'workMaxMs' | 'logLevel'
  > {
  readonly url: string;
  /** Group 0's schema (the only one without groups). */
  readonly schema: string;
  /** Every group's schema, in group order (length 1 without groups). */
  readonly schemas?: readonly string[];
  readonly workerId: string;
}

export const WORKER_CONFIG_ENV = 'POSTPONE_DEMO_WORKER';
