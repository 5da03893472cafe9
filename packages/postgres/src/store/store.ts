/**
 * `PostgresStore` — the core `Store` contract in SQL (docs/contract.md#transitions), over either driver.
 *
 * Every guard lives in the SQL of `@postpone/postgres` (`sql.ts`) and mirrors core `transition()` guard for guard; the
 * conformance suite and the differential test hold the two to the same outcomes. Each operation is
 * one statement in autocommit, except complete (one statement, then a resolution of a miss; one transaction with `work`), completeMany (one statement, then
 * per-item resolution of the items it missed) and cancel (one statement, then a read of a terminal state
 * when it hit nothing).
 */
import {
  type BulkFilter,
  type BulkOptions,
  type CancelManyResult,
  type DeleteManyResult,
  type RescheduleManyOptions,
  type RescheduleManyResult,
  type RetryManyOptions,
  type RetryManyResult,
  checkCallParams,
  type CancelOptions,
  type CancelOutcome,
  type ClaimedTask,
  type ClaimParams,
  type ConnectionBudget,
  type MigrateResult,
  type Clock,
  type CompleteManyItem,
  type NormalizedCompleteItem,
  type CompleteOutcome,
  type CompleteParams,
  DEFAULT_MAX_PAYLOAD_BYTES,
  rejectUnknownFields,
  type Completion,
  type ExtendParams,
  type FailParams,
  type FailResult,
  type Json,
  type NormalizedSchedule,
  type NormalizedScheduleOptions,
  HANDS_OVER_KEY,
  DuplicateKeyError,
  type OnConflict,
  type PeekParams,
  type PeekResult,
  PostponeError,
  type ReclaimedTask,
  type ReclaimOutcome,
  type TaskRecord,
  type ReclaimParams,
  type ReleaseOutcome,
  type ReleaseParams,
  type RetryPolicy,
  type SnoozeParams,
  type SnoozeResult,
  validateFailRetry,
  validateKeep,
  validateSnoozeParams,
  type ScheduledTask,
  type ScheduleInput,
  type ScheduleOptions,
  type StateCounts,
  type Store,
  SchemaVersionError,
  StoreClosedError,
  StoreError,
  TASK_STATES,
  type Task,
  type TaskId,
  TaskState,
  HELD_DUE_AT_MS,
  type TraceContext,
  parseTaskId,
  validateAttempt,
  validateCancelOptions,
  validateCompleteMany,
  validateExtendMany,
  type ExtendManyParams,
  type KeyConcurrencyInput,
  type KeyRateLimitInput,
  type KeyRateLimitRecord,
  type KeyRateLimitStore,
  type KeyConcurrencyRecord,
  type KeyLimitStore,
  type KeyBacklogPage,
  type KeyBacklogParams,
  type KeyBacklogStore,
  type RateLimited,
  type RateLimitInput,
  type RateLimitRecord,
  type RateLimitScope,
  type RateLimitStore,
  notifyRateLimited,
  validateOnRateLimited,
  validateJson,
  validateNonNegativeMs,
  validatePositiveInt,
  validatePositiveMs,
  validateSchedule,
  validateScheduleMany,
  validateScheduleOptions,
  validateKindLimits,
  validateSelection,
  ValidationError,
  DEFAULT_BATCH_LIMIT,
  errorText,
  MAX_BATCH_LIMIT,
  MAX_CLAIM_LIMIT,
  validateOwner,
  compareTaskIds,
} from '@postpone/core';
import { PostgresKeyLimits } from './key-limit.js';
import { PostgresKeyBacklog } from './key-backlog.js';
import { PostgresKeyRateLimits } from './key-rate-limit.js';
import { PostgresRateLimits } from './rate-limit.js';
import { LimitDeclarations, limitDeclarationStatements } from './limit-declarations.js';
import { hasDependencies, linkDependencies } from './dependencies.js';
import { type DependencyStatements, dependencyStatements } from '../sql/dependency-sql.js';
import { type Driver, type DriverEvents, isPool, isPostgresJsSql, isSqlExecutor, type ListenOptions, type QueryFn, type Row, type SqlExecutor, transactionStatusOf, type Unlisten } from './driver.js';
import { type DialectDriver, dialectDriver } from './dialect-driver.js';
import { innerSqlStateOf, isDriverLevelError, isNotifyQueueFull, SHAPE_SQLSTATES, SqlState, sqlStateOf, translateError } from './errors.js';
import {
  defaultNotifyChannel,
  MAX_IDENTIFIER_LENGTH,
  type PauseNotice,
  parsePauseNotice,
  parseScheduledMany,
  parseTaskNotice,
  parseWorkerNotice,
  type TaskNotice,
  type WorkerNotice,
  workerNoticePayload,
} from '../sql/notice.js';
import { HEALTH_STATEMENTS, type VacuumHealth, vacuumHealthFrom } from '../sql/health-sql.js';
import { HISTORY_DAYS_AHEAD } from '../sql/history-sql.js';
import { MIN_SCHEMA_VERSION, migrations, SCHEMA_VERSION } from '../sql/migrations.js';
import { CITUS_BEFORE_SCHEMA, CITUS_SCHEMA_DISTRIBUTED, citusSchemaDistribute, type Dialect, migrationStatements } from '../sql/citus.js';
import { type DedupStatements, dedupStatements } from '../sql/dedup-sql.js';
import { type RenewStatements, renewStatements } from '../sql/renew-sql.js';
import { NOTICE_QUEUE_LIMIT, type Statements, statements, type TaskRow } from '../sql/sql.js';
import { storeNowSet } from '../sql/batch-clock-sql.js';
import { PostgresAdmin } from './admin.js';
import { PostgresBulk } from './bulk.js';
import { PostgresBatches } from './batch.js';
import type { BatchCallback, BatchId, BatchInfo, BatchStore } from '@postpone/core';
import { NoticeCoalescer } from './notice-coalescer.js';
import { PostgresCron } from './cron.js';
import { PostgresPause } from './pause.js';
import { PAUSE_MIGRATION_VERSION } from '../sql/pause-sql.js';
import type { PausedEntry, PauseOptions, PauseTarget } from '@postpone/core';
import { DEFAULT_WAIT_FALLBACK_MS, PgWaitFor, type WaitForStats } from './wait-for.js';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { reserveIdRangeSql } from '../sql/shard-sql.js';
import { finishChannel, type ProgressWaitStatements, progressWaitStatements } from '../sql/progress-wait-sql.js';
import { millis, ms as msOf, taskColumns } from '../sql/sql.js';
import {
  type ProgressParams,
  type RescheduleParams,
  type RescheduleResult,
  type WaitForOptions,
  validateProgressParams,
  validateReschedule,
  validateWaitFor,
} from '@postpone/core';
import type { CronScheduleRecord, CronStore, ReconcileCronParams, ReconcileCronResult, ScheduleCronOccurrenceParams, ScheduleCronOccurrenceResult } from '@postpone/core';
import type { ListTasksParams, PruneParams, PruneResult, RetryParams, RetryResult, StoreStats, TaskPage, UnclaimedKinds, UnclaimedKindsParams } from '@postpone/core';

/** Default schema of the tables. */
export const DEFAULT_SCHEMA = 'postpone';

/** What {@link PostgresStore.checkSchema} found: the schema fits this code. */
export interface SchemaCheck {
  /** The newest migration applied to the schema (at least `codeVersion`). */
  readonly schemaVersion: number;
  /** The newest migration this code knows (`SCHEMA_VERSION`); it runs on schemas from `MIN_SCHEMA_VERSION` (17) on. */
  readonly codeVersion: number;
  /** The highest `minReader` the schema's migrations declare (at most `codeVersion`), or null. */
  readonly minReader: number | null;
}
/** Default and largest reclaim / peek batches (shared with every store through core). */
export const DEFAULT_RECLAIM_LIMIT = DEFAULT_BATCH_LIMIT;
export const MAX_RECLAIM_LIMIT = MAX_BATCH_LIMIT;
export const DEFAULT_PEEK_LIMIT = DEFAULT_BATCH_LIMIT;
export const MAX_PEEK_LIMIT = MAX_BATCH_LIMIT;

export interface PostgresStoreOptions {
  /** Schema of the tables (default `postpone`); an identifier `[A-Za-z_][A-Za-z0-9_]*`, at most 63 characters. */
  readonly schema?: string;
  /**
   * A clock whose time enters every statement as `$1` (tests, differential models). Omit it in
   * production: the database clock (`now()`, `clock_timestamp()`) judges due times and leases (docs/contract.md#promise-1).
   */
  readonly clock?: Clock;
  /** Payload and result size limit in bytes of UTF-8 JSON (default 1 MiB). */
  readonly maxPayloadBytes?: number;
  /** LISTEN/NOTIFY channel (default `postpone_<schema>`, cut to 63 bytes). */
  readonly notifyChannel?: string;
  /**
   * How `schedule`/`scheduleMany` announce new tasks to listening workers (docs/contract.md#schedule-notices):
   * `'near'` (default) — a NOTIFY per task inside the schedule statement, delivered at its commit,
   * only when a task of the call is due within {@link NEAR_NOTICE_MS} (30 s; by `delayMs`, or `runAt`
   * against this process's clock): a hybrid worker's periodic re-read (`fallbackPollMs`, 2 s by
   * default; keep it well below 30 s) lists later tasks long before they are due, and every commit
   * that notifies takes PostgreSQL's notification-queue lock; `'each'` — as `'near'` for every task,
   * however far; `'coalesced'` — in the caller's transaction (`tx`) as `'near'`, otherwise after the
   * insert committed a NOTIFY of its own for the tasks due within 30 s, one in flight per store, the
   * tasks scheduled meanwhile going together in the next one (one more statement per near schedule:
   * it pays only when one process schedules near tasks faster than a NOTIFY round trip); `'off'` —
   * none (hybrid workers find new tasks by their fallback read).
   */
  readonly scheduleNotices?: 'coalesced' | 'each' | 'near' | 'off';
  /**
   * For the connections the store creates (from `connectionString`): a connection that waited this
   * long (ms) for the server, connecting or after sending a request, is destroyed and the call
   * rejects with `ConnectionLostError` (or `ConnectionError` TIMEOUT while connecting). This bounds
   * half-open connections. Default 30 000. Keep `statement_timeout` below it: a statement silent
   * for longer is cut. Under TLS only the connect phase is bounded (set TCP keepalive and, for pg,
   * `query_timeout`). Ignored for a `pool` / `sql` you pass: set the equivalents yourself.
   */
  readonly replyTimeoutMs?: number;
  /**
   * `'transaction'` when a transaction pooler (PgBouncer `pool_mode = transaction`, RDS Proxy…)
   * stands between the store and PostgreSQL. Then postgres.js runs without prepared statements
   * (a passed `sql` must have `prepare: false`), and `listen` needs `listenConnectionString`
   * (LISTEN holds a session, which such a pooler does not keep). Default `'none'`.
   */
  readonly pooler?: 'none' | 'transaction';
  /**
   * A direct connection string (bypassing the pooler) used only for LISTEN. The store creates
   * a connection of its own on it and ends it on `close()`.
   */
  readonly listenConnectionString?: string;
  /**
   * `waitFor`'s fallback: every this many ms while callers wait, ONE batched re-read of every pending
   * task id (finish notices wake callers at once; this catches a lost one). Default 2 000, 1..2³¹−1.
   */
  readonly waitFallbackMs?: number;
  /**
   * Called with the translated error when a connection the store holds is lost outside any call
   * (an idle pool connection, the LISTEN connection). The next call reconnects. Must not throw.
   */
  readonly onConnectionError?: (error: PostponeError) => void;
  /**
   * The SQL dialect: `'postgres'`, or `'citus'` for a Citus coordinator, where `migrate()` makes the
   * schema one shard group of schema-based sharding (every statement routed to one node) and sends
   * the few statements Citus needs in another form (`sql/citus.ts`). Default: detected once, at the
   * first `migrate()` or call that needs it, from `pg_extension` (`'citus'` when the extension is
   * installed in the database).
   */
  readonly dialect?: Dialect;
}

/** The options every PostgreSQL store factory takes, beside its driver's own. */
export const STORE_OPTION_NAMES: readonly string[] = [
  'schema',
  'clock',
  'maxPayloadBytes',
  'notifyChannel',
  'scheduleNotices',
  'replyTimeoutMs',
  'pooler',
  'listenConnectionString',
  'onConnectionError',
  'dialect',
  'waitFallbackMs',
];

