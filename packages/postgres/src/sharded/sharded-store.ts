/**
 * One logical Postpone deployment over many shard groups (issue #25; docs/scale.md#one-deployment-over-many-shard-groups):
 * a front that is itself a {@link Store} over N {@link PostgresStore}s, one Postpone schema each, in
 * ONE database — on Citus with schema-based sharding each schema is one shard group on one node, so
 * every statement a group's store sends is routed whole to that node (Citus 13 "Schema-based sharding").
 *
 * - **Ids say where a task lives.** Group `g` draws its ids from `g·2⁵⁶ … (g+1)·2⁵⁶ − 1`
 *   (`../sql/shard-sql.ts`, set by {@link ShardedStore.migrate}); the group of an id is `id >> 56`,
 *   computed with `BigInt`, exact past 2⁵³. Every call by id (getTask, cancel, extend, complete, fail,
 *   release, snooze, reportProgress, reschedule, waitFor, retry, getCompletion) reaches one group;
 *   an id of no group is answered by group 0, which has no such row (null / NOT_FOUND as for any unknown id).
 * - **Placement.** A task with a dedup key goes to group `fnv1a32(key) mod N` (UTF-8 bytes), so the
 *   same key always reaches the same group and its dedup stays exact there (docs/contract.md#dedup-keys);
 *   a task without a key goes round-robin. A `scheduleMany` batch whose tasks all land in one group
 *   (keyless tasks join the group of the batch's first key) is one statement there, all or nothing;
 *   one that spans groups is validated whole first (nothing written on bad input), then sent as one
 *   statement per group: all or nothing per group, and across groups only inside the caller's `tx`.
 *   A keyless schedule (or an all-keyless batch) outside a caller's `tx` whose group's Citus worker
 *   node is down (`./node-down.ts`: the coordinator refused it, nothing written) goes to the next
 *   group instead; a keyed one stays in its key's group and fails with the typed error.
 * - **Claims** visit the groups in turn, starting one further each call, until `limit` is filled. A
 *   group that answered empty is skipped for `emptyBackoffMs` (local monotonic time: a polling pace,
 *   never a task decision) unless a notice of that group arrives, this front schedules into it, or a
 *   `peekDue` lists its tasks; a claim whose groups are all skipped still asks the one skipped longest,
 *   so an idle worker sends one claim per poll, not N.
 * - **Per group, exact; globally, N ×.** Per-kind caps (`kindLimits`) and rate limits are exact inside
 *   each group (its advisory lock, its rate-limit rows); a cap or limit given to the front applies
 *   to every group, so the deployment-wide bound is N × the figure (give `limit / N` for a global one).
 * - **Cron** schedules live in one group (`cronGroup`, default 0): exactly-once as in one store.
 *
 * `tx` options are passed to the one group a call reaches; since every group is a schema of the same
 * database, a caller's transaction can write to any of them (on Citus, the coordinator commits a
 * transaction that touched two nodes with two-phase commit).
 */
import {
  type BulkFilter,
  type BulkOptions,
  type CancelManyResult,
  type CancelOptions,
  type CancelOutcome,
  type ClaimedTask,
  type ClaimParams,
  type CompleteManyItem,
  type CompleteOutcome,
  type CompleteParams,
  type Completion,
  type ConnectionBudget,
  type CronScheduleRecord,
  type CronStore,
  compareTaskIds,
  type DeleteManyResult,
  encodeListCursor,
  type ExtendManyParams,
  type ExtendParams,
  type FailParams,
  type FailResult,
  type ListTasksParams,
  type MigrateResult,
  type PausedEntry,
  type PauseOptions,
  type PauseTarget,
  type PeekParams,
  type PeekResult,
  type ProgressParams,
  type PruneParams,
  type PruneResult,
  parseTaskId,
  type RateLimited,
  type RateLimitInput,
  type RateLimitRecord,
  type RateLimitScope,
  type RateLimitStore,
  type KeyConcurrencyInput,
  type KeyConcurrencyRecord,
  type KeyLimitStore,
  type ReclaimedTask,
  type ReclaimParams,
  type ReconcileCronParams,
  type ReconcileCronResult,
  type ReleaseOutcome,
  type ReleaseParams,
  type RescheduleManyOptions,
  type RescheduleManyResult,
  type RescheduleParams,
  type RescheduleResult,
  type RetryManyOptions,
  type RetryManyResult,
  type RetryParams,
  type RetryResult,
  type ScheduleCronOccurrenceParams,
  type ScheduleCronOccurrenceResult,
  type ScheduledTask,
  type ScheduleInput,
  type ScheduleOptions,
  type SnoozeParams,
  type SnoozeResult,
  type StateCounts,
  type Store,
  type StoreStats,
  type Task,
  type TaskId,
  type TaskPage,
  type TaskRecord,
  type UnclaimedKind,
  type UnclaimedKinds,
  UNCLAIMED_DUE_COUNT_CAP,
  validateUnclaimedKindsParams,
  checkCallParams,
  validateOnRateLimited,
  type UnclaimedKindsParams,
  ValidationError,
  validateListParams,
  validateCompleteMany,
  validateExtendMany,
  validateScheduleMany,
  validateScheduleOptions,
  type WaitForOptions,
} from '@postpone/core';
import type { TaskNotice } from '../sql/notice.js';
import { MAX_SHARD_GROUPS, SHARD_ID_BITS } from '../sql/shard-sql.js';
import type { ListenOptions, Unlisten } from '../store/driver.js';
import type { PostgresStore } from '../store/store.js';
import { isRemoteNodeDown } from './node-down.js';

