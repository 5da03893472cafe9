/**
 * The messages between a test and its child processes (Node IPC, `child_process.fork`), and the
 * configuration a child receives in the `POSTPONE_HARNESS_CONFIG` environment variable (JSON).
 *
 * Times from the database clock travel as epoch milliseconds (`...AtMs`).
 */

/** Where a handler can park until the test sends `proceed` (a chosen moment for a fault). */
export type FaultPoint = 'afterClaim' | 'afterExternal';

/** How the child's handler for `kind` behaves; everything is off unless set. */
export interface HandlerPlan {
  /** The task kind handled. */
  readonly kind: string;
  /** More kinds handled by the same plan (default none). */
  readonly alsoKinds?: readonly string[];
  /** Report `handlerEnded` when the handler returns or throws (default off). */
  readonly reportEnd?: boolean;
  /** Points where the handler parks until `proceed`; limited to the listed attempts when given. */
  readonly park?: readonly { readonly point: FaultPoint; readonly attempts?: readonly number[] }[];
  /** Block the event loop (busy loop) for this many ms right after the claim. */
  readonly blockMs?: number;
  /** Call the fake external service, with the key per task (`task-<id>`) or per attempt (`task-<id>-a<n>`). */
  readonly external?: { readonly url: string; readonly key: 'task' | 'attempt' };
  /** Asynchronous work after the external call, in ms. */
  readonly workMs?: number;
  /**
   * A barrier (evidence `fan_in_exactly_once`: parents that finish together): the handler waits,
   * inside its claim, for the test's `barrier` control, then until the database clock reads its
   * `atMs`, and returns. The process reads the database clock once (`store.now()`: the midpoint of
   * the shortest of 5 round trips) and waits on its own timers, spinning the last 50 ms.
   */
  readonly barrier?: boolean;
  /**
   * Before returning, wait up to this many ms for the handler's signal to abort (lease lost): the
   * handler then returns anyway, so the late complete reaches the store and is fenced there.
   */
  readonly awaitAbortMs?: number;
  /** Throw on attempts `<= failAttempts` (use a large number to always fail). */
  readonly failAttempts?: number;
  /**
   * Report progress `{ half: <task id> }` through `ctx.progress` before the work, and return the
   * task's payload as JSON text in the result's `echo` (evidence `await_result`; default off).
   */
  readonly echoWithProgress?: boolean;
  /**
   * Write the task's local effect, one `<schema>.app_effect` row (primary key `task_id`; see
   * `app-effect.ts`), through `ctx.onCompleteTx` in the transaction that commits DONE (default true):
   * the seed's effect table, now the handler's own (migration 13); the worker group-commits it in its
   * batched `completeMany`. `false`: no same-transaction write. A list: only tasks of these kinds
   * write it.
   */
  readonly effect?: boolean | readonly string[];
  /**
   * Write one `<schema>.history_effect` row (no unique key) in the completing transaction
   * (`onCompleteTx`), so the history checker sees every effect that committed, duplicates included.
   * The table must exist (`createHistoryEffectTable`).
   */
  readonly historyEffect?: boolean;
  /** Take a connection from the child's own pool (pg) or `sql.reserve()` (postgres.js) and hold it this many ms. */
  readonly holdConnectionMs?: number;
}

/** Settings of the real worker runtime in the child. */
export interface WorkerSettings {
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly renewEveryMs: number;
  readonly pollIntervalMs: number;
  readonly backoffBaseMs: number;
  /** Period of the expired-lease reclaim (default: the worker's, `leaseMs / 2`). */
  readonly reclaimEveryMs?: number;
  /** How long an aborted handler may take to settle before it is abandoned (default: the worker's). */
  readonly abandonGraceMs?: number;
  /** `poll` (default) or `hybrid` discovery. */
  readonly discovery?: 'poll' | 'hybrid';
  /** Hybrid's periodic re-read of the store, in ms (default: the worker's). */
  readonly fallbackPollMs?: number;
  /** Completions per `completeMany` (default: the worker's). */
  readonly completeBatchSize?: number;
  /** `'handlers'` (the worker's default: only kinds it has handlers for) or `'any'` (docs/contract.md#queues). */
  readonly claimKinds?: 'handlers' | 'any';
  /** The worker's `kindConcurrency` caps (default none). */
  readonly kindConcurrency?: Readonly<Record<string, number>>;
}