/**
 * Checks the options of a store factory before it creates anything: an object of known fields
 * (the common ones and the driver's `own`), exactly one of `connection` (the driver's handle: `pool`,
 * `sql`) and `connectionString`, and the connection options.
 * @returns `replyTimeoutMs` and `listenConnectionString` when given
 * @throws ValidationError INVALID_OPTION naming the field
 */
export function validateDriverOptions(
  options: PostgresStoreOptions & { readonly connectionString?: string },
  connection: string,
  own: readonly string[],
): { replyTimeoutMs?: number; listenConnectionString?: string } {
  if (typeof options !== 'object' || options === null) throw new ValidationError('INVALID_OPTION', 'options', 'must be an object');
  rejectUnknownFields(options, [...STORE_OPTION_NAMES, connection, 'connectionString', ...own]);
  if (((options as Record<string, unknown>)[connection] === undefined) === (options.connectionString === undefined)) {
    throw new ValidationError('INVALID_OPTION', connection, `give exactly one of ${connection} and connectionString`);
  }
  return validateConnectionOptions(options);
}

/** The connection options of {@link validateDriverOptions}, alone (a store built on a given driver). */
function validateConnectionOptions(options: PostgresStoreOptions): { replyTimeoutMs?: number; listenConnectionString?: string } {
  const replyTimeoutMs = options.replyTimeoutMs === undefined ? undefined : validatePositiveMs(options.replyTimeoutMs, 'replyTimeoutMs');
  if (options.pooler !== undefined && options.pooler !== 'none' && options.pooler !== 'transaction') {
    throw new ValidationError('INVALID_OPTION', 'pooler', "must be 'none' or 'transaction'");
  }
  const listen = options.listenConnectionString;
  if (listen !== undefined && (typeof listen !== 'string' || listen.trim() === '')) {
    throw new ValidationError('INVALID_OPTION', 'listenConnectionString', 'must be a non-empty connection string');
  }
  if (options.onConnectionError !== undefined && typeof options.onConnectionError !== 'function') {
    throw new ValidationError('INVALID_OPTION', 'onConnectionError', 'must be a function');
  }
  return { ...(replyTimeoutMs === undefined ? {} : { replyTimeoutMs }), ...(listen === undefined ? {} : { listenConnectionString: listen }) };
}

/** The driver events of a store's options: errors translated, a throwing callback contained. */
export function connectionEvents(options: PostgresStoreOptions): DriverEvents {
  return {
    onConnectionError: (error) => {
      try {
        options.onConnectionError?.(translateError(error));
      } catch {
        // A throwing callback must not turn a lost idle connection into a crash.
      }
    },
  };
}

/** `scheduleNotices` `'near'` (default) and `'coalesced'`: a schedule call announces its tasks only when one is due within this many ms. */
export const NEAR_NOTICE_MS = 30_000;

/**
 * On a schema before migration 15 (no `pause` table) the store claims without the pause check and
 * reads the schema's version again at most this often (ms, at a claim), so a `migrate()` applied under
 * a running process makes its claims honour pauses within this long (docs/contract.md#pause-and-resume).
 */
export const PAUSE_SCHEMA_RECHECK_MS = 5_000;

/**
 * `$1` channel, `$2` payload → one row `{ sent }`: a boolean when the NOTIFY was sent (`pg_notify`
 * returns void; `is null` only puts the call in a select list), null when it was left
 * out because the cluster's NOTIFY queue is at least {@link NOTICE_QUEUE_LIMIT} full (a listener that
 * stops reading pins it; once full, a notifying commit fails with 54000). For the notices sent outside
 * a data statement: `listen`'s probe, worker presence, coalesced schedule notices.
 */
const NOTIFY_PROBE = `select case when pg_notification_queue_usage() < ${NOTICE_QUEUE_LIMIT} then pg_notify($1, $2) is null end as sent`;

/** A schedule of two (kind, key) pairs or more takes its key locks in a statement of its own (`taskKeyLocks`). */
function locksKeys(tasks: readonly { readonly kind: string; readonly key: string | null }[]): boolean {
  return new Set(tasks.filter((t) => t.key !== null).map((t) => JSON.stringify([t.kind, t.key]))).size >= 2;
}

/** How long `listen` waits for its own probe notification before it says LISTEN does not work. */
export const LISTEN_PROBE_TIMEOUT_MS = 3_000;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The options of a batch's schedule (`scheduleInBatch`): `keep`, no throttle. */
const KEEP_OPTIONS: NormalizedScheduleOptions = Object.freeze({ onConflict: 'keep', throttleMs: null });

function validateIdentifier(value: unknown, field: string): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value) || value.length > MAX_IDENTIFIER_LENGTH) {
    throw new ValidationError('INVALID_OPTION', field, `must match ${IDENTIFIER.source} and be at most ${MAX_IDENTIFIER_LENGTH} characters`);
  }
  return value;
}

function parseJson(text: unknown): Json {
  return typeof text === 'string' ? (JSON.parse(text) as Json) : null;
}

function date(ms: unknown): Date {
  return new Date(Number(ms));
}

function toTask(row: Row): Task {
  const r = row as unknown as TaskRow;
  return {
    id: r.id,
    kind: r.kind,
    key: r.key ?? null,
    queue: r.queue,
    priority: r.priority,
    payload: parseJson(r.payload),
    state: r.state as TaskState,
    dueAt: date(r.dueatms),
    attempt: r.attempt,
    failures: r.failures,
    maxAttempts: r.maxattempts,
    leaseOwner: r.leaseowner,
    leaseUntil: r.leaseuntilms === null ? null : date(r.leaseuntilms),
    cancelRequested: r.cancelrequested,
    result: parseJson(r.result),
    lastError: r.lasterror,
    createdAt: date(r.createdatms),
    updatedAt: date(r.updatedatms),
    ...traceContextOf(r.tracecontext),
    ...retryOf(r.retry),
    ...(r.progress === null || r.progress === undefined ? {} : { progress: JSON.parse(String(r.progress)) as Json }),
  };
}

/** `{ retry }` from the `retry` column's text (migration 8), or `{}` when it is null (the field is then absent). */
function retryOf(text: unknown): { retry?: RetryPolicy } {
  return text === null || text === undefined ? {} : { retry: JSON.parse(String(text)) as RetryPolicy };
}

/** `{ traceContext }` from the `trace_context` column's text, or `{}` when it is null (the field is then absent). */
function traceContextOf(text: unknown): { traceContext?: TraceContext } {
  return text === null || text === undefined ? {} : { traceContext: JSON.parse(String(text)) as TraceContext };
}

/**
 * The PostgreSQL store. `Tx` is the driver's native transaction handle: a `pg.PoolClient` from
 * `@postpone/postgres/pg`, a postgres.js `TransactionSql` from `@postpone/postgres/postgres-js`.
 *
 * Every method throws {@link @postpone/core!StoreClosedError} after {@link close}, `ConnectionLostError` when the
 * connection failed, `StoreError` (with SQLSTATE) for other database errors, and `ValidationError`
 * for bad input before anything is sent.
 */
/**
 * Sent after the handler's `work` in a completing transaction: a work that caught the error of one of
 * its own statements leaves the transaction aborted, and its COMMIT would then answer ROLLBACK without
 * an error — DONE reported for tasks still CLAIMED. This statement fails with 25P02
 * (in_failed_sql_transaction) instead, so complete and completeMany reject and nothing is reported
 * done (PostgreSQL: a failed transaction ignores every command until its end, 25P02, and its COMMIT
 * completes with the tag ROLLBACK).
 */
const WORK_LEFT_TX_ALIVE = 'select 1';

export class PostgresStore<Tx> implements Store<Tx>, CronStore, RateLimitStore, KeyLimitStore, KeyRateLimitStore, KeyBacklogStore, BatchStore {
  readonly name: string;
  readonly schema: string;
  readonly notifyChannel: string;
  readonly sql: Statements;
  /** The statements of the dedup key modes `debounce` and `throttle` (`../sql/dedup-sql.ts`). */
  private readonly dedup: DedupStatements;
  private readonly deps: DependencyStatements;
  readonly connectionBudget: ConnectionBudget | undefined;
  /** The adapter's driver behind the dialect switch (`./dialect-driver.ts`). */
  private readonly driver: DialectDriver<Tx>;
  private readonly clock: Clock | undefined;
  /** Largest payload or result accepted, in UTF-8 bytes of its JSON text. */
  readonly maxPayloadBytes: number;
  private readonly pooler: 'none' | 'transaction';
  private closed = false;
  private closing: Promise<void> | undefined;
  /** The schema check before the first claim or reclaim, kept once it passed (see {@link checkSchema}). */
  private schemaChecked: Promise<unknown> | undefined;
  /** Whether the last schema check found the `pause` table (migration 15): claims and peeks then leave paused work out. */
  private pauseTable = false;
  /** The schema's version at the last check that passed (0 before one). */
  private schemaVersionSeen = 0;
  /** `performance.now()` after which a schema without the `pause` table is checked again. */
  private pauseRecheckAt = 0;
  /** The claim and peek statements without the pause check, for a schema before migration 15; built on first use. */
  private beforePauseSql: Statements | undefined;
  private readonly scheduleNotices: 'coalesced' | 'each' | 'near' | 'off';
  /** Announces autocommit schedules after they committed (`scheduleNotices: 'coalesced'`). */
  readonly notices: NoticeCoalescer;

  /** @throws ValidationError INVALID_OPTION for a bad schema, channel or size limit */
  constructor(adapter: Driver<Tx>, options: PostgresStoreOptions = {}) {
    if (options.dialect !== undefined && options.dialect !== 'postgres' && options.dialect !== 'citus') {
      throw new ValidationError('INVALID_OPTION', 'dialect', "must be 'postgres' or 'citus'");
    }
    const driver = dialectDriver(adapter, options.dialect);
    this.driver = driver;
    this.name = driver.name;
    this.connectionBudget = driver.connectionBudget;
    this.schema = validateIdentifier(options.schema ?? DEFAULT_SCHEMA, 'schema');
    this.notifyChannel = validateIdentifier(options.notifyChannel ?? defaultNotifyChannel(this.schema), 'notifyChannel');
    this.maxPayloadBytes =
      options.maxPayloadBytes === undefined ? DEFAULT_MAX_PAYLOAD_BYTES : validatePositiveInt(options.maxPayloadBytes, 'maxPayloadBytes', 2 ** 30);
    this.clock = options.clock;
    const notices = options.scheduleNotices ?? 'near';
    if (notices !== 'coalesced' && notices !== 'each' && notices !== 'near' && notices !== 'off') {
      throw new ValidationError('INVALID_OPTION', 'scheduleNotices', "must be 'each', 'coalesced', 'near' or 'off'");
    }
    this.scheduleNotices = notices;
    this.notices = new NoticeCoalescer(
      async (payload) => {
        await this.call(() => this.driver.query(NOTIFY_PROBE, [this.notifyChannel, payload]));
      },
      () => {},
    );
    validateConnectionOptions(options);
    this.pooler = options.pooler ?? 'none';
    this.sql = statements(this.schema);
    this.dedup = dedupStatements(this.schema);
    this.deps = dependencyStatements(this.schema, msOf);
    const context = {
      driver: driver as Driver<unknown>,
      schema: this.schema,
      notifyChannel: this.notifyChannel,
      nowParam: () => this.nowParam(),
      dialect: () => driver.dialect(),
      call: <T>(op: () => Promise<T>) => this.call(op),
      assertOpen: () => this.assertOpen(),
    };
    this.admin = new PostgresAdmin({ ...context, toTask });
    this.bulk = new PostgresBulk({ ...context, toTask });
    this.batches = new PostgresBatches({
      schema: this.schema,
      notifyChannel: this.scheduleNotices === 'off' ? null : this.notifyChannel,
      maxPayloadBytes: this.maxPayloadBytes,
      nowMs: () => this.clock?.now() ?? Date.now(),
      nowParam: () => this.nowParam(),
      query: (text, p) => this.driver.query(text, p),
      transaction: (work) => this.driver.transaction((query) => work(query)),
      insertIn: (query, tasks) => this.insertIn(query, tasks, KEEP_OPTIONS, this.scheduleNotices === 'off' ? null : this.notifyChannel),
      linkIn: async (query, tasks, scheduled) => {
        if (hasDependencies(tasks)) await linkDependencies(query, this.deps, tasks, scheduled, this.nowParam());
      },
      call: (op) => this.call(op),
      assertOpen: () => this.assertOpen(),
      dialect: () => driver.dialect(),
    });
    this.progressSql = progressWaitStatements(this.schema, taskColumns, msOf, millis);
    const fallbackMs = options.waitFallbackMs === undefined ? DEFAULT_WAIT_FALLBACK_MS : validatePositiveMs(options.waitFallbackMs, 'waitFallbackMs');
    const waiterId = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
    this.waiting = new PgWaitFor({
      fallbackMs,
      listen: async (onNotify, listenOptions) => {
        // Through a transaction pooler LISTEN needs a direct connection (`listenConnectionString`); without one, the fallback re-read alone.
        if (this.pooler === 'transaction' && !this.driver.directListen) throw new StoreError('LISTEN needs listenConnectionString behind a transaction pooler', undefined);
        return await this.call(() => this.driver.listen(finishChannel(this.schema), onNotify, listenOptions));
      },
      present: async (untilMs) => {
        await this.call(() => this.driver.query(this.progressSql.waiterPresent, [waiterId, untilMs]));
      },
      absent: async () => {
        await this.call(() => this.driver.query(this.progressSql.waiterAbsent, [waiterId]));
      },
      readMany: async (ids) => {
        const rows = await this.call(() => this.driver.query(this.progressSql.taskGetMany, [JSON.stringify(ids)]));
        return rows.map(toTask);
      },
    });
    this.cron = new PostgresCron({ ...context, maxPayloadBytes: this.maxPayloadBytes });
    this.pauses = new PostgresPause({ ...context, ready: () => this.pauseReady() });
    // One cache of which limits exist, read with one statement, for the three kinds of limit.
    const declarations = new LimitDeclarations(limitDeclarationStatements(context.schema), (sql) => context.driver.query(sql), (error) => context.call(() => Promise.reject(error)));
    this.rateLimits = new PostgresRateLimits(context, declarations);
    this.keyLimits = new PostgresKeyLimits(context, declarations);
    this.keyBacklogs = new PostgresKeyBacklog(context);
    this.keyRateLimits = new PostgresKeyRateLimits(context, declarations);
  }