/** Default of {@link ShardedStoreOptions.emptyBackoffMs}. */
export const DEFAULT_EMPTY_BACKOFF_MS = 1_000;

export interface ShardedStoreOptions<Tx> {
  /**
   * One store per shard group, 1..128, in a fixed order: the index of a store is its group index,
   * written into the ids it draws, so it must never change for a deployment (add groups at the end).
   * Each a distinct schema of ONE database (a Citus coordinator, or plain PostgreSQL).
   */
  readonly stores: readonly PostgresStore<Tx>[];
  /** How long a group that answered a claim empty is skipped, whole ms 0..60 000 (default 1 000; 0: never skipped). */
  readonly emptyBackoffMs?: number;
  /** The group holding cron schedules and their tasks (default 0). */
  readonly cronGroup?: number;
}

/** The first and last id of group `g`'s range (group 0 starts at 1). */
export function shardIdRange(group: number): { readonly first: bigint; readonly last: bigint } {
  const g = BigInt(group);
  return { first: g === 0n ? 1n : g << BigInt(SHARD_ID_BITS), last: ((g + 1n) << BigInt(SHARD_ID_BITS)) - 1n };
}

/** The group index written in a task id (`id >> 56`), exact for every `bigint` id. @throws ValidationError INVALID_TASK_ID */
export function shardOfId(id: TaskId): number {
  return Number(BigInt(parseTaskId(id)) >> BigInt(SHARD_ID_BITS));
}

/** FNV-1a, 32 bits, over the UTF-8 bytes of `text`: stable across processes, platforms and Node.js versions. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** Adds the numbers of `b` into a copy of `a`, field by field (nested objects too): merges the counts of per-group results. */
function addCounts<T>(a: T, b: T): T {
  if (typeof a === 'number' && typeof b === 'number') return (a + b) as T;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a)) return a ?? b;
  const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
  for (const [k, v] of Object.entries(b as Record<string, unknown>)) out[k] = k in out ? addCounts(out[k], v) : v;
  return out as T;
}

/**
 * The connections the front offers a worker (core `ConnectionBudget`, checked by `@postpone/worker`),
 * from its groups' budgets. Pools the stores created are each their own: their `max` add up. Pools
 * the caller gave (`shared`) are counted once, as ONE pool under every group (the usual set-up: one
 * pool, N schemas; distinct given pools are then under-counted, which refuses a worker too large
 * rather than letting it exhaust a pool). The front's `listen` holds one connection per group where
 * a group's listen holds a pool connection (`pg`); the budget's `listen` stands for one, so `max` is
 * lowered by the other N − 1. Undefined when a group reports none.
 */
function frontBudget(budgets: readonly (ConnectionBudget | undefined)[]): ConnectionBudget | undefined {
  if (!budgets.every((b): b is ConnectionBudget => b !== undefined)) return undefined;
  const shared = budgets.some((b) => b.shared);
  const listens = budgets.filter((b) => b.listen).length;
  const max = (shared ? Math.max(...budgets.map((b) => b.max)) : budgets.reduce((n, b) => n + b.max, 0)) - Math.max(0, listens - 1);
  return { max: Math.max(1, max), listen: listens > 0, shared };
}

/** True when `input` names a dedup key (its group is then fixed by the key's hash). */
function hasKey(input: ScheduleInput): boolean {
  return typeof (input as { key?: unknown } | null)?.key === 'string';
}

/**
 * The front over N shard groups (see the module docstring). Implements the core {@link Store}, the
 * cron and rate-limit capabilities, and `listen` (every group's notices, to one callback).
 */