/** How the child connects: driver and the driver settings that bound a dead connection. */
export interface ConnectionPlan {
  /**
   * At start, wait for a database that refuses connections (bounded, about 20 s) instead of exiting
   * at once: a worker respawned while the database restarts (the soak), as a supervisor would.
   */
  readonly waitForDatabase?: boolean;
  /** `pg` (node-postgres, default) or `postgres` (postgres.js). */
  readonly driver?: 'pg' | 'postgres';
  /** Per-query client-side timeout in ms (pg `query_timeout`; postgres.js has none). */
  readonly queryTimeoutMs?: number;
  /** Connect timeout in ms (pg `connectionTimeoutMillis`, postgres.js `connect_timeout`). */
  readonly connectTimeoutMs?: number;
  /** TCP keepalive: pg `keepAlive` + `keepAliveInitialDelayMillis`, postgres.js `keep_alive` (s). */
  readonly keepAliveMs?: number;
  /** postgres.js `prepare` (set false behind a transaction-mode pooler). */
  readonly prepare?: boolean;
  /** Database URL for LISTEN when it differs (a pooler in front of the rest): the store's `listenConnectionString`. */
  readonly listenUrl?: string;
  /** The store's `pooler` option (`'transaction'` behind PgBouncer in transaction mode). */
  readonly pooler?: 'none' | 'transaction';
  /**
   * The store's `replyTimeoutMs`; also guards the child's own pool / `sql` with the product's reply
   * guard (`pgPoolConfig` / `replyGuardedSocket`), as a user who passes a pool of their own would.
   */
  readonly replyTimeoutMs?: number;
  /**
   * postgres.js only: the URL its `sql` connects to when it differs from the child's database URL,
   * e.g. several hosts with `target_session_attrs=read-write` (the harness's own `pg` pool, which
   * cannot take several hosts, stays on the database URL).
   */
  readonly postgresJsUrl?: string;
}

/** The broken variants a child may use (negative controls; never part of the product). */
export interface VariantPlan {
  /** Replace the store's fenced complete with an UPDATE without attempt and state guards, writing `effect_nounique`. */
  readonly complete?: 'unfenced';
}

/** A claim-and-complete loop outside the worker runtime, for the naive-claim control and its twin. */
export interface ClaimLoopPlan {
  /** `naive`: SELECT due ids, pause, UPDATE by id (no lock, no state guard). `atomic`: the store's claim. */
  readonly claim: 'naive' | 'atomic';
  /** Most ids per round. */
  readonly limit: number;
  /** Pause between finding tasks and completing them, in ms (the naive race window). */
  readonly pauseMs: number;
  readonly leaseMs: number;
  /** Pause when a round found nothing, in ms. */
  readonly idleMs: number;
}

/** Schedules of one (kind, key) with a dedup key mode, for the dedup modes' race (docs/contract.md#dedup-keys). */
export interface ScheduleLoopPlan {
  readonly kind: string;
  readonly key: string;
  /** Schedules in all, by `parallel` callers. */
  readonly count: number;
  readonly parallel: number;
  /** The schedule's `onConflict` (a core `OnConflict`). */
  readonly onConflict: string;
  readonly throttleMs?: number;
  /** Each task's `delayMs` (default 0). */
  readonly delayMs?: number;
  /** Pause of each caller after each schedule, in ms (default 0). */
  readonly pauseMs?: number;
}

export interface ChildConfig {
  /** Worker identity (lease owner, the worker of a DONE and of its `app_effect` row). */
  readonly name: string;
  readonly databaseUrl: string;
  readonly schema: string;
  /** Wait for a `start` message before claiming (default false: start at once). */
  readonly waitForStart?: boolean;
  /** Size of the child's connection pool (default: a worker's concurrency + 4, else 4). */
  readonly poolSize?: number;
  /** Driver and connection settings (default: pg with its defaults). */
  readonly connection?: ConnectionPlan;
  readonly run:
    | { readonly mode: 'worker'; readonly worker: WorkerSettings; readonly handler: HandlerPlan; readonly variant?: VariantPlan }
    | { readonly mode: 'claimLoop'; readonly loop: ClaimLoopPlan }
    /** On `start`, schedules one (kind, key) as planned and reports `scheduleDone`. */
    | { readonly mode: 'scheduleLoop'; readonly loop: ScheduleLoopPlan }
    /** Waits for `migrate` controls and migrates the named schema with a fresh store each time. */
    | { readonly mode: 'migrate' };
}