  /** Paused queues and kinds (docs/contract.md#pause-and-resume): see `./pause.ts`. */
  private readonly pauses: PostgresPause;
  /**
   * Pauses a queue or a kind for every claimer of the schema (core `Store.pause`): one statement that
   * inserts the `pause` row (`on conflict do nothing`) and notifies listening workers at its commit.
   * @throws ValidationError (nothing sent), SchemaVersionError `SCHEMA_BEHIND` on a schema before migration 15, ConnectionLostError, StoreClosedError, StoreError
   */
  pause(target: PauseTarget, options?: PauseOptions): Promise<boolean> {
    return this.pauses.pause(target, options);
  }
  /** Resumes a paused queue or kind (core `Store.resume`): one statement that deletes the row and notifies listening workers. Errors as {@link pause}. */
  resume(target: PauseTarget): Promise<boolean> {
    return this.pauses.resume(target);
  }
  /** Every paused queue and kind (core `Store.listPaused`). Errors as {@link pause}. */
  listPaused(): Promise<PausedEntry[]> {
    return this.pauses.list();
  }

  /** Rate limits (`RateLimitStore`, docs/contract.md#rate-limits): see `./rate-limit.ts`. */
  private readonly rateLimits: PostgresRateLimits;
  setRateLimit(input: RateLimitInput): Promise<RateLimitRecord> {
    return this.rateLimits.set(input);
  }
  deleteRateLimit(scope: RateLimitScope): Promise<boolean> {
    return this.rateLimits.delete(scope);
  }
  listRateLimits(): Promise<RateLimitRecord[]> {
    return this.rateLimits.list();
  }

  /** Per-key concurrency and fair share (`KeyLimitStore`, docs/contract.md#per-key-concurrency): see `./key-limit.ts`. */
  private readonly keyLimits: PostgresKeyLimits;
  /**
   * Declares (or changes) a kind's per-key concurrency limit: one upsert of its `key_limit` row (migration 19).
   * @throws ValidationError (core `validateKeyConcurrency`; nothing sent), ConnectionLostError, StoreClosedError, StoreError (on a schema before migration 19: undefined table)
   */
  setKeyConcurrency(input: KeyConcurrencyInput): Promise<KeyConcurrencyRecord> {
    return this.keyLimits.set(input);
  }
  /** Removes a kind's per-key limit; true when there was one. Errors as {@link setKeyConcurrency}. */
  deleteKeyConcurrency(target: { readonly kind: string }): Promise<boolean> {
    return this.keyLimits.delete(target);
  }
  /** Every per-key limit, by kind. */
  listKeyConcurrency(): Promise<KeyConcurrencyRecord[]> {
    return this.keyLimits.list();
  }

  /** Per-key rate limits (`KeyRateLimitStore`, docs/contract.md#per-key-rate-limits): see `./key-rate-limit.ts`. */
  private readonly keyRateLimits: PostgresKeyRateLimits;
  /**
   * Declares (or changes) a kind's per-key rate limit: one upsert of its `key_rate_limit` row (migration 23).
   * @throws ValidationError (core `validateKeyRateLimit`; nothing sent; `KEY_RATE_LIMITS_UNSUPPORTED` in the Citus dialect), ConnectionLostError, StoreClosedError, StoreError (on a schema before migration 23: undefined table)
   */
  setKeyRateLimit(input: KeyRateLimitInput): Promise<KeyRateLimitRecord> {
    return this.keyRateLimits.set(input);
  }
  /** Removes a kind's per-key rate limit and its logs; true when there was one. Errors as {@link setKeyRateLimit} (no Citus refusal). */
  deleteKeyRateLimit(target: { readonly kind: string }): Promise<boolean> {
    return this.keyRateLimits.delete(target);
  }
  /** Every per-key rate limit, by kind, with its keys held now. */
  listKeyRateLimits(): Promise<KeyRateLimitRecord[]> {
    return this.keyRateLimits.list();
  }

  /** The per-key backlog (`KeyBacklogStore`, docs/contract.md#key-backlog): see `./key-backlog.ts`. */
  private readonly keyBacklogs: PostgresKeyBacklog;
  /**
   * Per limit key of a kind: due, not-yet-due and CLAIMED counts and the oldest due task's lateness by
   * the database clock, most due first; one read-only statement (`keyBacklog`, the partial index of migration 19).
   * @throws ValidationError (core `validateKeyBacklogParams`; nothing sent), ConnectionLostError, StoreClosedError, StoreError (on a schema before migration 19: undefined column)
   */
  keyBacklog(params: KeyBacklogParams): Promise<KeyBacklogPage> {
    return this.keyBacklogs.read(params);
  }

  /** Recurring schedules (`CronStore`, docs/contract.md#recurring-schedules): see `./cron.ts`. */
  private readonly cron: PostgresCron;
  reconcileCronSchedules(params: ReconcileCronParams): Promise<ReconcileCronResult> {
    return this.cron.reconcile(params);
  }
  scheduleCronOccurrence(params: ScheduleCronOccurrenceParams): Promise<ScheduleCronOccurrenceResult> {
    return this.cron.scheduleOccurrence(params);
  }
  listCronSchedules(): Promise<CronScheduleRecord[]> {
    return this.cron.list();
  }

  /** Progress, waitFor and reschedule statements (migration 18, `../sql/progress-wait-sql.ts`). */
  readonly progressSql: ProgressWaitStatements;
  private readonly waiting: PgWaitFor;

  /** What this store's `waitFor` callers cost so far: batched reads (fallback ones apart), finish notices heard, LISTENs made. */
  get waitStats(): WaitForStats {
    return this.waiting.stats;
  }

  /**
   * One UPDATE fenced by id + attempt + CLAIMED (`taskProgress`): only `progress` changes, a HOT
   * update (migration 18). @returns false for a stale attempt (nothing written)
   */
  async reportProgress(params: ProgressParams): Promise<boolean> {
    this.assertOpen();
    const p = validateProgressParams(params);
    const rows = await this.call(() => this.driver.query(this.progressSql.taskProgress, [p.id, p.attempt, p.text]));
    return rows.length === 1;
  }

  /**
   * One UPDATE fenced on SCHEDULED (`taskReschedule`) with a `scheduled` notice on the workers'
   * channel (none with `scheduleNotices: 'off'`); when it hit nothing, a read of the state tells
   * NOT_SCHEDULED (with it) from NOT_FOUND. A task seen SCHEDULED by that read was committed after
   * the UPDATE's snapshot: the UPDATE is tried once more.
   */
  async reschedule(id: TaskId, params: RescheduleParams): Promise<RescheduleResult> {
    this.assertOpen();
    const p = validateReschedule(id, params, { maxPayloadBytes: this.maxPayloadBytes, nowMs: this.clock?.now() ?? Date.now() });
    const channel = this.scheduleNotices === 'off' ? null : this.notifyChannel;
    return await this.call(async () => {
      for (let round = 0; round < 2; round++) {
        const [hit] = await this.driver.query(this.progressSql.taskReschedule, [
          this.nowParam(),
          p.id,
          p.dueAt === null ? null : p.dueAt.toISOString(),
          p.delayMs,
          p.payload !== null,
          p.payload?.text ?? null,
          channel,
        ]);
        if (hit) return { outcome: 'RESCHEDULED', dueAt: date(hit.dueatms) } as const;
        const [row] = await this.driver.query(this.progressSql.taskStateOf, [p.id]);
        if (!row) return { outcome: 'NOT_FOUND' } as const;
        if (row.state !== TaskState.SCHEDULED) return { outcome: 'NOT_SCHEDULED', state: row.state as TaskState } as const;
      }
      throw new StoreError(`reschedule of task ${p.id}: the task changed state during the call`, undefined);
    });
  }

  /**
   * Waits in-process (`./wait-for.ts`): LISTEN on the schema's finish channel over the driver's one
   * shared listening connection, batched reads, a batched fallback re-read every `waitFallbackMs`.
   */
  async waitFor(id: TaskId, options?: WaitForOptions): Promise<Task> {
    this.assertOpen();
    const w = validateWaitFor(id, options);
    return await this.waiting.wait(w.id, w.timeoutMs, w.signal);
  }