export class ShardedStore<Tx> implements Store<Tx>, CronStore, RateLimitStore, KeyLimitStore {
  readonly name: string;
  readonly connectionBudget: ConnectionBudget | undefined;
  readonly stores: readonly PostgresStore<Tx>[];
  private readonly emptyBackoffMs: number;
  private readonly cronGroup: number;
  /** Round-robin counters: the next group for a keyless schedule, and the first group the next claim asks. */
  private nextPlace: number;
  private nextClaim = 0;
  /** Per group: `performance.now()` until which claims skip it (0: not skipped), and when it was marked. */
  private readonly emptyUntil: number[];
  private readonly emptySince: number[];

  /** @throws ValidationError INVALID_OPTION for no stores, more than 128, two of one schema, or a bad `emptyBackoffMs`/`cronGroup` */
  constructor(options: ShardedStoreOptions<Tx>) {
    const stores = options.stores;
    if (!Array.isArray(stores) || stores.length === 0 || stores.length > MAX_SHARD_GROUPS) {
      throw new ValidationError('INVALID_OPTION', 'stores', `must be 1..${MAX_SHARD_GROUPS} PostgreSQL stores`);
    }
    if (new Set(stores.map((s) => s.schema)).size !== stores.length) throw new ValidationError('INVALID_OPTION', 'stores', 'must each use a schema of their own');
    const backoff = options.emptyBackoffMs ?? DEFAULT_EMPTY_BACKOFF_MS;
    if (!Number.isInteger(backoff) || backoff < 0 || backoff > 60_000) throw new ValidationError('INVALID_OPTION', 'emptyBackoffMs', 'must be whole ms 0..60000');
    const cronGroup = options.cronGroup ?? 0;
    if (!Number.isInteger(cronGroup) || cronGroup < 0 || cronGroup >= stores.length) throw new ValidationError('INVALID_OPTION', 'cronGroup', `must be a group index 0..${stores.length - 1}`);
    this.stores = [...stores];
    this.name = stores[0]!.name;
    this.connectionBudget = frontBudget(stores.map((s) => s.connectionBudget));
    this.emptyBackoffMs = backoff;
    this.cronGroup = cronGroup;
    this.nextPlace = Math.floor(Math.random() * stores.length);
    this.emptyUntil = stores.map(() => 0);
    this.emptySince = stores.map(() => 0);
  }

  /** Number of shard groups. */
  get groups(): number {
    return this.stores.length;
  }

  /** The group a task with this dedup key is placed in: `fnv1a32(key) mod N`. */
  groupOfKey(key: string): number {
    return fnv1a32(key) % this.stores.length;
  }

  /** The group an id names, or 0 for an id of no group of this front. @throws ValidationError INVALID_TASK_ID */
  groupOfId(id: TaskId): number {
    const g = shardOfId(id);
    return g < this.stores.length ? g : 0;
  }

  /**
   * The store of the group an id names. A malformed id (or params that are not an object, see
   * {@link byParams}) goes to group 0, whose store refuses it with its own ValidationError naming the
   * field, before any I/O: the front never answers bad input differently from one store.
   */
  private byId(id: TaskId): PostgresStore<Tx> {
    try {
      return this.stores[this.groupOfId(id)]!;
    } catch {
      return this.stores[0]!;
    }
  }

  /** {@link byId} of `params.id`, for the calls taking one parameter object (extend, complete, fail…). */
  private byParams(params: unknown): PostgresStore<Tx> {
    return this.byId((typeof params === 'object' && params !== null ? (params as { id?: unknown }).id : undefined) as TaskId);
  }

  /** Marks group `g` as worth a claim again (a notice, a schedule, a peek found tasks). */
  private wake(g: number): void {
    this.emptyUntil[g] = 0;
  }

  private place(input: ScheduleInput): number {
    const key = (input as { key?: unknown }).key;
    if (typeof key === 'string') return this.groupOfKey(key);
    const g = this.nextPlace % this.stores.length;
    this.nextPlace = (g + 1) % this.stores.length;
    return g;
  }

  /**
   * Migrates every group's schema (in order), then puts each group's ids in its range.
   * @returns what group 0's migrate applied (the groups run the same migrations) and the version
   * @throws PostponeError MIGRATION_ERROR (also when a schema already drew ids past its group's range), ConnectionLostError, StoreClosedError
   */
  async migrate(): Promise<MigrateResult> {
    let first: MigrateResult | undefined;
    for (const [g, store] of this.stores.entries()) {
      const result = await store.migrate();
      first ??= result;
      const { first: lo, last: hi } = shardIdRange(g);
      await store.reserveIdRange(lo, hi);
    }
    return first!;
  }