/** Child → test. */
export type ChildEvent =
  | { readonly type: 'ready'; readonly pid: number }
  | { readonly type: 'started' }
  | { readonly type: 'claimed'; readonly id: string; readonly attempt: number; readonly claimedAtMs: number; readonly dueAtMs: number; readonly leaseUntilMs: number }
  /** `wallMs`: the child's `Date.now()` as the handler began (one clock for every child of the machine). */
  | { readonly type: 'handlerStarted'; readonly id: string; readonly attempt: number; readonly wallMs: number }
  /** With `reportEnd`: the handler returned or threw; `wallMs` its child's `Date.now()` then. */
  | { readonly type: 'handlerEnded'; readonly id: string; readonly attempt: number; readonly wallMs: number }
  | { readonly type: 'renewed'; readonly id: string; readonly attempt: number }
  /** Every answer of the store's extend (the worker reports only successes as `renewed`). */
  | { readonly type: 'extended'; readonly id: string; readonly attempt: number; readonly ok: boolean }
  | { readonly type: 'leaseLost'; readonly id: string; readonly attempt: number; readonly reason: string }
  | { readonly type: 'externalCalled'; readonly id: string; readonly attempt: number; readonly key: string; readonly applied: boolean }
  | { readonly type: 'parked'; readonly id: string; readonly attempt: number; readonly point: FaultPoint }
  | { readonly type: 'committed'; readonly id: string; readonly attempt: number; readonly outcome: string }
  | { readonly type: 'failed'; readonly id: string; readonly attempt: number; readonly outcome: string; readonly error: string }
  | { readonly type: 'rejectedStale'; readonly id: string; readonly attempt: number; readonly operation: string }
  | { readonly type: 'reclaimed'; readonly id: string; readonly attempt: number; readonly outcome: string }
  /** Hybrid discovery re-read the store (`reason`: start, fallback, horizon, gap, reconnect). */
  | { readonly type: 'wheelRebuilt'; readonly reason: string; readonly listed: number; readonly size?: number }
  /**
   * How long one `store.claim` took, in ms (monotonic clock of the child), the `limit` it asked for
   * and how many it returned; `ok` false when the call rejected (sent for every such call: the worker
   * reports only the first failed store call of an outage as `error`). A rejected claim may still
   * have committed up to `limit` attempts that no worker observed.
   */
  | { readonly type: 'claimTimed'; readonly ms: number; readonly limit: number; readonly count: number; readonly ok: boolean }
  /** The `scheduleLoop` finished: what the store answered (`ids`: distinct ids returned; `createdIds`: the tasks this child created). */
  | {
      readonly type: 'scheduleDone';
      readonly calls: number;
      readonly created: number;
      readonly replaced: number;
      readonly throttled: number;
      readonly ids: readonly string[];
      readonly createdIds: readonly string[];
      readonly errors: number;
      readonly firstError?: string;
    }
  /** A `migrate` control finished: `ms` taken, `error` text when it threw. */
  | { readonly type: 'migrated'; readonly schema: string; readonly ms: number; readonly error?: string }
  | { readonly type: 'released'; readonly id: string; readonly attempt: number; readonly outcome: string }
  /** A worker `error` event (`operation` set) or a fatal error of the child (no `operation`). */
  | { readonly type: 'error'; readonly message: string; readonly operation?: string }
  /** `wallMs`: the child's `Date.now()` when it stopped (shows a faked clock). */
  | { readonly type: 'stopped'; readonly wallMs?: number }
  /** Added by the test side when the process ends; never sent by the child. */
  | { readonly type: 'exited'; readonly code: number | null; readonly signal: NodeJS.Signals | null };

export type ChildEventType = ChildEvent['type'];

/** Test → child. */
export type ChildControl =
  | { readonly type: 'start' }
  /** Releases the handler parked at `point` for task `id` (any task / any point when omitted). */
  | { readonly type: 'proceed'; readonly id?: string; readonly point?: FaultPoint }
  /** Releases every handler waiting at its barrier ({@link HandlerPlan.barrier}) at `atMs` on the database clock. */
  | { readonly type: 'barrier'; readonly atMs: number }
  /** Graceful stop: the child stops claiming, finishes, reports `stopped` and exits 0. */
  | { readonly type: 'stop' }
  /** Migrate mode: run `store.migrate()` on `schema` now. */
  | { readonly type: 'migrate'; readonly schema: string };

/** The environment variable carrying the JSON {@link ChildConfig}. */
export const CONFIG_ENV = 'POSTPONE_HARNESS_CONFIG';