  /** Store operations (list, retry, prune, stats): see `./admin.ts`. Use the store's own methods. */
  private readonly admin: PostgresAdmin;
  /** Bulk operations by filter or ids (docs/contract.md#bulk-operations): see `./bulk.ts`. */
  private readonly bulk: PostgresBulk;
  /** Batches with a callback (`BatchStore`, docs/contract.md#batches): see `./batch.ts`. */
  private readonly batches: PostgresBatches;
  createBatch(params: { readonly callback: BatchCallback }): Promise<BatchId> {
    return this.batches.createBatch(params);
  }
  scheduleInBatch(batchId: BatchId, inputs: readonly ScheduleInput[]): Promise<ScheduledTask[]> {
    return this.batches.scheduleInBatch(batchId, inputs);
  }
  sealBatch(batchId: BatchId): Promise<BatchInfo> {
    return this.batches.sealBatch(batchId);
  }
  getBatch(batchId: BatchId): Promise<BatchInfo | null> {
    return this.batches.getBatch(batchId);
  }
  cancelMany(filter: BulkFilter, options?: BulkOptions): Promise<CancelManyResult> {
    return this.bulk.cancelMany(filter, options);
  }
  retryMany(filter: BulkFilter, options?: RetryManyOptions): Promise<RetryManyResult> {
    return this.bulk.retryMany(filter, options);
  }
  rescheduleMany(filter: BulkFilter, options: RescheduleManyOptions): Promise<RescheduleManyResult> {
    return this.bulk.rescheduleMany(filter, options);
  }
  deleteMany(filter: BulkFilter, options?: BulkOptions): Promise<DeleteManyResult> {
    return this.bulk.deleteMany(filter, options);
  }
  listTasks(params?: ListTasksParams): Promise<TaskPage> {
    return this.admin.listTasks(params);
  }
  retry(params: RetryParams): Promise<RetryResult> {
    return this.admin.retry(params);
  }
  prune(params: PruneParams): Promise<PruneResult> {
    return this.admin.prune(params);
  }
  stats(): Promise<StoreStats> {
    return this.admin.stats();
  }
  unclaimedKinds(params: UnclaimedKindsParams): Promise<UnclaimedKinds> {
    return this.admin.unclaimedKinds(params);
  }
  /**
   * Creates the missing day partitions of `task_history` from the store's now through `daysAhead`
   * more UTC days (default 7), for every terminal state (docs/contract.md#live-and-history). `migrate()`
   * and `prune({ retention })` run it; call it at least weekly (or prune with a retention daily) so
   * finished tasks never land in the default partition. @returns how many partitions it created
   * @throws ConnectionLostError, StoreClosedError, StoreError
   */
  ensureHistoryPartitions(daysAhead?: number): Promise<number> {
    return this.admin.ensureHistoryPartitions(daysAhead === undefined ? undefined : validatePositiveInt(daysAhead, 'daysAhead', 366));
  }
  /**
   * Dead rows and autovacuum's record for the `task` and `effect` tables and `task_history` (one entry summed over its partitions), and the oldest snapshot in
   * this database holding back their cleanup (docs/contract.md#vacuum). Reads statistics views only.
   * @throws StoreError with SQLSTATE 42P01 when the schema is not migrated, ConnectionLostError, StoreClosedError, StoreError
   */
  async vacuumHealth(): Promise<VacuumHealth> {
    this.assertOpen();
    return await this.call(async () => {
      const tables = await this.driver.query(HEALTH_STATEMENTS.tables, [this.schema]);
      // The statistics views list only tables that exist: none means the schema was never migrated.
      if (!tables.some((t) => t.tablename === 'task')) {
        throw new StoreError(`PostgreSQL error ${SqlState.UNDEFINED_TABLE}: relation "${this.schema}.task" does not exist (hint: call store.migrate() once for this schema)`, SqlState.UNDEFINED_TABLE);
      }
      const snapshot = await this.driver.query(HEALTH_STATEMENTS.oldestSnapshot, []);
      return vacuumHealthFrom(tables, snapshot, Date.now());
    });
  }

  /**
   * One task with its operator fields (failures, last error, retry links), or null when no task has
   * this id. Reads only; used by `postpone show`.
   * @throws ConnectionLostError, StoreClosedError
   */
  getTaskRecord(id: string): Promise<TaskRecord | null> {
    this.assertOpen();
    return this.admin.getRecord(id);
  }

  /**
   * Checks that the schema's migrations and this code fit together (README "Failure modes", version
   * skew; docs/guides/deploy.md): one read of the schema's `migration` table. Call it at a process's
   * start to refuse early; the store runs it by itself before its first `claim` or `reclaimExpired`
   * (once: kept after it passed, tried again after it failed), and after a statement fails with an
   * SQLSTATE that may mean another shape of schema (`SHAPE_SQLSTATES`: an undefined column or
   * table…), never on the way of a call that succeeds.
   * @returns the versions, when this code can run on the schema: at or past the code's version
   *   (`SCHEMA_VERSION`), and no applied migration asks for newer code (`minReader`)
   * @throws SchemaVersionError `SCHEMA_BEHIND` naming both versions when the schema lacks migrations
   *   this code relies on (version 0: never migrated): run `migrate()` first; `SCHEMA_TOO_NEW` when an
   *   applied migration needs newer code. ConnectionLostError, StoreClosedError, StoreError
   */
  async checkSchema(): Promise<SchemaCheck> {
    this.assertOpen();
    const found = await this.readSchemaVersion();
    const mismatch = this.schemaMismatch(found);
    if (mismatch !== undefined) throw mismatch;
    return { ...found, codeVersion: SCHEMA_VERSION };
  }

  /** The schema's newest migration and highest `min_reader` (0 and null for a schema never migrated). */
  private async readSchemaVersion(): Promise<{ schemaVersion: number; minReader: number | null }> {
    try {
      const [row] = await this.driver.query(this.sql.schemaVersion);
      const minReader = row?.minreader;
      return { schemaVersion: Number(row?.version ?? 0), minReader: minReader === null || minReader === undefined ? null : Number(minReader) };
    } catch (error) {
      const sqlState = sqlStateOf(error);
      if (sqlState === SqlState.UNDEFINED_TABLE || sqlState === SqlState.INVALID_SCHEMA_NAME) return { schemaVersion: 0, minReader: null };
      throw translateError(error, this.closed);
    }
  }

  /**
   * The {@link SchemaVersionError} when the schema `found` and this code do not fit: behind the
   * code, or an applied migration needs newer code; with `cause` (a statement that failed with a
   * shape SQLSTATE) also any schema ahead of the code, whatever its migrations declare.
   */
  private schemaMismatch(found: { schemaVersion: number; minReader: number | null }, cause?: unknown): SchemaVersionError | undefined {
    const versions = { schema: this.schema, ...found, codeVersion: SCHEMA_VERSION };
    const options = cause === undefined ? undefined : { cause };
    if (found.schemaVersion < MIN_SCHEMA_VERSION) return new SchemaVersionError('SCHEMA_BEHIND', { ...versions, codeVersion: MIN_SCHEMA_VERSION }, options);
    if ((found.minReader !== null && found.minReader > SCHEMA_VERSION) || (cause !== undefined && found.schemaVersion > SCHEMA_VERSION)) {
      return new SchemaVersionError('SCHEMA_TOO_NEW', versions, options);
    }
    return undefined;
  }

  /**
   * {@link checkSchema} once before the first claim or reclaim; a failed check is tried again next
   * time, and a passed one on a schema without the `pause` table after {@link PAUSE_SCHEMA_RECHECK_MS}.
   */
  private schemaReady(): Promise<unknown> {
    if (this.schemaChecked !== undefined && !this.pauseTable && performance.now() >= this.pauseRecheckAt) this.schemaChecked = undefined;
    if (this.schemaChecked === undefined) {
      const check = this.checkSchema().then((found) => {
        this.schemaVersionSeen = found.schemaVersion;
        this.pauseTable = found.schemaVersion >= PAUSE_MIGRATION_VERSION;
        this.pauseRecheckAt = performance.now() + PAUSE_SCHEMA_RECHECK_MS;
        return found;
      });
      this.schemaChecked = check;
      check.catch(() => {
        if (this.schemaChecked === check) this.schemaChecked = undefined;
      });
    }
    return this.schemaChecked;
  }

  /** The claim and peek statements for the schema as last checked: with the pause check from migration 15 on. */
  private claimSql(): Statements {
    if (this.pauseTable) return this.sql;
    this.beforePauseSql ??= statements(this.schema, { pause: false });
    return this.beforePauseSql;
  }

  /** Resolves when the schema has the `pause` table (checked afresh when the last check found none). */
  private async pauseReady(): Promise<void> {
    if (!this.pauseTable) this.schemaChecked = undefined;
    await this.schemaReady();
    if (!this.pauseTable) {
      throw new SchemaVersionError('SCHEMA_BEHIND', { schema: this.schema, schemaVersion: this.schemaVersionSeen, codeVersion: PAUSE_MIGRATION_VERSION, minReader: null });
    }
  }

  /**
   * `error` (from a driver) translated ({@link translateError}); when its SQLSTATE may mean another
   * shape of schema (`SHAPE_SQLSTATES`) and the schema's migrations differ from this code's, a
   * {@link SchemaVersionError} naming both versions instead, with `error` as its cause. A schema
   * never migrated keeps the translated error (42P01 with its hint to migrate).
   */
  private async translate(error: unknown): Promise<PostponeError> {
    const translated = translateError(error, this.closed);
    const sqlState = innerSqlStateOf(error);
    if (this.closed || sqlState === undefined || !SHAPE_SQLSTATES.has(sqlState)) return translated;
    try {
      const found = await this.readSchemaVersion();
      if (found.schemaVersion === 0) return translated;
      return this.schemaMismatch(found, error) ?? translated;
    } catch {
      return translated;
    }
  }

  /**
   * The SQL dialect of this store: the `dialect` option, else detected once from `pg_extension`
   * (`'citus'` when the Citus extension is installed in the database, see `sql/citus.ts`). A failed
   * detection is not kept: the next call reads again.
   * @throws ConnectionLostError, StoreClosedError, StoreError
   */
  dialect(): Promise<Dialect> {
    return this.call(() => this.driver.dialect());
  }

  /**
   * Creates the schema and applies missing migrations, in one transaction holding a
   * transaction-level advisory lock (PostgreSQL 17 §9.28.10): concurrent callers wait, then find the
   * versions applied. NOTICEs ("already exists") are silenced for the transaction.
   * @returns the versions this call applied (in order; empty when the schema was up to date) and the
   *   schema's version after it
   * @throws PostponeError MIGRATION_ERROR (cause: the driver error), ConnectionLostError, StoreClosedError
   */
  async migrate(): Promise<MigrateResult> {
    this.assertOpen();
    const s = this.sql;
    const done: number[] = [];
    const all = migrations(this.schema);
    try {
      const dialect = await this.dialect();
      await this.driver.transaction(async (query) => {
        await query(s.migrationQuiet);
        await query(s.migrationLock, [this.schema]);
        if (dialect === 'citus') for (const one of CITUS_BEFORE_SCHEMA) await query(one);
        await query(s.schemaCreate);
        // A schema made before (by hand, or on plain PostgreSQL before Citus) becomes one shard group now.
        if (dialect === 'citus' && (await query(CITUS_SCHEMA_DISTRIBUTED, [this.schema]))[0]?.distributed !== true) {
          await query(citusSchemaDistribute, [this.schema]);
        }
        await query(s.migrationTableCreate);
        await query(s.migrationTableUpgrade);
        const applied = new Set((await query(s.migrationVersions)).map((r) => Number(r.version)));
        for (const m of all) {
          if (applied.has(m.version)) continue;
          // One statement per query: Citus (and any extended-protocol path) refuses several in one.
          for (const one of migrationStatements(m, this.schema, dialect)) await query(one);
          await query(s.migrationInsert, [m.version, m.name]);
          if (m.minReader !== undefined) await query(s.migrationMinReader, [m.version, m.minReader]);
          done.push(m.version);
        }
        // History partitions from the store's now on (docs/contract.md#live-and-history): a store
        // whose clock runs elsewhere than the database's (tests) gets its own days, not the default partition.
        await query(this.admin.history.ensurePartitions, [this.nowParam(), HISTORY_DAYS_AHEAD]);
      });
      this.schemaChecked = undefined;
      return { applied: done, version: all.at(-1)?.version ?? 0 };
    } catch (error) {
      const translated = translateError(error, this.closed);
      if (translated instanceof StoreError) {
        throw new PostponeError('MIGRATION_ERROR', `migrating schema ${this.schema} failed: ${translated.message}`, { cause: error });
      }
      throw translated;
    }
  }

  /**
   * Puts this schema's future task ids in `first..last` (a shard group's range of a sharded front,
   * `../sharded/sharded-store.ts`): the `task` identity sequence moves up to `first` when it is
   * below; one transaction under the schema's migration lock. Call after {@link migrate}.
   * @throws PostponeError MIGRATION_ERROR when ids past `last` were already drawn (the schema belongs to
   *   another group or grew past its range); StoreClosedError, ConnectionLostError, StoreError
   */
  async reserveIdRange(first: bigint, last: bigint): Promise<void> {
    this.assertOpen();
    const rows = await this.call(() =>
      this.driver.transaction(async (query) => {
        await query(this.sql.migrationLock, [this.schema]);
        return await query(reserveIdRangeSql(this.schema), [first.toString()]);
      }),
    );
    const drawn = rows[0]?.last;
    if (typeof drawn === 'string' && BigInt(drawn) > last) {
      throw new PostponeError('MIGRATION_ERROR', `schema ${this.schema} already drew task id ${drawn}, past its shard group's range ${first}..${last}`);
    }
  }

  /** Schedules one task (see {@link scheduleMany}). @throws ValidationError naming the field (`kind`, `delayMs`…) */
  // Overloads: an ORM transaction ({@link SqlExecutor}) is accepted too, while `Store<Tx>` is still
  // inferred from the last signature as the driver's own `Tx` (createWorker({ store }) types `tx` by it).
  schedule(input: ScheduleInput, options?: ScheduleOptions<SqlExecutor>): Promise<ScheduledTask>;
  schedule(input: ScheduleInput, options?: ScheduleOptions<Tx>): Promise<ScheduledTask>;
  async schedule(input: ScheduleInput, options?: ScheduleOptions<Tx | SqlExecutor>): Promise<ScheduledTask> {
    this.assertOpen();
    const opts = validateScheduleOptions(options);
    const task = validateSchedule(input, { maxPayloadBytes: this.maxPayloadBytes, nowMs: this.clock?.now() ?? Date.now() });
    const [scheduled] = await this.insert([task], opts.tx, opts);
    return scheduled as ScheduledTask;
  }