  async schedule(input: ScheduleInput, options?: ScheduleOptions<Tx>): Promise<ScheduledTask> {
    // Dependencies (docs/contract.md#dependencies) are kept per group: a task with `after` goes to the
    // group of its first dependency id; a dependency in another group is DEPENDENCY_NOT_FOUND there.
    const first = Array.isArray(input?.after) ? input.after.map((e) => (typeof e === 'object' && e !== null && 'id' in e ? e.id : e)).find((e) => typeof e === 'string' || typeof e === 'number') : undefined;
    const g = first === undefined ? this.place(input) : Math.max(0, this.stores.indexOf(this.byId(String(first))));
    const task = await this.placed(g, first === undefined && !hasKey(input) && options?.tx === undefined, (s) => s.schedule(input, options));
    return task;
  }

  /**
   * Runs `write` on group `g`. When `movable` (keyless, no `after`, no caller's `tx`: the task has no
   * fixed home) and the group's worker node is down (`isRemoteNodeDown`: nothing was written), the
   * next groups are tried in turn, each once; else the error is the caller's.
   */
  private async placed<T>(g: number, movable: boolean, write: (store: PostgresStore<Tx>) => Promise<T>): Promise<T> {
    for (let tried = 0; ; tried += 1) {
      const at = (g + tried) % this.stores.length;
      try {
        const out = await write(this.stores[at]!);
        this.wake(at);
        return out;
      } catch (error) {
        if (!movable || tried + 1 >= this.stores.length || !isRemoteNodeDown(error)) throw error;
      }
    }
  }

  async scheduleMany(inputs: readonly ScheduleInput[], options?: ScheduleOptions<Tx>): Promise<ScheduledTask[]> {
    if (!Array.isArray(inputs) || inputs.length === 0) return await this.stores[0]!.scheduleMany(inputs, options);
    const keyed = inputs.map((input) => (input !== null && typeof input === 'object' && typeof (input as { key?: unknown }).key === 'string' ? this.groupOfKey((input as { key: string }).key) : -1));
    const home = keyed.find((g) => g >= 0) ?? this.place({} as ScheduleInput);
    const groups = keyed.map((g) => (g >= 0 ? g : home));
    const distinct = [...new Set(groups)];
    if (distinct.length === 1) {
      const keyless = keyed.every((k) => k < 0) && options?.tx === undefined && !inputs.some((input) => Array.isArray((input as { after?: unknown } | null)?.after));
      return await this.placed(home, keyless, (s) => s.scheduleMany(inputs, options));
    }
    // Spans groups: refuse bad input before any group writes (each store validates again, with its own limits).
    if (inputs.some((input) => Array.isArray((input as { after?: unknown } | null)?.after) && ((input as { after: unknown[] }).after.length > 0))) {
      throw new ValidationError('INVALID_DEPENDENCY', 'tasks', 'a batch with after must land in one group (dependencies are kept per group): nothing was written');
    }
    validateScheduleOptions(options);
    validateScheduleMany(inputs, { maxPayloadBytes: Math.min(...this.stores.map((s) => s.maxPayloadBytes)) });
    const out: ScheduledTask[] = new Array(inputs.length);
    await Promise.all(
      distinct.map(async (g) => {
        const idx = groups.flatMap((x, i) => (x === g ? [i] : []));
        const done = await this.stores[g]!.scheduleMany(
          idx.map((i) => inputs[i]!),
          options,
        );
        for (const [j, i] of idx.entries()) out[i] = done[j]!;
        this.wake(g);
      }),
    );
    return out;
  }

  cancel(id: TaskId, options?: CancelOptions<Tx>): Promise<CancelOutcome> {
    return this.byId(id).cancel(id, options);
  }