  /**
   * Schedules many tasks in ONE INSERT … SELECT from `jsonb_to_recordset` (all or nothing), after
   * validating every input (a bad one throws `ValidationError` naming `tasks[i].field`; nothing is
   * sent). With `options.tx` the insert runs in the caller's open transaction and commits or rolls
   * back with it. Each new or replaced task sends a NOTIFY, delivered on commit. A keyed input whose
   * (kind, key) a live task holds is decided by `task_key_idx` in the same statement
   * (docs/contract.md#dedup-keys): `keep` returns the holder, `replace` rewrites it while SCHEDULED;
   * `fail` runs the statement in a transaction (a savepoint inside the caller's) and rolls it back.
   * Lock order (README "Failure modes", batches over the same tasks): keyed inputs first take a
   * transaction-level advisory lock per (kind, key), sorted, then the live holders' row locks in id
   * order; a batch with two keys or more takes the key locks in a statement of its own, so it runs
   * as a transaction (its own: BEGIN, key locks, insert, COMMIT; or the caller's `tx`, where the key
   * locks are held until it ends).
   * @returns `{ id, dueAt, created, replaced }` in input order
   * @throws DuplicateKeyError for `onConflict: 'fail'` naming the first conflicting input's holder (nothing written)
   */
  scheduleMany(inputs: readonly ScheduleInput[], options?: ScheduleOptions<SqlExecutor>): Promise<ScheduledTask[]>;
  scheduleMany(inputs: readonly ScheduleInput[], options?: ScheduleOptions<Tx>): Promise<ScheduledTask[]>;
  async scheduleMany(inputs: readonly ScheduleInput[], options?: ScheduleOptions<Tx | SqlExecutor>): Promise<ScheduledTask[]> {
    this.assertOpen();
    const opts = validateScheduleOptions(options);
    const tasks = validateScheduleMany(inputs, { maxPayloadBytes: this.maxPayloadBytes, nowMs: this.clock?.now() ?? Date.now() });
    if (tasks.length === 0) return [];
    return await this.insert(tasks, opts.tx, opts);
  }

  /**
   * The query function of the caller's transaction `tx`: the driver's native handle, or an
   * {@link SqlExecutor} (an ORM's transaction through `@postpone/postgres`). `checked` is false when
   * the store must still make sure the connection is inside a transaction block ({@link inTransaction}):
   * a postgres.js `tx` of `sql.begin()` is one by construction, and a `pg` client says so itself
   * (`getTransactionStatus()`, the ReadyForQuery status of its last reply: `T` or `E`).
   * @throws ValidationError NOT_IN_TRANSACTION `tx` for a pool or a top-level (or reserved) postgres.js `sql`;
   *   INVALID_OPTION `tx` for anything else that is no SQL client
   */
  private queryInTx(tx: unknown): { query: QueryFn; checked: boolean } {
    const native = this.driver.name === 'pg' ? 'a pg client inside your open transaction (not the pool)' : 'the transaction sql of sql.begin() (not the top-level sql)';
    const expected = `must be ${native}, or an SqlExecutor (@postpone/postgres) on an open transaction`;
    if (this.driver.isTx(tx)) {
      const status = transactionStatusOf(tx);
      return { query: (text, p) => this.driver.queryIn(tx, text, p), checked: this.driver.name !== 'pg' || status === 'T' || status === 'E' };
    }
    if (isPool(tx) || isPostgresJsSql(tx)) throw new ValidationError('NOT_IN_TRANSACTION', 'tx', `${expected}: got a ${isPool(tx) ? 'pool' : 'top-level or reserved sql'}, which would commit each statement on its own`);
    if (isSqlExecutor(tx)) {
      const status = transactionStatusOf(tx);
      return { query: this.driver.wrap(async (text, p) => [...(await tx.query(text, p ?? [])).rows]), checked: status === 'T' || status === 'E' };
    }
    throw new ValidationError('INVALID_OPTION', 'tx', expected);
  }

  /**
   * Runs `statement` (the `txCheck` lock, or the savepoint of a `'fail'` schedule) first in the
   * caller's transaction: outside a transaction block PostgreSQL refuses it with 25P01, before
   * anything was written, and the store throws NOT_IN_TRANSACTION instead of autocommitting.
   */
  private async inTransaction(query: QueryFn, statement: string): Promise<void> {
    try {
      await query(statement);
    } catch (error) {
      if (innerSqlStateOf(error) === SqlState.NO_ACTIVE_SQL_TRANSACTION) {
        throw new ValidationError('NOT_IN_TRANSACTION', 'tx', 'the connection is not inside a transaction (no BEGIN, or the transaction already ended): nothing was written', {
          cause: error,
        });
      }
      throw error;
    }
  }

  /**
   * The schedule of `tasks` (docs/contract.md#dedup-keys). `keep`, `replace` and unkeyed batches are
   * the one statement `taskInsertMany`; `fail` runs it in a transaction (a savepoint inside the
   * caller's); `debounce`, `queueBehind` and `throttle` with a keyed input run their statements of `./dedup-sql.ts`
   * around it in one transaction (the caller's, or their own).
   */
  private async insert(tasks: readonly NormalizedSchedule[], tx: unknown, options: NormalizedScheduleOptions): Promise<ScheduledTask[]> {
    const { onConflict } = options;
    const inTx = tx === undefined ? undefined : this.queryInTx(tx);
    // In the caller's transaction a notice must wait for its commit: only the statement's NOTIFY does.
    const after = inTx === undefined && this.scheduleNotices === 'coalesced';
    const now = this.clock?.now() ?? Date.now();
    const near = tasks.map((t) => (t.runAt === null ? t.delayMs : t.runAt.getTime() - now) <= NEAR_NOTICE_MS);
    const far = this.scheduleNotices !== 'each' && !near.includes(true);
    const channel = this.scheduleNotices === 'off' || after || far ? null : this.notifyChannel;
    const keyed = tasks.some((t) => t.key !== null);
    // Dependencies (docs/contract.md#dependencies): the insert, the edges and the holds in one transaction.
    const dependent = hasDependencies(tasks);
    if (dependent && (await this.call(() => this.driver.dialect())) === 'citus') {
      throw new ValidationError('DEPENDENCIES_UNSUPPORTED', 'after', 'the Citus dialect has no trigger to release dependents (docs/contract.md#dependencies): nothing was written');
    }
    // Two keys or more: the key locks first, in a statement of their own (`insertIn`), so a transaction.
    // A limit key needs none: `taskInsertManyKeyed` writes it in the insert itself.
    const ownTx = dependent || onConflict === 'fail' || locksKeys(tasks) || (keyed && (HANDS_OVER_KEY.includes(onConflict) || onConflict === 'throttle'));
    const run = async (query: QueryFn) => {
      const scheduled = await this.insertIn(query, tasks, options, channel);
      if (dependent) await linkDependencies(query, this.deps, tasks, scheduled, this.nowParam());
      return scheduled;
    };
    const autocommit = () => (ownTx ? this.driver.transaction((query) => run(query)) : run((text, p) => this.driver.query(text, p)));
    if (after) {
      const scheduled = await this.call(autocommit);
      this.notices.add(scheduled.filter((t, i) => (t.created || t.replaced) && near[i]));
      return scheduled;
    }
    return await this.call(async () => {
      if (inTx === undefined) return await autocommit();
      const { query, checked } = inTx;
      if (onConflict !== 'fail') {
        if (!checked) await this.inTransaction(query, this.sql.txCheck);
        return await run(query);
      }
      // The savepoint is the check too: outside a transaction block it fails with 25P01.
      await this.inTransaction(query, this.sql.scheduleSavepoint);
      try {
        const scheduled = await run(query);
        await query(this.sql.scheduleReleaseSavepoint);
        return scheduled;
      } catch (error) {
        if (error instanceof DuplicateKeyError) await query(this.sql.scheduleRollbackToSavepoint);
        throw error;
      }
    });
  }

  /**
   * The statements of one schedule on `query` (inside a transaction whenever there is more than one):
   * `debounce` and `queueBehind` first hand the keys of CLAIMED holders over (`releaseKeys`); `throttle` locks each
   * key's throttle row (`throttleGate`), leaves the refused inputs out of the insert and records the
   * tasks it created (`throttleRecord`). Results in input order.
   */
  private async insertIn(query: QueryFn, tasks: readonly NormalizedSchedule[], options: NormalizedScheduleOptions, channel: string | null): Promise<ScheduledTask[]> {
    const { onConflict, throttleMs } = options;
    const slot = (t: { kind: string; key: string | null }) => JSON.stringify([t.kind, t.key]);
    const keys = JSON.stringify(tasks.filter((t) => t.key !== null).map((t) => ({ kind: t.kind, key: t.key })));
    const hasKeys = keys !== '[]';
    // Two keys or more: their advisory locks, sorted, before any statement looks for their holders, so
    // the insert's snapshot sees every holder and locks them in id order (`taskKeyLocks`, README "Failure modes").
    if (locksKeys(tasks)) await query(this.sql.taskKeyLocks, [keys]);
    if (HANDS_OVER_KEY.includes(onConflict) && hasKeys) await query(this.dedup.releaseKeys, [keys]);
    const refused = new Map<string, ScheduledTask>();
    if (onConflict === 'throttle' && hasKeys) {
      for (const row of await query(this.dedup.throttleGate, [this.nowParam(), keys])) {
        if (row.throttled === true) {
          refused.set(slot({ kind: String(row.kind), key: String(row.key) }), { id: String(row.taskid), dueAt: date(row.dueatms), created: false, replaced: false, throttled: true });
        }
      }
    }
    const open = refused.size === 0 ? tasks : tasks.filter((t) => t.key === null || !refused.has(slot(t)));
    const inserted = open.length === 0 ? [] : await this.insertRows(query, open, onConflict, channel);
    if (onConflict === 'throttle' && hasKeys) {
      const made = open.flatMap((t, i) => {
        const s = inserted[i] as ScheduledTask;
        return t.key !== null && s.created ? [{ kind: t.kind, key: t.key, id: s.id, dueAt: s.dueAt.toISOString(), throttleMs }] : [];
      });
      if (made.length > 0) await query(this.dedup.throttleRecord, [this.nowParam(), JSON.stringify(made)]);
    }
    if (refused.size === 0) return inserted;
    let next = 0;
    return tasks.map((t) => (t.key !== null && refused.has(slot(t)) ? (refused.get(slot(t)) as ScheduledTask) : (inserted[next++] as ScheduledTask)));
  }

  /** `taskInsertMany` for `tasks`: `replace` for `replace` and `debounce`, `keep` otherwise; `fail` throws DuplicateKeyError on the first input it did not create. */
  private async insertRows(query: QueryFn, tasks: readonly NormalizedSchedule[], onConflict: OnConflict, channel: string | null): Promise<ScheduledTask[]> {
    const limitKeyed = tasks.some((t) => t.limitKey !== null);
    const json = `[${tasks
      .map(
        (t) =>
          `{"kind":${JSON.stringify(t.kind)},"key":${JSON.stringify(t.key)},"payload":${t.payloadText},"delayMs":${t.delayMs},` +
          `"runAt":${t.runAt === null ? 'null' : JSON.stringify(t.runAt.toISOString())},"maxAttempts":${t.maxAttempts},` +
          `"traceContext":${JSON.stringify(t.traceContext)},"retry":${JSON.stringify(t.retry)},"queue":${JSON.stringify(t.queue)},"priority":${t.priority}` +
          (limitKeyed ? `,"limitKey":${JSON.stringify(t.limitKey)}}` : '}'),
      )
      .join(',')}]`;
    const mode = onConflict === 'replace' || onConflict === 'debounce' ? 'replace' : 'keep';
    // A batch with a limit key (docs/contract.md#per-key-concurrency) writes it in the same statement.
    const rows = await query(limitKeyed ? this.sql.taskInsertManyKeyed : this.sql.taskInsertMany, [this.nowParam(), json, channel, mode]);
    if (rows.length !== tasks.length) throw new StoreError(`scheduleMany inserted ${rows.length} rows for ${tasks.length} tasks`, undefined);
    const taken = onConflict === 'fail' ? rows.findIndex((r) => r.created !== true) : -1;
    const input = tasks[taken];
    if (input !== undefined) throw new DuplicateKeyError(input.kind, input.key as string, String(rows[taken]?.id));
    return rows.map((r) => ({ id: String(r.id), dueAt: date(r.dueatms), created: r.created === true, replaced: r.replaced === true }));
  }

  /**
   * One statement: SCHEDULED → CANCELLED (`CANCELLED`, moved to history, with a NOTIFY) or CLAIMED → cancel requested
   * (`REQUESTED`). When it hit no row, a fresh read tells the terminal state apart (terminal states
   * never change, so the read is safe): DONE/DEAD → `TOO_LATE`, CANCELLED → `ALREADY_CANCELLED`,
   * none → `NOT_FOUND`. With `options.tx` (the driver's native handle or an {@link SqlExecutor}) both
   * run in the caller's transaction: the row stays locked and the NOTIFY waits until it commits;
   * a rollback undoes the cancel.
   * @throws ValidationError INVALID_TASK_ID for a malformed id, INVALID_OPTION `tx` for a handle that is not a transaction
   */
  cancel(id: TaskId, options?: CancelOptions<SqlExecutor>): Promise<CancelOutcome>;
  cancel(id: TaskId, options?: CancelOptions<Tx>): Promise<CancelOutcome>;
  async cancel(id: TaskId, options?: CancelOptions<Tx | SqlExecutor>): Promise<CancelOutcome> {
    this.assertOpen();
    const { tx } = validateCancelOptions(options);
    const taskId = parseTaskId(id);
    const inTx = tx === undefined ? undefined : this.queryInTx(tx);
    const query: QueryFn = inTx === undefined ? (text, p) => this.driver.query(text, p) : inTx.query;
    return await this.call(async () => {
      if (inTx !== undefined && !inTx.checked) await this.inTransaction(query, this.sql.txCheck);
      // Two rounds at most: a row first seen live by the read was inserted after the UPDATE's
      // snapshot; the second UPDATE then sees it (it is committed) and either hits or finds it terminal.
      for (let round = 0; round < 2; round++) {
        const [hit] = await query(this.sql.taskCancel, [this.nowParam(), taskId, this.notifyChannel]);
        if (hit) return hit.state === TaskState.CANCELLED ? 'CANCELLED' : 'REQUESTED';
        const [row] = await query(this.sql.taskGetForOutcome, [taskId]);
        if (!row) return 'NOT_FOUND';
        if (row.state === TaskState.CANCELLED) return 'ALREADY_CANCELLED';
        if (row.state === TaskState.DONE || row.state === TaskState.DEAD) return 'TOO_LATE';
      }
      throw new StoreError(`cancel of task ${taskId}: the task changed state during the call`, undefined);
    });
  }

  /**
   * Claims up to `limit` (1..10 000) due tasks in one UPDATE with FOR UPDATE SKIP LOCKED; each claim
   * increments `attempt` and sets the lease to `clock_timestamp() + leaseMs`.
   * Only tasks of `queue` (default `'default'`) and, when given, of `kinds` (docs/contract.md#queues).
   * With `kindLimits` naming a kind it may take, ONE transaction instead: `kindCapLock` (advisory
   * locks per capped kind, sorted), then `taskClaimCapped` (docs/contract.md#kind-concurrency); without,
   * the single statement as before. With a rate limit on its queue or on a kind it may take
   * (docs/contract.md#rate-limits), ONE transaction: `kindCapLock` when capped, `rateLimitLock`
   * (the limits' rows FOR UPDATE, their rooms), then `taskClaimLimited` (claims and logs the claims),
   * or nothing more when everything is held back; after a short limited claim, `rateLimitRooms` tells
   * whether everything is held back now. Either way `onRateLimited` is then called. With a
   * key-limited kind in reach (docs/contract.md#per-key-concurrency; which kinds: a cache read at most
   * once a second), ONE transaction too: the cap locks, `keyLimitLock` (advisory locks per key-limited
   * kind, sorted), the rate-limit rows when limited, then `taskClaimKeyed` (per-key rooms, fair order).
   * With a kind of per-key rate limits in reach (docs/contract.md#per-key-rate-limits; a cache read at
   * most once a second), the same transaction with `taskClaimKeyRated` (the keys' logs read and
   * written under the same advisory locks), at most every 10 s `keyRateLogPrune` after the locks,
   * and `keyRateHeld` after a short claim naming only such kinds (then `onRateLimited`).
   * @returns the claimed tasks in claim order (priority desc, due time, id); `claimedAt` is the statement's `now()`
   */
  async claim(params: ClaimParams): Promise<ClaimedTask[]> {
    this.assertOpen();
    checkCallParams('claim', params);
    const owner = validateOwner(params.owner);
    const limit = validatePositiveInt(params.limit, 'limit', MAX_CLAIM_LIMIT);
    const leaseMs = validatePositiveMs(params.leaseMs, 'leaseMs');
    const { queue, kinds } = validateSelection(params);
    const caps = validateKindLimits(params.kindLimits);
    const kindsJson = kinds === null ? null : JSON.stringify(kinds);
    const claimParams = [this.nowParam(), owner, leaseMs, limit, queue, kindsJson];
    // The capped kinds this claim may take, sorted: the advisory locks' order (docs/contract.md#kind-concurrency).
    const capped = caps === null ? [] : [...caps.keys()].filter((kind) => kinds === null || kinds.includes(kind)).sort();
    const onRateLimited = validateOnRateLimited(params.onRateLimited);
    await this.schemaReady();
    // Rate limits (docs/contract.md#rate-limits) that apply to this claim: from a cache read at most once a second.
    const limited = await this.rateLimits.applicable(queue, kinds, performance.now());
    // Key-limited kinds (docs/contract.md#per-key-concurrency) this claim may take, sorted: from a cache read at most once a second.
    const keyConc = await this.keyLimits.applicable(kinds, performance.now());
    // Kinds with a per-key rate limit (docs/contract.md#per-key-rate-limits), the same way; walked per key as the key-limited ones.
    const rated = await this.keyRateLimits.applicable(kinds, performance.now());
    const keyed = rated.length === 0 ? keyConc : [...new Set([...keyConc, ...rated])].sort();
    const capsJson = () => JSON.stringify(Object.fromEntries(capped.map((kind) => [kind, caps!.get(kind)!])));
    let held: RateLimited | null = null;
    const sql = this.claimSql();
    const rows = await this.call(() =>
      capped.length === 0 && limited.length === 0 && keyed.length === 0
        ? this.driver.query(sql.taskClaim, claimParams)
        : this.driver.transaction(async (query) => {
            // Lock order in every claimer: kind caps, then key-limited kinds, then rate-limit rows, each sorted.
            if (capped.length > 0) await query(sql.kindCapLock, [this.schema, JSON.stringify(capped)]);
            if (keyed.length > 0) await query(this.keyLimits.sql.keyLimitLock, [this.schema, JSON.stringify(keyed)]);
            if (rated.length > 0) await this.keyRateLimits.pruneIfDue(query, this.nowParam(), rated, performance.now());
            if (limited.length === 0 && keyed.length === 0) return await query(sql.taskClaimCapped, [...claimParams, capsJson()]);
            const plan =
              limited.length === 0
                ? { limit, kindRooms: {}, queueLimited: null, held: null }
                : await this.rateLimits.plan(query, this.nowParam(), limited, queue, kinds, limit);
            held = plan.held;
            if (held !== null || plan.limit === 0) return [];
            const args = [this.nowParam(), owner, leaseMs, plan.limit, queue, kindsJson, capped.length > 0 ? capsJson() : '{}', JSON.stringify(plan.kindRooms), plan.queueLimited];
            const claimed =
              keyed.length === 0
                ? await query(this.rateLimits.sql.taskClaimLimited, args)
                : await query(rated.length === 0 ? this.keyLimits.sql.taskClaimKeyed : this.keyLimits.sql.taskClaimKeyRated, [...args, JSON.stringify(keyed)]);
            // Short: did this claim use up the room? Then the caller may sleep until it reopens.
            if (limited.length > 0 && claimed.length < limit) held = await this.rateLimits.heldAfter(query, this.nowParam(), limited, queue, kinds);
            // Per-key rate limits: when the claim named only kinds with one, whether every due task of them is held back by its key's window.
            if (held === null && claimed.length < limit && kinds !== null && rated.length > 0 && kinds.every((kind) => rated.includes(kind))) {
              held = await this.keyRateLimits.heldAfter(query, this.nowParam(), kinds, queue);
            }
            return claimed;
          }),
    );
    if (held !== null && onRateLimited !== undefined) notifyRateLimited(onRateLimited, held);
    return rows
      .map((r) => ({
        id: String(r.id),
        kind: String(r.kind),
        payload: parseJson(r.payload),
        attempt: Number(r.attempt),
        failures: Number(r.failures),
        maxAttempts: Number(r.maxattempts),
        dueAt: date(r.dueatms),
        leaseUntil: date(r.leaseuntilms),
        claimedAt: date(r.claimedatms),
        priority: Number(r.priority),
        ...traceContextOf(r.tracecontext),
        ...retryOf(r.retry),
      }))
      .sort((a, b) => b.priority - a.priority || a.dueAt.getTime() - b.dueAt.getTime() || compareTaskIds(a.id, b.id));
  }

  /** Renews the lease to `clock_timestamp() + leaseMs` if CLAIMED, same attempt, not cancel-requested, not expired. */
  async extend(params: ExtendParams): Promise<boolean> {
    this.assertOpen();
    checkCallParams('extend', params);
    const id = parseTaskId(params.id);
    const attempt = validateAttempt(params.attempt);
    const leaseMs = validatePositiveMs(params.leaseMs, 'leaseMs');
    const rows = await this.call(() => this.driver.query(this.sql.taskExtend, [this.nowParam(), id, attempt, leaseMs]));
    return rows.length === 1;
  }

  /** The `extendMany` statement, built on first use. */
  private renewSql: RenewStatements | undefined;

  /**
   * ONE statement (`renewStatements().taskExtendMany`): renews to `clock_timestamp() + leaseMs` every
   * item still CLAIMED with its attempt, not cancel-requested, not expired. @returns renewed or not, in input order
   */
  async extendMany(params: ExtendManyParams): Promise<boolean[]> {
    this.assertOpen();
    const { items, leaseMs } = validateExtendMany(params);
    if (items.length === 0) return [];
    this.renewSql ??= renewStatements(this.schema);
    const json = `[${items.map((i) => `{"id":${JSON.stringify(i.id)},"attempt":${i.attempt}}`).join(',')}]`;
    const rows = await this.call(() => this.driver.query((this.renewSql as RenewStatements).taskExtendMany, [this.nowParam(), json, leaseMs]));
    const renewed = items.map(() => false);
    for (const r of rows) renewed[Number(r.ord) - 1] = true;
    return renewed;
  }