  /**
   * Claims up to `limit` tasks across the groups, in turn (see the module docstring). `onRateLimited`
   * is called once, with the soonest `reopensInMs`, only when every group asked was held back by a
   * rate limit and the claim took fewer than `limit`.
   */
  async claim(params: ClaimParams): Promise<ClaimedTask[]> {
    // The call's shape and callback checked here, before the front copies `params` per group: a
    // non-object would otherwise reach a group as `{ limit }` (refused as a missing owner, not as
    // `params`), and a non-function `onRateLimited` would be wrapped into a function. Each group's
    // store checks the rest before its I/O, the first group asked before any group claims.
    checkCallParams('claim', params);
    validateOnRateLimited(params.onRateLimited);
    const n = this.stores.length;
    const start = this.nextClaim % n;
    this.nextClaim = (start + 1) % n;
    const now = performance.now();
    const order = Array.from({ length: n }, (_, i) => (start + i) % n);
    let asked = order.filter((g) => this.emptyUntil[g]! <= now);
    if (asked.length === 0) {
      // Every group answered empty lately: ask the one skipped longest, so a claim still reaches the database.
      asked = [order.reduce((a, b) => (this.emptySince[b]! < this.emptySince[a]! ? b : a))];
    }
    const out: ClaimedTask[] = [];
    let limited = 0;
    let reopensInMs = Number.POSITIVE_INFINITY;
    const userLimited = params.onRateLimited;
    for (const [i, g] of asked.entries()) {
      const remaining = (params.limit ?? 0) - out.length;
      if (i > 0 && remaining <= 0) break;
      let heldBack = false;
      const got = await this.stores[g]!.claim({
        ...params,
        limit: remaining,
        ...(userLimited === undefined
          ? {}
          : {
              onRateLimited: (r: RateLimited) => {
                heldBack = true;
                reopensInMs = Math.min(reopensInMs, r.reopensInMs);
              },
            }),
      });
      if (heldBack) limited += 1;
      if (got.length === 0 && !heldBack && this.emptyBackoffMs > 0) {
        this.emptyUntil[g] = performance.now() + this.emptyBackoffMs;
        this.emptySince[g] = performance.now();
      } else if (got.length > 0) this.wake(g);
      out.push(...got);
    }
    if (userLimited !== undefined && limited === asked.length && out.length < params.limit) {
      try {
        userLimited({ reopensInMs });
      } catch {
        // What the callback throws is dropped (ClaimParams.onRateLimited).
      }
    }
    return out;
  }

  extend(params: ExtendParams): Promise<boolean> {
    return this.byParams(params).extend(params);
  }

  /** Items grouped by the group their id names, one call per group, answers put back in input order. */
  private async perGroup<I, R>(items: readonly I[], idOf: (item: I) => TaskId, run: (store: PostgresStore<Tx>, items: I[]) => Promise<R[]>): Promise<R[]> {
    const groups = items.map((item) => {
      try {
        return this.groupOfId(idOf(item));
      } catch {
        return 0; // a malformed id: the group-0 store refuses it with its own ValidationError naming the field
      }
    });
    const distinct = [...new Set(groups)];
    if (distinct.length <= 1) return await run(this.stores[distinct[0] ?? 0]!, [...items]);
    const out: R[] = new Array(items.length);
    // Every group settles before a failure is thrown: a caller that then retries item by item (a
    // completeMany whose work threw) never races a group's transaction still running.
    const settled = await Promise.allSettled(
      distinct.map(async (g) => {
        const idx = groups.flatMap((x, i) => (x === g ? [i] : []));
        const done = await run(
          this.stores[g]!,
          idx.map((i) => items[i]!),
        );
        for (const [j, i] of idx.entries()) out[i] = done[j]!;
      }),
    );
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    return out;
  }

  extendMany(params: ExtendManyParams): Promise<boolean[]> {
    // Every item validated first, so a bad one is named by its index in the caller's batch and no group writes.
    const items = validateExtendMany(params).items;
    if (items.length === 0) return this.stores[0]!.extendMany(params);
    return this.perGroup(
      items,
      (item) => item.id,
      (store, mine) => store.extendMany({ ...params, items: mine }),
    );
  }

  complete(params: CompleteParams<Tx>): Promise<CompleteOutcome> {
    return this.byParams(params).complete(params);
  }

  /**
   * Each shard group's items through its own store's completeMany, concurrently. Items with `work`:
   * each group's batch is its own transaction on its node, so a `work` that throws rolls back its
   * group's items only (those of other groups may have committed); completing each item alone again
   * is safe (DONE again, its work not run twice).
   */
  completeMany(items: readonly CompleteManyItem<Tx>[]): Promise<CompleteOutcome[]> {
    // Every item validated first (as extendMany).
    validateCompleteMany(items, Math.min(...this.stores.map((s) => s.maxPayloadBytes)));
    if (items.length === 0) return this.stores[0]!.completeMany(items);
    return this.perGroup(
      items,
      (item) => item.id,
      (store, mine) => store.completeMany(mine),
    );
  }

  fail(params: FailParams): Promise<FailResult> {
    return this.byParams(params).fail(params);
  }

  release(params: ReleaseParams): Promise<ReleaseOutcome> {
    return this.byParams(params).release(params);
  }

  snooze(params: SnoozeParams): Promise<SnoozeResult> {
    return this.byParams(params).snooze(params);
  }