  /**
   * The fenced move to DONE (delete from `task` + insert into `task_history` keeping `owner` in
   * `finished_by`, one statement, docs/contract.md#live-and-history) — in autocommit when there is no
   * `work`, else in ONE transaction with `work(tx)` run only if it hit a row, both committing
   * together. No effect row (migration 13, docs/contract.md#completion). If it missed: CLAIMED + same attempt + cancel requested →
   * CANCELLED (`CANCELLED_BEFORE_COMMIT`); else a read of the row: DONE with this attempt → `DONE`
   * (a retry after a lost reply), CANCELLED with this attempt and cancel requested →
   * `CANCELLED_BEFORE_COMMIT`, anything else → `REJECTED_STALE`.
   *
   * @throws whatever `work` threw, unchanged, after the rollback (the task stays CLAIMED, none of `work`'s writes),
   *   unless it is a failure of the connection or the driver (a connection error, SQLSTATE class
   *   08, 25, 26, 40, 53, 57, 58 or 42P05, e.g. 26000 "prepared statement does not exist" behind a
   *   transaction pooler): that is translated like the store's own (`ConnectionLostError`,
   *   `StoreError` with the SQLSTATE…, the original as `cause`) — it is not the handler's failure.
   */
  async complete(params: CompleteParams<Tx>): Promise<CompleteOutcome> {
    this.assertOpen();
    checkCallParams('complete', params);
    const id = parseTaskId(params.id);
    const attempt = validateAttempt(params.attempt);
    const owner = validateOwner(params.owner);
    const { text: resultText } = validateJson(params.result === undefined ? null : params.result, 'result', this.maxPayloadBytes, 'INVALID_RESULT');
    const work = params.work;
    if (work !== undefined && typeof work !== 'function') throw new ValidationError('INVALID_OPTION', 'work', 'must be a function');
    const keep = validateKeep(params.keep);
    const s = this.sql;
    if (work === undefined) {
      // Nothing of the handler's: one statement in autocommit — the fenced move to history, or the
      // fenced delete alone (DONE not kept). A miss is resolved after it, as in the transaction.
      return await this.call(async () => {
        const now = this.nowParam();
        const done = keep ? await this.driver.query(s.taskCompleteFenced, [now, id, attempt, resultText, owner]) : await this.dropOnClock(now, (query) => query(s.taskCompleteDrop, [id, attempt]));
        return done.length === 1 ? 'DONE' : await this.missedCompleteOutcome(this.driver.query, now, id, attempt, keep);
      });
    }
    return await this.transactionWithWork(async (query, runWork) => {
      const now = this.nowParam();
      if (!keep && now !== null) await query(storeNowSet, [now]);
      const done = keep ? await query(s.taskCompleteFenced, [now, id, attempt, resultText, owner]) : await query(s.taskCompleteDrop, [id, attempt]);
      if (done.length !== 1) return await this.missedCompleteOutcome(query, now, id, attempt, keep);
      await runWork(work);
      return 'DONE';
    });
  }

  /**
   * ONE statement for the common case (`taskCompleteManyFenced`; `taskCompleteManyDrop` when every
   * item has `keep: false`, both in one transaction for a batch mixing the two): the fenced move to DONE of every
   * item whose attempt is current (each history row keeping its `owner`), committing together; row locks taken in id
   * order. Only the items it missed (rare) are then resolved one by one, each as {@link complete}
   * resolves a miss: cancel requested → CANCELLED (`CANCELLED_BEFORE_COMMIT`), else a read (DONE
   * again for a committed attempt, else `REJECTED_STALE`). A batch with any `work` is ONE transaction:
   * the same statements, then each hit item's `work(tx)` in input order (group commit of
   * same-transaction writes: one commit for the batch instead of one per task); its misses are
   * resolved after the commit, as without work.
   * @returns outcomes in input order; [] for an empty batch (nothing sent)
   * @throws ValidationError naming `items[i].field` before anything is sent; whatever a `work` threw,
   *   unchanged, after the rollback (every item stays CLAIMED), unless it is a failure of the connection
   *   or the driver, translated as in {@link complete}
   */
  async completeMany(items: readonly CompleteManyItem<Tx>[]): Promise<CompleteOutcome[]> {
    this.assertOpen();
    const valid = validateCompleteMany<Tx>(items, this.maxPayloadBytes);
    if (valid.length === 0) return [];
    const keptIndex = valid.flatMap((item, idx) => (item.keep ? [idx] : []));
    const keptJson = (): string =>
      `[${keptIndex
        .map((idx) => {
          const i = valid[idx] as (typeof valid)[number];
          return `{"id":${JSON.stringify(i.id)},"attempt":${i.attempt},"owner":${JSON.stringify(i.owner)},"result":${i.resultText}}`;
        })
        .join(',')}]`;
    // DONE not kept (docs/contract.md#done-not-kept): the items with keep false are deleted by
    // `taskCompleteManyDrop`, which locks every item's row in id order; a mixed batch then completes
    // the kept ones with `taskCompleteManyFenced` in the same transaction (their rows already locked).
    const dropJson = (): string => `[${valid.map((i) => `{"id":${JSON.stringify(i.id)},"attempt":${i.attempt},"keep":${i.keep}}`).join(',')}]`;
    /** The fenced moves of the batch in one transaction (`query`): the drop first, then the kept. @returns the hit items' indexes */
    const moveAll = async (query: QueryFn, now: string | null): Promise<Set<number>> => {
      const hit = new Set<number>();
      if (keptIndex.length < valid.length) {
        if (now !== null) await query(storeNowSet, [now]);
        for (const r of await query(this.sql.taskCompleteManyDrop, [dropJson()])) hit.add(Number(r.ord) - 1);
      }
      if (keptIndex.length > 0) for (const r of await query(this.sql.taskCompleteManyFenced, [now, keptJson()])) hit.add(keptIndex[Number(r.ord) - 1] as number);
      return hit;
    };
    const outcomesOf = async (query: QueryFn, now: string | null, hit: ReadonlySet<number>): Promise<CompleteOutcome[]> => {
      const outcomes: CompleteOutcome[] = [];
      for (const [idx, item] of valid.entries()) {
        outcomes.push(hit.has(idx) ? 'DONE' : await this.missedCompleteOutcome(query, now, item.id, item.attempt, item.keep));
      }
      return outcomes;
    };
    if (valid.some((i) => i.work !== undefined)) return await this.completeManyWithWork(valid, moveAll, outcomesOf);
    return await this.call(async () => {
      const now = this.nowParam();
      let hit: Set<number>;
      if (keptIndex.length === valid.length) {
        // Every item kept (the default): one statement, as before; `ord` counts the kept items, here all.
        hit = new Set((await this.driver.query(this.sql.taskCompleteManyFenced, [now, keptJson()])).map((r) => Number(r.ord) - 1));
      } else if (keptIndex.length === 0) {
        hit = new Set((await this.dropOnClock(now, (query) => query(this.sql.taskCompleteManyDrop, [dropJson()]))).map((r) => Number(r.ord) - 1));
      } else {
        hit = await this.driver.transaction((query) => moveAll(query, now));
      }
      return await outcomesOf(this.driver.query, now, hit);
    });
  }

  /**
   * {@link completeMany} of a batch with `work`: the fenced moves and each hit item's `work(tx)`
   * (input order) in ONE transaction, as {@link complete} runs one item's; then the misses. A work's
   * error rolls it all back and is rethrown unchanged; a NOTIFY queue that filled at commit (54000,
   * the finish notice) is tried once more, as in complete.
   */
  private async completeManyWithWork(
    valid: readonly NormalizedCompleteItem<Tx>[],
    moveAll: (query: QueryFn, now: string | null) => Promise<Set<number>>,
    outcomesOf: (query: QueryFn, now: string | null, hit: ReadonlySet<number>) => Promise<CompleteOutcome[]>,
  ): Promise<CompleteOutcome[]> {
    const now = this.nowParam();
    const hit = await this.transactionWithWork(async (query, runWork) => {
      const moved = await moveAll(query, now);
      for (const [idx, item] of valid.entries()) if (item.work !== undefined && moved.has(idx)) await runWork(item.work);
      return moved;
    });
    // The misses (rare) are resolved after the commit, in autocommit, as without work: inside the
    // transaction each would lock its row while the batch still holds the rows it moved — out of id
    // order, a deadlock with a batch locking in id order (a cancelMany; evidence batch_deadlock_workers).
    return await this.call(() => outcomesOf(this.driver.query, now, hit));
  }

  /**
   * One transaction of the store's statements (`body`) around the handler's writes, each run through
   * `runWork` — the path shared by {@link complete} and {@link completeMany} with `work`:
   * - after `body`, when any work ran, the probe {@link WORK_LEFT_TX_ALIVE} (a work that swallowed
   *   its own statement's error must not let the COMMIT answer ROLLBACK silently);
   * - a NOTIFY queue that filled at commit (54000, the finish notice; the transaction rolled back
   *   whole, works included) is tried once more, as {@link call} does; not after a work's own failure;
   * - a work's own error is rethrown unchanged, unless it is a failure of the connection or the driver
   *   (`isDriverLevelError`); every other error is translated (`ConnectionLostError`, `StoreError`…).
   * @returns what `body` returned, once committed
   */
  private async transactionWithWork<T>(body: (query: QueryFn, runWork: (work: (tx: Tx) => Promise<void>) => Promise<void>) => Promise<T>): Promise<T> {
    let workFailure: { error: unknown } | undefined;
    const run = () =>
      this.driver.transaction<T>(async (query, tx) => {
        let worked = false;
        const value = await body(query, async (work) => {
          worked = true;
          try {
            await work(tx);
          } catch (error) {
            workFailure = { error };
            throw error;
          }
        });
        if (worked) await query(WORK_LEFT_TX_ALIVE, []);
        return value;
      });
    try {
      try {
        return await run();
      } catch (error) {
        if (workFailure !== undefined || !isNotifyQueueFull(error)) throw error;
        return await run();
      }
    } catch (error) {
      if (workFailure !== undefined && error === workFailure.error && !isDriverLevelError(error)) throw error;
      throw await this.translate(error);
    }
  }

  /**
   * What a complete whose fenced move hit nothing reports: CLAIMED + same attempt + cancel
   * requested → CANCELLED (`CANCELLED_BEFORE_COMMIT`); else a read of the row: DONE with this attempt
   * → `DONE` (a retry after a lost reply), CANCELLED with this attempt and cancel requested →
   * `CANCELLED_BEFORE_COMMIT`, anything else → `REJECTED_STALE`; with `keep` false, no row in the
   * live table nor history → `NOT_FOUND` (finished without history, docs/contract.md#done-not-kept).
   */
  private async missedCompleteOutcome(query: QueryFn, now: string | null, id: TaskId, attempt: number, keep: boolean): Promise<CompleteOutcome> {
    const cancelled = await query(this.sql.taskCancelRequestedToCancelled, [now, id, attempt]);
    if (cancelled.length === 1) return 'CANCELLED_BEFORE_COMMIT';
    const [row] = await query(this.sql.taskGetForOutcome, [id]);
    if (row === undefined && !keep) return 'NOT_FOUND';
    if (row && row.attempt === attempt) {
      if (row.state === TaskState.DONE) return 'DONE';
      if (row.state === TaskState.CANCELLED && row.cancelrequested === true) return 'CANCELLED_BEFORE_COMMIT';
    }
    return 'REJECTED_STALE';
  }

  /**
   * One UPDATE fenced by id + attempt + CLAIMED, counting one failure: cancel requested → CANCELLED;
   * failures reach max attempts → DEAD; else SCHEDULED due at now + `backoffMs` (with a NOTIFY). `error` is kept in `last_error`
   * (2 000 characters at most). No row → `REJECTED_STALE`.
   */
  async fail(params: FailParams): Promise<FailResult> {
    this.assertOpen();
    checkCallParams('fail', params);
    const id = parseTaskId(params.id);
    const attempt = validateAttempt(params.attempt);
    const error = errorText(params.error);
    const backoff = validateNonNegativeMs(params.backoffMs, 'backoffMs');
    const { retryable = true, maxAttempts = null } = validateFailRetry(params);
    const [row] = await this.call(() =>
      this.driver.query(this.sql.taskFail, [this.nowParam(), id, attempt, error, backoff, this.notifyChannel, retryable, maxAttempts]),
    );
    if (!row) return { outcome: 'REJECTED_STALE' };
    if (row.state === TaskState.SCHEDULED) return { outcome: 'SCHEDULED', dueAt: date(row.dueatms) };
    return { outcome: row.state === TaskState.DEAD ? 'DEAD' : 'CANCELLED' };
  }

  /**
   * Puts the attempt off without counting a failure, in one UPDATE fenced by id + attempt + CLAIMED
   * (`taskSnooze`): cancel requested → CANCELLED, else SCHEDULED due at `dueAt` or the store's now +
   * `delayMs` (with a NOTIFY), as core `transition('snooze')`. No row → `REJECTED_STALE`.
   */
  async snooze(params: SnoozeParams): Promise<SnoozeResult> {
    this.assertOpen();
    const p = validateSnoozeParams(params, this.clock?.now() ?? Date.now());
    const dueAt = p.dueAt === null ? null : p.dueAt.toISOString();
    const [row] = await this.call(() => this.driver.query(this.sql.taskSnooze, [this.nowParam(), p.id, p.attempt, dueAt, p.delayMs, this.notifyChannel]));
    if (!row) return { outcome: 'REJECTED_STALE' };
    return row.state === TaskState.SCHEDULED ? { outcome: 'SCHEDULED', dueAt: date(row.dueatms) } : { outcome: 'CANCELLED' };
  }