  /** Every group's expired leases, at most `limit` in all (asked of the groups in order). */
  async reclaimExpired(params: ReclaimParams = {}): Promise<ReclaimedTask[]> {
    const out: ReclaimedTask[] = [];
    for (const store of this.stores) {
      const left = params.limit === undefined ? undefined : params.limit - out.length;
      if (left !== undefined && left <= 0 && out.length > 0) break;
      out.push(...(await store.reclaimExpired(left === undefined ? params : { ...params, limit: left })));
    }
    return out;
  }

  /** Every group's due tasks merged by due time then id, at most `limit`; `paused` only when every group says so. */
  async peekDue(params: PeekParams): Promise<PeekResult> {
    const results = await Promise.all(this.stores.map((s) => s.peekDue(params)));
    for (const [g, r] of results.entries()) if (r.tasks.length > 0) this.wake(g);
    const tasks = results
      .flatMap((r) => r.tasks)
      .sort((a, b) => a.dueAt.getTime() - b.dueAt.getTime() || compareTaskIds(a.id, b.id))
      .slice(0, params.limit ?? Number.POSITIVE_INFINITY);
    const paused = results.every((r) => r.paused === true);
    return { now: results[0]!.now, tasks, ...(paused ? { paused: true as const } : {}) };
  }

  reportProgress(params: ProgressParams): Promise<boolean> {
    return this.byParams(params).reportProgress(params);
  }

  reschedule(id: TaskId, params: RescheduleParams): Promise<RescheduleResult> {
    return this.byId(id).reschedule(id, params);
  }

  waitFor(id: TaskId, options?: WaitForOptions): Promise<Task> {
    return this.byId(id).waitFor(id, options);
  }

  getTask(id: TaskId): Promise<Task | null> {
    return this.byId(id).getTask(id);
  }

  getCompletion(id: TaskId): Promise<Completion | null> {
    return this.byId(id).getCompletion(id);
  }

  /** One task with its operator fields, from the group its id names (`postpone show`, the dashboard). @throws ValidationError INVALID_TASK_ID, ConnectionLostError, StoreClosedError */
  getTaskRecord(id: TaskId): Promise<TaskRecord | null> {
    return this.byId(id).getTaskRecord(id);
  }

  async countByState(): Promise<StateCounts> {
    const all = await Promise.all(this.stores.map((s) => s.countByState()));
    return all.reduce((a, b) => addCounts(a, b));
  }

  /**
   * One page over every group: each group's page from the same cursor, merged in id order (ids are
   * globally ordered: the group is in their high bits), cut to `limit`; the cursor is the last id kept.
   */
  async listTasks(params?: ListTasksParams): Promise<TaskPage> {
    const p = validateListParams(params);
    const pages = await Promise.all(this.stores.map((s) => s.listTasks(params)));
    const sign = p.order === 'oldest' ? 1 : -1;
    const merged = pages.flatMap((page) => page.tasks).sort((a, b) => sign * compareTaskIds(a.id, b.id));
    const tasks = merged.slice(0, p.limit);
    const more = merged.length > p.limit || pages.some((page) => page.nextCursor !== null);
    return { tasks, nextCursor: more && tasks.length > 0 ? encodeListCursor(p.order, tasks.at(-1)!.id) : null };
  }

  retry(params: RetryParams): Promise<RetryResult> {
    return this.byParams(params).retry(params);
  }

  async prune(params: PruneParams): Promise<PruneResult> {
    const all = [];
    for (const store of this.stores) all.push(await store.prune(params));
    return all.reduce((a, b) => addCounts(a, b));
  }

  /** A bulk call on every group (by `ids`: on the groups the ids name, each its own), counts added up. */
  private async bulk<R>(filter: BulkFilter, run: (store: PostgresStore<Tx>, filter: BulkFilter) => Promise<R>): Promise<R> {
    let targets: [PostgresStore<Tx>, BulkFilter][];
    if (Array.isArray(filter?.ids) && filter.ids.length > 0) {
      const byGroup = new Map<number, TaskId[]>();
      for (const id of filter.ids) {
        let g = 0;
        try {
          g = this.groupOfId(id);
        } catch {
          g = 0; // malformed: group 0 refuses the whole call before writing
        }
        byGroup.set(g, [...(byGroup.get(g) ?? []), id]);
      }
      if (byGroup.size > 1) {
        // Validate every id before any group writes.
        for (const [i, id] of filter.ids.entries()) parseTaskId(id, `filter.ids[${i}]`);
      }
      targets = [...byGroup].map(([g, ids]) => [this.stores[g]!, { ...filter, ids }]);
    } else targets = this.stores.map((s) => [s, filter]);
    const all: R[] = [];
    for (const [store, f] of targets) all.push(await run(store, f));
    return all.reduce((a, b) => addCounts(a, b));
  }