  /**
   * Hands the current attempt back (graceful shutdown) in one UPDATE fenced by id + attempt +
   * CLAIMED: cancel requested → CANCELLED, else SCHEDULED due now (with a NOTIFY). The lease is not
   * checked and no failure is counted, as core `transition('release')`. No row → `REJECTED_STALE`.
   */
  async release(params: ReleaseParams): Promise<ReleaseOutcome> {
    this.assertOpen();
    checkCallParams('release', params);
    const id = parseTaskId(params.id);
    const attempt = validateAttempt(params.attempt);
    const [row] = await this.call(() => this.driver.query(this.sql.taskRelease, [this.nowParam(), id, attempt, this.notifyChannel]));
    if (!row) return 'REJECTED_STALE';
    return row.state === TaskState.CANCELLED ? 'CANCELLED' : 'SCHEDULED';
  }

  /**
   * ONE conditional UPDATE over expired leases (`lease_until < now`), at most `limit` (default
   * 1 000, max 10 000), FOR UPDATE SKIP LOCKED, in autocommit (one round trip). The same statement
   * first tries the schema's reclaim lock with `pg_try_advisory_xact_lock` (`taskReclaimExpired`):
   * one caller per schema reclaims at a time, and a caller that finds the lock held returns `[]` at
   * once without scanning (docs/contract.md#connection-budget). Each task is reclaimed once.
   * @returns what each task moved to, by id (`[]` when another caller holds the reclaim lock)
   */
  async reclaimExpired(params: ReclaimParams = {}): Promise<ReclaimedTask[]> {
    this.assertOpen();
    checkCallParams('reclaimExpired', params);
    const limit = params.limit === undefined ? DEFAULT_RECLAIM_LIMIT : validatePositiveInt(params.limit, 'limit', MAX_RECLAIM_LIMIT);
    await this.schemaReady();
    const rows = await this.call(() => this.driver.query(this.sql.taskReclaimExpired, [this.nowParam(), limit, this.notifyChannel]));
    return rows.map((r) => ({ id: String(r.id), attempt: Number(r.attempt), outcome: r.state as ReclaimOutcome }));
  }

  /** SCHEDULED tasks of the queue (and kinds) due by now + `withinMs`, by due time (index `task_claim_idx`), and the store's now. */
  async peekDue(params: PeekParams): Promise<PeekResult> {
    this.assertOpen();
    checkCallParams('peekDue', params);
    const withinMs = validateNonNegativeMs(params.withinMs, 'withinMs');
    const limit = params.limit === undefined ? DEFAULT_PEEK_LIMIT : validatePositiveInt(params.limit, 'limit', MAX_PEEK_LIMIT);
    const { queue, kinds } = validateSelection(params);
    const kindsJson = kinds === null ? null : JSON.stringify(kinds);
    await this.schemaReady();
    const sql = this.claimSql();
    const rows = await this.call(() => this.driver.query(sql.taskPeekDue, [this.nowParam(), withinMs, limit, queue, kindsJson]));
    // The statement always answers its clock row first. A result without it is not the statement's
    // (a driver that mixed up a result after a connection was cut: postgres.js 3.4.9 can answer
    // `[null, row]` on a reconnected connection): refused, never turned into an Invalid Date.
    if (rows.length === 0 || rows.some((r) => r === null || typeof r !== 'object') || rows[0]?.nowms === null || rows[0]?.nowms === undefined) {
      throw new StoreError('peekDue: the answer has no clock row (a malformed driver result; try again)', undefined, { transient: true });
    }
    const now = date(rows[0]?.nowms);
    const tasks = rows.filter((r) => r.id !== null).map((r) => ({ id: String(r.id), dueAt: date(r.dueatms) }));
    return { now, tasks, ...(rows[0]?.paused === true ? { paused: true } : {}) };
  }

  /** @throws ValidationError INVALID_TASK_ID for a malformed id */
  async getTask(id: TaskId): Promise<Task | null> {
    this.assertOpen();
    const taskId = parseTaskId(id);
    const [row] = await this.call(() => this.driver.query(this.sql.taskGet, [taskId]));
    if (!row) return null;
    const task = toTask(row);
    // Held by dependencies (docs/contract.md#dependencies): one more read, only for such a task.
    if (task.state !== TaskState.SCHEDULED || task.dueAt.getTime() !== HELD_DUE_AT_MS) return task;
    const [held] = await this.call(() => this.driver.query(this.deps.dependencyWaiting, [taskId]));
    return held ? { ...task, dueAt: date(held.heldduems), waitingFor: Number(held.waitingfor) } : task;
  }

  /** One read of the DONE history row (`completionGet`, migration 13). @throws ValidationError INVALID_TASK_ID for a malformed id */
  async getCompletion(id: TaskId): Promise<Completion | null> {
    this.assertOpen();
    const taskId = parseTaskId(id);
    const [row] = await this.call(() => this.driver.query(this.sql.completionGet, [taskId]));
    if (!row) return null;
    return { taskId: String(row.taskid), attempt: Number(row.attempt), worker: row.worker === null ? null : String(row.worker), finishedAt: date(row.finishedatms) };
  }

  async countByState(): Promise<StateCounts> {
    this.assertOpen();
    const rows = await this.call(() => this.driver.query(this.sql.taskCountByState));
    const counts = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<TaskState, number>;
    for (const r of rows) counts[r.state as TaskState] = Number(r.n);
    return counts;
  }

  /** The store's clock: the injected clock's time, else the database's `now()`. */
  async now(): Promise<Date> {
    this.assertOpen();
    const [row] = await this.call(() => this.driver.query(this.sql.clockNow, [this.nowParam()]));
    return date(row?.nowms);
  }

  /**
   * Calls `listener` when the pool loses an idle connection (`pg` emits it; postgres.js reconnects
   * silently and never calls it). @returns a function that removes the listener
   */
  onConnectionError(listener: (error: unknown) => void): () => void {
    return this.driver.onConnectionError?.(listener) ?? (() => {});
  }

  /**
   * Listens for {@link TaskNotice}s on this store's channel (a dedicated connection; reconnects and
   * listens again after a lost connection, then calls `options.onReconnect`). Worker presence notices
   * go to `options.onWorker`, pause and resume notices (docs/contract.md#pause-and-resume) to `options.onPause`.
   *
   * Before it returns, it checks that notifications arrive: it sends a probe NOTIFY through the
   * store's ordinary connections and waits up to {@link LISTEN_PROBE_TIMEOUT_MS} for it on the
   * listening one. A listener that would get nothing (e.g. LISTEN through a transaction pooler)
   * is stopped and the call throws, so a caller never believes it listens when it does not. While
   * the cluster's NOTIFY queue is at least {@link NOTICE_QUEUE_LIMIT} full no probe is sent (no
   * notice is, README "Failure modes") and the listener is returned unchecked.
   *
   * @returns a function that stops listening
   * @throws ValidationError INVALID_OPTION `listenConnectionString` when `pooler` is `'transaction'`
   *   and no direct connection was given; StoreError when the probe never arrived;
   *   ConnectionLostError / ConnectionError when the connection failed
   */
  async listen(
    onNotice: (notice: TaskNotice) => void,
    options?: ListenOptions & { readonly onWorker?: (notice: WorkerNotice) => void; readonly onPause?: (notice: PauseNotice) => void },
  ): Promise<Unlisten> {
    this.assertOpen();
    if (this.pooler === 'transaction' && !this.driver.directListen) {
      throw new ValidationError(
        'INVALID_OPTION',
        'listenConnectionString',
        "LISTEN does not work through a transaction pooler: give a direct connection string for it (or use polling discovery)",
      );
    }
    const probe = `{"op":"probe","nonce":"${Math.random().toString(36).slice(2)}${Date.now().toString(36)}"}`;
    let probed: () => void = () => {};
    const arrived = new Promise<void>((resolve) => {
      probed = resolve;
    });
    const unlisten = await this.call(() =>
      this.driver.listen(
        this.notifyChannel,
        (payload) => {
          if (payload === probe) {
            probed();
            return;
          }
          const notice = parseTaskNotice(payload);
          if (notice) onNotice(notice);
          else if (payload.startsWith('{"op":"scheduledMany"')) {
            for (const each of parseScheduledMany(payload) ?? []) onNotice(each);
          } else {
            const pause = options?.onPause ? parsePauseNotice(payload) : null;
            if (pause) options?.onPause?.(pause);
            else if (options?.onWorker) {
              const worker = parseWorkerNotice(payload);
              if (worker) options.onWorker(worker);
            }
          }
        },
        options,
      ),
    );
    let timer: NodeJS.Timeout | undefined;
    try {
      const [sent] = await this.call(() => this.driver.query(NOTIFY_PROBE, [this.notifyChannel, probe]));
      // The NOTIFY queue is at least half full (a listener elsewhere stopped reading): no probe can be
      // sent, and no notice is sent either until it drains, so there is nothing to check yet. LISTEN
      // itself succeeded; the worker finds tasks by its fallback poll meanwhile (issue #26 item 4).
      if (typeof sent?.sent !== 'boolean') return unlisten;
      const heard = await Promise.race([
        arrived.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), LISTEN_PROBE_TIMEOUT_MS);
        }),
      ]);
      if (!heard) {
        throw new StoreError(
          `LISTEN on ${this.notifyChannel} receives no notifications (a probe sent through the store did not arrive within ${LISTEN_PROBE_TIMEOUT_MS} ms): ` +
            `is a transaction pooler in between? Set pooler: 'transaction' and listenConnectionString, or use polling discovery`,
          undefined,
        );
      }
      return unlisten;
    } catch (error) {
      await unlisten().catch(() => {});
      throw translateError(error, this.closed);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Announces a hybrid worker on this store's channel (one NOTIFY through the pool, delivered to
   * every listener including the sender's; docs/contract.md#discovery-sharing). Listeners get it
   * through `listen`'s `onWorker` option. Left out, without an error, while the NOTIFY queue is at
   * least {@link NOTICE_QUEUE_LIMIT} full.
   * @param notice `worker` (1..200 characters) and `group` (1..200) name the worker and what it claims; `hello` asks the others to answer
   * @throws ValidationError INVALID_OPTION for a bad `worker` or `group`; ConnectionLostError / ConnectionError / StoreError from the database
   */
  async announceWorker(notice: { readonly worker: string; readonly group: string; readonly hello: boolean }): Promise<void> {
    this.assertOpen();
    for (const field of ['worker', 'group'] as const) {
      const value: unknown = notice?.[field];
      if (typeof value !== 'string' || value.length === 0 || value.length > 200) throw new ValidationError('INVALID_OPTION', field, 'must be a string of 1..200 characters');
    }
    await this.call(() => this.driver.query(NOTIFY_PROBE, [this.notifyChannel, workerNoticePayload({ worker: notice.worker, group: notice.group, hello: notice.hello === true })]));
  }

  /** Stops listeners and ends the pool if the store created it. Idempotent; later calls throw StoreClosedError. */
  async close(): Promise<void> {
    this.closed = true;
    this.closing ??= this.waiting.close().then(() => this.driver.close());
    await this.closing;
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreClosedError();
  }

  /**
   * Runs a DONE-not-kept DELETE (`drop`): in autocommit without a store clock (production: unchanged);
   * with one, in a transaction that first hands the clock to the triggers (migration 22,
   * `STORE_NOW_SETTING`), since that DELETE carries no time of its own.
   */
  private async dropOnClock(now: string | null, drop: (query: QueryFn) => Promise<Row[]>): Promise<Row[]> {
    if (now === null) return await drop(this.driver.query);
    return await this.driver.transaction(async (query) => {
      await query(storeNowSet, [now]);
      return await drop(query);
    });
  }

  private nowParam(): string | null {
    return this.clock === undefined ? null : new Date(this.clock.now()).toISOString();
  }

  private async call<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      if (!isNotifyQueueFull(error)) throw await this.translate(error);
    }
    // The NOTIFY queue filled between the statement's look at it and its commit. 54000 for the queue
    // is raised only at commit (PostgreSQL 17 NOTIFY), so this op's own transaction rolled back and
    // wrote nothing; run again, its statements now see a queue past NOTICE_QUEUE_LIMIT and send no notice.
    try {
      return await op();
    } catch (error) {
      throw await this.translate(error);
    }
  }
}