  cancelMany(filter: BulkFilter, options?: BulkOptions): Promise<CancelManyResult> {
    return this.bulk(filter, (s, f) => s.cancelMany(f, options));
  }

  retryMany(filter: BulkFilter, options?: RetryManyOptions): Promise<RetryManyResult> {
    return this.bulk(filter, (s, f) => s.retryMany(f, options));
  }

  rescheduleMany(filter: BulkFilter, options: RescheduleManyOptions): Promise<RescheduleManyResult> {
    return this.bulk(filter, (s, f) => s.rescheduleMany(f, options));
  }

  deleteMany(filter: BulkFilter, options?: BulkOptions): Promise<DeleteManyResult> {
    return this.bulk(filter, (s, f) => s.deleteMany(f, options));
  }

  /** Every group's live counts added up, per kind too; lateness of the most late group; `now` of group 0. */
  async stats(): Promise<StoreStats> {
    const all = await Promise.all(this.stores.map((s) => s.stats()));
    const kinds = new Map<string, { kind: string; scheduled: number; due: number; claimed: number; dead: number }>();
    for (const s of all) {
      for (const k of s.byKind) {
        const have = kinds.get(k.kind);
        kinds.set(k.kind, have === undefined ? { ...k } : addCounts(have, { ...k, kind: k.kind }));
      }
    }
    const late = all.map((s) => s.oldestDueLatenessMs).filter((x): x is number => x !== null);
    return {
      now: all[0]!.now,
      scheduled: all.reduce((n, s) => n + s.scheduled, 0),
      due: all.reduce((n, s) => n + s.due, 0),
      claimed: all.reduce((n, s) => n + s.claimed, 0),
      dead: all.reduce((n, s) => n + s.dead, 0),
      byKind: [...kinds.values()].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0)),
      oldestDueLatenessMs: late.length === 0 ? null : Math.max(...late),
    };
  }

  /**
   * Every group's unclaimed (queue, kind) pairs, as one store lists them: a pair found in several
   * groups is listed once, with its due tasks added up (each group's count capped at
   * {@link UNCLAIMED_DUE_COUNT_CAP}, so is the sum) and its longest wait; longest waiting first
   * (oldest due time, then queue, then kind), at most `limit`. A pair is unclaimed per group: a
   * group with a CLAIMED task of the pair does not list it, even if another group does.
   */
  async unclaimedKinds(params: UnclaimedKindsParams): Promise<UnclaimedKinds> {
    const limit = validateUnclaimedKindsParams(params).limit;
    const all = await Promise.all(this.stores.map((s) => s.unclaimedKinds(params)));
    const merged = new Map<string, UnclaimedKind>();
    for (const r of all) {
      for (const k of r.kinds) {
        const id = JSON.stringify([k.queue, k.kind]);
        const have = merged.get(id);
        merged.set(
          id,
          have === undefined
            ? k
            : { ...(k.oldestDueAt < have.oldestDueAt ? k : have), due: Math.min(UNCLAIMED_DUE_COUNT_CAP, have.due + k.due) },
        );
      }
    }
    const text = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    const kinds = [...merged.values()]
      .sort((a, b) => a.oldestDueAt.getTime() - b.oldestDueAt.getTime() || text(a.queue, b.queue) || text(a.kind, b.kind))
      .slice(0, limit);
    return { ...all[0]!, kinds };
  }

  /** Pauses the target in every group; true when some group was not paused before. */
  async pause(target: PauseTarget, options?: PauseOptions): Promise<boolean> {
    let changed = false;
    for (const store of this.stores) changed = (await store.pause(target, options)) || changed;
    return changed;
  }

  async resume(target: PauseTarget): Promise<boolean> {
    let changed = false;
    for (const store of this.stores) changed = (await store.resume(target)) || changed;
    for (let g = 0; g < this.stores.length; g++) this.wake(g);
    return changed;
  }

  /**
   * The pauses of every group, one entry per paused queue or kind: a pause through the front is in
   * every group, but one set on a single group's schema (`postpone --schema g1 pause …`) holds that
   * group only and is listed too (the earliest `pausedAt` of the groups that have it), so nothing
   * paused anywhere is hidden; `resume` through the front resumes it in every group.
   */
  async listPaused(): Promise<PausedEntry[]> {
    const all = (await Promise.all(this.stores.map((s) => s.listPaused()))).flat();
    const byTarget = new Map<string, PausedEntry>();
    for (const p of all) {
      const key = `${p.scope}\u0000${p.name}`;
      const seen = byTarget.get(key);
      if (seen === undefined || p.pausedAt.getTime() < seen.pausedAt.getTime()) byTarget.set(key, p);
    }
    // Group 0's order (the store's: queues, then kinds, by name), then what only later groups have.
    return [...byTarget.values()];
  }

  /** Sets the limit in every group: each group applies it on its own, so the deployment's bound is N × the limit. */
  async setRateLimit(input: RateLimitInput): Promise<RateLimitRecord> {
    let first: RateLimitRecord | undefined;
    for (const store of this.stores) first ??= await store.setRateLimit(input);
    for (const store of this.stores.slice(1)) await store.setRateLimit(input);
    return first!;
  }

  async deleteRateLimit(scope: RateLimitScope): Promise<boolean> {
    let changed = false;
    for (const store of this.stores) changed = (await store.deleteRateLimit(scope)) || changed;
    return changed;
  }

  /**
   * The rate limits of every group, one record per scope and name: the front sets the same limit in
   * every group, and a limit set on one group's schema alone is listed too. A record is the first
   * group's that has it (group order): `used` and `reopensAt` are that group's, since each group
   * counts its own claims against its own copy of the limit.
   */
  async listRateLimits(): Promise<RateLimitRecord[]> {
    const all = (await Promise.all(this.stores.map((s) => s.listRateLimits()))).flat();
    return firstPerKey(all, (r) => `${r.scope}\u0000${r.name}`);
  }

  /**
   * Sets the per-key concurrency limit in every group (docs/contract.md#per-key-concurrency): each group
   * counts its own CLAIMED tasks of a key, and a key's tasks may sit in several groups, so the
   * deployment's bound is N × the limit per key.
   */
  async setKeyConcurrency(input: KeyConcurrencyInput): Promise<KeyConcurrencyRecord> {
    const first = await this.stores[0]!.setKeyConcurrency(input);
    for (const store of this.stores.slice(1)) await store.setKeyConcurrency(input);
    return first;
  }

  async deleteKeyConcurrency(target: { readonly kind: string }): Promise<boolean> {
    let changed = false;
    for (const store of this.stores) changed = (await store.deleteKeyConcurrency(target)) || changed;
    return changed;
  }

  /** The per-key limits of every group, one per kind (the first group's that has it, in group order). */
  async listKeyConcurrency(): Promise<KeyConcurrencyRecord[]> {
    const all = (await Promise.all(this.stores.map((s) => s.listKeyConcurrency()))).flat();
    return firstPerKey(all, (r) => r.kind);
  }

  reconcileCronSchedules(params: ReconcileCronParams): Promise<ReconcileCronResult> {
    return this.stores[this.cronGroup]!.reconcileCronSchedules(params);
  }

  async scheduleCronOccurrence(params: ScheduleCronOccurrenceParams): Promise<ScheduleCronOccurrenceResult> {
    const result = await this.stores[this.cronGroup]!.scheduleCronOccurrence(params);
    this.wake(this.cronGroup);
    return result;
  }

  listCronSchedules(): Promise<CronScheduleRecord[]> {
    return this.stores[this.cronGroup]!.listCronSchedules();
  }

  /**
   * Listens to every group's channel (each group's store listens on its own connection); a notice
   * of a group also ends that group's empty-claim skip.
   */
  async listen(onNotice: (notice: TaskNotice) => void, options?: Parameters<PostgresStore<Tx>['listen']>[1] & ListenOptions): Promise<Unlisten> {
    const unlistens: Unlisten[] = [];
    try {
      for (const [g, store] of this.stores.entries()) {
        unlistens.push(
          await store.listen((notice) => {
            this.wake(g);
            onNotice(notice);
          }, options),
        );
      }
    } catch (error) {
      await Promise.allSettled(unlistens.map((u) => u()));
      throw error;
    }
    return async () => {
      await Promise.allSettled(unlistens.map((u) => u()));
    };
  }

  /** Group 0's clock: every group is a schema of the same database, so of the same clock. */
  now(): Promise<Date> {
    return this.stores[0]!.now();
  }

  async close(): Promise<void> {
    await Promise.all(this.stores.map((s) => s.close()));
  }
}

/** A {@link ShardedStore} over `options.stores`. @throws ValidationError INVALID_OPTION (see the constructor) */
export function createShardedStore<Tx>(options: ShardedStoreOptions<Tx>): ShardedStore<Tx> {
  return new ShardedStore(options);
}

/** The first item of each key, in input order (group 0's list first, in its order, then what later groups add). */
function firstPerKey<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
  const seen = new Map<string, T>();
  for (const item of items) if (!seen.has(keyOf(item))) seen.set(keyOf(item), item);
  return [...seen.values()];
}
