/**
 * The in-memory Store: every state change is computed by core's pure `transition()` (docs/contract.md#transitions)
 * and applied through a write set, so it behaves like the PostgreSQL store guard for guard, without
 * a database. For fast tests, models and differential checks; nothing survives the process.
 */
import {
  HELD_DUE_AT_MS,
  type CancelOutcome,
  type ClaimedTask,
  type ClaimParams,
  type Clock,
  type Command,
  type CompleteManyItem,
  type CompleteOutcome,
  type CompleteParams,
  type Completion,
  type ExtendParams,
  type FailParams,
  type FailResult,
  type NormalizedSchedule,
  type NormalizedScheduleOptions,
  HANDS_OVER_KEY,
  type PeekParams,
  type PeekResult,
  type ReclaimedTask,
  type ReclaimParams,
  type ReleaseOutcome,
  type ReleaseParams,
  type SnoozeParams,
  type SnoozeResult,
  validateFailRetry,
  validateSnoozeParams,
  type Result,
  type ScheduledTask,
  type ScheduleInput,
  type ScheduleOptions,
  type StateCounts,
  type Step,
  type Store,
  StoreClosedError,
  systemClock,
  TASK_STATES,
  type Task,
  type TaskId,
  TaskState,
  type TaskState as TaskStateT,
  transition,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DuplicateKeyError,
  parseTaskId,
  validateAttempt,
  validateCompleteMany,
  validateExtendMany,
  type ExtendManyParams,
  validateJson,
  validateNonNegativeMs,
  validatePositiveInt,
  validatePositiveMs,
  validateSchedule,
  validateKindLimits,
  validateSelection,
  validateScheduleMany,
  validateScheduleOptions,
  validateCancelOptions,
  type CancelOptions,
  rejectUnknownFields,
  ValidationError,
  type ProgressParams,
  type RescheduleParams,
  type RescheduleResult,
  TaskWaiters,
  type WaitForOptions,
  validateProgressParams,
  validateReschedule,
  validateWaitFor,
} from '@postpone/core';
import { MemoryDatabase, type WriteSet } from './database.js';
import { MemoryTx, writeSetOf } from './memory-tx.js';
import { checkCallParams, DEFAULT_BATCH_LIMIT, errorText, MAX_BATCH_LIMIT, MAX_CLAIM_LIMIT, validateKeep, validateOwner } from '@postpone/core';
import { TaskLocks } from './task-locks.js';
import { MemoryAdmin } from './admin.js';
import { MemoryBatches } from './batch.js';
import type { BatchCallback, BatchId, BatchInfo, BatchStore } from '@postpone/core';
import { MemoryBulk } from './bulk.js';
import type { BulkFilter, BulkOptions, CancelManyResult, DeleteManyResult, RescheduleManyOptions, RescheduleManyResult, RetryManyOptions, RetryManyResult } from '@postpone/core';
import { MemoryCron } from './cron.js';
import { MemoryPause } from './pause.js';
import type { PausedEntry, PauseOptions, PauseTarget } from '@postpone/core';
import { keyedClaimOrder, keySlot, MemoryKeyLimits } from './key-limit.js';
import type { KeyBacklogPage, KeyBacklogParams, KeyBacklogStore, KeyConcurrencyInput, KeyConcurrencyRecord, KeyLimitStore } from '@postpone/core';
import { memoryKeyBacklog } from './key-backlog.js';
import { MemoryRateLimits } from './rate-limit.js';
import { MemoryKeyRateLimits } from './key-rate-limit.js';
import type { KeyRateLimitInput, KeyRateLimitRecord, KeyRateLimitStore } from '@postpone/core';
import { notifyRateLimited, type RateLimitInput, type RateLimitRecord, type RateLimitScope, type RateLimitStore, validateOnRateLimited } from '@postpone/core';
import type { CronScheduleRecord, CronStore, ReconcileCronParams, ReconcileCronResult, ScheduleCronOccurrenceParams, ScheduleCronOccurrenceResult } from '@postpone/core';
import type { ListTasksParams, PruneParams, PruneResult, RetryParams, RetryResult, StoreStats, TaskPage, UnclaimedKinds, UnclaimedKindsParams } from '@postpone/core';

export interface MemoryStoreOptions {
  /** Source of "now" for due times, leases and timestamps (default {@link systemClock}). */
  readonly clock?: Clock;
  /** Payload (and result) size limit in bytes of UTF-8 JSON (default 1 MiB). */
  readonly maxPayloadBytes?: number;
}


/** The options of an internal insert (retry, cron): `keep`, no throttle. */
const KEEP: NormalizedScheduleOptions = Object.freeze({ onConflict: 'keep', throttleMs: null });
/** The columns a raw task UPDATE may set (see {@link MemoryStore.rawUpdateTask}). */
export type RawTaskPatch = Partial<Omit<Task, 'id'>>;

/** PostgreSQL's largest `jsonb` value is 255 MB (§8.14); the limit may not exceed 1 GiB either way. */
const MAX_PAYLOAD_LIMIT = 1_073_741_824;

export class MemoryStore implements Store<MemoryTx>, CronStore, RateLimitStore, KeyLimitStore, KeyRateLimitStore, KeyBacklogStore, BatchStore {
  readonly name = 'memory';
  readonly #db = new MemoryDatabase();
  readonly #locks = new TaskLocks();
  readonly #clock: Clock;
  readonly #maxPayloadBytes: number;
  #closed = false;
  readonly #admin = new MemoryAdmin({
    db: this.#db,
    locks: this.#locks,
    nowMs: () => this.#clock.now(),
    insert: (input) => this.#insertTasks([input], undefined, KEEP)[0] as ScheduledTask,
    assertOpen: () => this.#assertOpen(),
  });

  /** @throws ValidationError INVALID_OPTION for a clock without `now()` or a bad `maxPayloadBytes` */
  constructor(options: MemoryStoreOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new ValidationError('INVALID_OPTION', 'options', 'must be an object');
    rejectUnknownFields(options, ['clock', 'maxPayloadBytes']);
    const clock = options.clock ?? systemClock;
    if (typeof clock?.now !== 'function') throw new ValidationError('INVALID_OPTION', 'clock', 'must have a now() method');
    this.#clock = clock;
    this.#maxPayloadBytes = validatePositiveInt(options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES, 'maxPayloadBytes', MAX_PAYLOAD_LIMIT);
    this.#cron = new MemoryCron({
      nowMs: () => this.#clock.now(),
      maxPayloadBytes: this.#maxPayloadBytes,
      insert: (input) => this.#insertTasks([input], undefined, KEEP)[0] as ScheduledTask,
      assertOpen: () => this.#assertOpen(),
    });
    this.#batches = new MemoryBatches({
      nowMs: () => this.#clock.now(),
      maxPayloadBytes: this.#maxPayloadBytes,
      assertOpen: () => this.#assertOpen(),
      insert: (tasks) => this.#insertTasks(tasks, undefined, KEEP),
      burnTaskId: () => {
        this.#db.nextTaskId();
      },
    });
    this.#db.onRollback = (ws) => this.#batches.onRollback(ws);
    this.#db.onCommit = (ws) => {
      this.#batches.onCommit(ws);
      for (const id of ws.tasks.keys()) {
        if (this.#waiters.has(id)) this.#waiters.settle(id, this.#db.tasks.get(id) ?? null);
      }
    };
  }

  /** Batches with a callback (`BatchStore`, docs/contract.md#batches): see `./batch.ts`. */
  readonly #batches: MemoryBatches;
  createBatch = (params: { readonly callback: BatchCallback }): Promise<BatchId> => this.#batches.createBatch(params);
  scheduleInBatch = (batchId: BatchId, inputs: readonly ScheduleInput[]): Promise<ScheduledTask[]> => this.#batches.scheduleInBatch(batchId, inputs);
  sealBatch = (batchId: BatchId): Promise<BatchInfo> => this.#batches.sealBatch(batchId);
  getBatch = (batchId: BatchId): Promise<BatchInfo | null> => this.#batches.getBatch(batchId);

  /** The `waitFor` callers, woken in-process by every commit that touches their task. */
  readonly #waiters = new TaskWaiters();

  /** `transition('progress')` under the row lock: CLAIMED with this attempt → progress replaced. */
  async reportProgress(params: ProgressParams): Promise<boolean> {
    this.#assertOpen();
    const p = validateProgressParams(params);
    return resultOf(await this.#apply(p.id, { type: 'progress', attempt: p.attempt, progress: p.value }), 'progress').written;
  }

  /** `transition('reschedule')` under the row lock; `delayMs` counts from this store's clock at the write. */
  async reschedule(id: TaskId, params: RescheduleParams): Promise<RescheduleResult> {
    this.#assertOpen();
    const p = validateReschedule(id, params, { maxPayloadBytes: this.#maxPayloadBytes, nowMs: this.#clock.now() });
    const step = await this.#locks.run(p.id, () => {
      this.#assertOpen();
      const nowMs = this.#clock.now();
      const ws = this.#db.begin();
      const command: Command = { type: 'reschedule', dueAt: p.dueAt ?? new Date(nowMs + p.delayMs), ...(p.payload === null ? {} : { payload: p.payload.value }) };
      const staged = this.#stage(ws, p.id, command, nowMs);
      this.#db.commit(ws);
      this.#db.dependencies.rescheduled(this.#db.tasks, p.id);
      return staged;
    });
    const { result } = resultOf(step, 'reschedule');
    return result.outcome === 'RESCHEDULED' ? { outcome: 'RESCHEDULED', dueAt: new Date(result.dueAt) } : result;
  }

  /** In-process: resolves at the commit that makes the task terminal (or at once when it is). */
  async waitFor(id: TaskId, options?: WaitForOptions): Promise<Task> {
    this.#assertOpen();
    const w = validateWaitFor(id, options);
    const waiting = this.#waiters.add(w.id, w.timeoutMs, w.signal);
    this.#waiters.settle(w.id, this.#db.tasks.get(w.id) ?? null);
    return await waiting;
  }

  /** Paused queues and kinds (docs/contract.md#pause-and-resume): see `./pause.ts`. */
  readonly #pause = new MemoryPause({ nowMs: () => this.#clock.now(), assertOpen: () => this.#assertOpen() });
  pause = (target: PauseTarget, options?: PauseOptions): Promise<boolean> => this.#pause.pause(target, options);
  resume = (target: PauseTarget): Promise<boolean> => this.#pause.resume(target);
  listPaused = (): Promise<PausedEntry[]> => this.#pause.list();
  /** Rate limits (`RateLimitStore`, docs/contract.md#rate-limits): see `./rate-limit.ts`. */
  readonly #rateLimits = new MemoryRateLimits({ nowMs: () => this.#clock.now(), assertOpen: () => this.#assertOpen() });
  setRateLimit = (input: RateLimitInput): Promise<RateLimitRecord> => this.#rateLimits.set(input);
  deleteRateLimit = (scope: RateLimitScope): Promise<boolean> => this.#rateLimits.delete(scope);
  listRateLimits = (): Promise<RateLimitRecord[]> => this.#rateLimits.list();
  /** Per-key concurrency and fair share (`KeyLimitStore`, docs/contract.md#per-key-concurrency): see `./key-limit.ts`. */
  readonly #keyLimits = new MemoryKeyLimits({ assertOpen: () => this.#assertOpen() });
  setKeyConcurrency = (input: KeyConcurrencyInput): Promise<KeyConcurrencyRecord> => this.#keyLimits.set(input);
  deleteKeyConcurrency = (target: { readonly kind: string }): Promise<boolean> => this.#keyLimits.delete(target);
  listKeyConcurrency = (): Promise<KeyConcurrencyRecord[]> => this.#keyLimits.list();
  /** Per-key rate limits (`KeyRateLimitStore`, docs/contract.md#per-key-rate-limits): see `./key-rate-limit.ts`. */
  readonly #keyRates = new MemoryKeyRateLimits({ nowMs: () => this.#clock.now(), assertOpen: () => this.#assertOpen() });
  setKeyRateLimit = (input: KeyRateLimitInput): Promise<KeyRateLimitRecord> => this.#keyRates.set(input);
  deleteKeyRateLimit = (target: { readonly kind: string }): Promise<boolean> => this.#keyRates.delete(target);
  listKeyRateLimits = (): Promise<KeyRateLimitRecord[]> => this.#keyRates.list();
  /** The per-key backlog (`KeyBacklogStore`, docs/contract.md#key-backlog): see `./key-backlog.ts`. @throws ValidationError, StoreClosedError */
  keyBacklog = async (params: KeyBacklogParams): Promise<KeyBacklogPage> => {
    this.#assertOpen();
    return memoryKeyBacklog(params, this.#db.limitKeys, (id) => this.#db.tasks.get(id), this.#clock.now());
  };

  /** Recurring schedules (`CronStore`, docs/contract.md#recurring-schedules): see `./cron.ts`. */
  readonly #cron: MemoryCron;
  reconcileCronSchedules = (params: ReconcileCronParams): Promise<ReconcileCronResult> => this.#cron.reconcile(params);
  scheduleCronOccurrence = (params: ScheduleCronOccurrenceParams): Promise<ScheduleCronOccurrenceResult> => this.#cron.scheduleOccurrence(params);
  listCronSchedules = (): Promise<CronScheduleRecord[]> => this.#cron.list();

  /** Nothing to create: the memory store has no schema and no numbered migrations. */
  async migrate(): Promise<undefined> {
    this.#assertOpen();
    return undefined;
  }

  async schedule(input: ScheduleInput, options?: ScheduleOptions<MemoryTx>): Promise<ScheduledTask> {
    this.#assertOpen();
    const opts = validateScheduleOptions(options);
    const [scheduled] = this.#insertTasks([validateSchedule(input, { maxPayloadBytes: this.#maxPayloadBytes, nowMs: this.#clock.now() })], opts.tx as MemoryTx | undefined, opts);
    return scheduled as ScheduledTask;
  }

  async scheduleMany(inputs: readonly ScheduleInput[], options?: ScheduleOptions<MemoryTx>): Promise<ScheduledTask[]> {
    this.#assertOpen();
    const opts = validateScheduleOptions(options);
    return this.#insertTasks(validateScheduleMany(inputs, { maxPayloadBytes: this.#maxPayloadBytes, nowMs: this.#clock.now() }), opts.tx as MemoryTx | undefined, opts);
  }

  /**
   * `transition('cancel')` under the task's lock. With `options.tx` the change is staged in the
   * caller's transaction (it sees its own writes) and commits with it; no lock is held until then:
   * when another write to the task commits first, the caller's commit fails with StoreError 40001
   * (the PostgreSQL store would make that write wait, or a claim skip the row).
   */
  async cancel(id: TaskId, options?: CancelOptions<MemoryTx>): Promise<CancelOutcome> {
    this.#assertOpen();
    const { tx } = validateCancelOptions(options);
    const taskId = parseTaskId(id);
    if (tx === undefined) return resultOf(await this.#apply(taskId, { type: 'cancel' }), 'cancel').outcome;
    const ws = this.#ownWriteSet(tx as MemoryTx);
    return this.#locks.run(taskId, () => {
      this.#assertOpen();
      ws.assertOpen();
      const before = ws.getTask(taskId);
      const step = transition(before, { type: 'cancel' }, this.#clock.now());
      if (step.task !== null && step.task !== before) ws.putTask(step.task);
      return resultOf(step, 'cancel').outcome;
    });
  }

  async claim(params: ClaimParams): Promise<ClaimedTask[]> {
    this.#assertOpen();
    checkCallParams('claim', params);
    const command: Command = {
      type: 'claim',
      owner: validateOwner(params?.owner),
      leaseMs: validatePositiveMs(params.leaseMs, 'leaseMs'),
    };
    const limit = validatePositiveInt(params.limit, 'limit', MAX_CLAIM_LIMIT);
    const selected = selection(params);
    const nowMs = this.#clock.now();
    // The partial index `task_claim_idx` of docs/contract.md#data-model (SCHEDULED rows of the queue and kinds),
    // in (priority desc, dueAt, id) order; transition() decides which rows are due. Rows locked by a running command are skipped.
    const caps = validateKindLimits(params.kindLimits);
    // Paused queues and kinds are left out, as the PostgreSQL claim's levels (docs/contract.md#pause-and-resume).
    const candidates = this.#unlocked(TaskState.SCHEDULED, (t) => t.dueAt.getTime(), true).filter((t) => selected(t) && !this.#pause.holds(t.queue, t.kind));
    // Per-kind caps (docs/contract.md#kind-concurrency): the room of a capped kind is its cap less the
    // committed CLAIMED tasks of that kind in any queue; this method runs without awaiting, so no other
    // claim interleaves (the PostgreSQL store's per-kind advisory lock).
    const room = new Map<string, number>();
    if (caps !== null) {
      for (const [kind, cap] of caps) room.set(kind, cap);
      for (const t of this.#db.tasks.values()) {
        const left = t.state === TaskState.CLAIMED ? room.get(t.kind) : undefined;
        if (left !== undefined) room.set(t.kind, left - 1);
      }
    }
    // Rate limits (docs/contract.md#rate-limits): a limited kind's room is the least of its cap room and its rate room.
    const onRateLimited = validateOnRateLimited(params.onRateLimited);
    const chosen = validateSelection(params);
    const rated = this.#rateLimits.rooms(chosen.queue, chosen.kinds, limit, nowMs);
    if (rated.held !== null) {
      if (onRateLimited !== undefined) notifyRateLimited(onRateLimited, rated.held);
      return [];
    }
    for (const [kind, rateRoom] of rated.kindRooms) room.set(kind, Math.min(rateRoom, room.get(kind) ?? rateRoom));
    // Per-key concurrency and fair share (docs/contract.md#per-key-concurrency): with a key-limited kind
    // in reach, the due candidates in fair order and a room per (kind, limitKey); else unchanged.
    // Per-key rate limits (docs/contract.md#per-key-rate-limits): a rated kind is walked per key too
    // (no concurrency limit: Infinity), its key's room cut to the key's rate room.
    const keyRated = this.#keyRates.applicable(chosen.kinds);
    const concLimits = this.#keyLimits.applicable(chosen.kinds);
    const keyLimits = keyRated.length === 0 ? concLimits : new Map<string, number>([...keyRated.map((kind): [string, number] => [kind, Number.POSITIVE_INFINITY]), ...(concLimits ?? [])]);
    const limitKeyOf = (t: Task): string | null => this.#db.limitKeys.get(t.id) ?? null;
    const keyed = keyLimits === null ? null : keyedClaimOrder(candidates, this.#db.tasks.values(), keyLimits, limitKeyOf, nowMs);
    if (keyed !== null && keyRated.length > 0) {
      for (const [slot, left] of keyed.room) {
        const [kind, key] = JSON.parse(slot) as [string, string];
        const rate = this.#keyRates.room(kind, key, nowMs);
        if (rate !== undefined) keyed.room.set(slot, Math.min(left, rate.room));
      }
    }
    const slotOf = (t: Task): string | undefined => (keyLimits === null ? undefined : keySlot(t, keyLimits, limitKeyOf));
    const admit = (t: Task): boolean => {
      const slot = slotOf(t);
      return (room.get(t.kind) ?? 1) > 0 && (slot === undefined || (keyed?.room.get(slot) ?? 1) > 0);
    };
    const { changed } = this.#applyBatch(keyed?.ordered ?? candidates, command, nowMs, rated.limit, (r) => {
      if (!resultOf(r, 'claim').claimed) return false;
      const task = r.task as Task;
      const left = room.get(task.kind);
      if (left !== undefined) room.set(task.kind, left - 1);
      const slot = slotOf(task);
      const keyLeft = slot === undefined ? undefined : keyed?.room.get(slot);
      if (slot !== undefined && keyLeft !== undefined) keyed?.room.set(slot, keyLeft - 1);
      return true;
    }, admit);
    // The claim's answer in claim order, as every store returns it (the fair order decides which tasks, not their order).
    if (keyed !== null) changed.sort((a, b) => b.priority - a.priority || a.dueAt.getTime() - b.dueAt.getTime() || compareIds(a.id, b.id));
    const byKind = new Map<string, number>();
    for (const task of changed) byKind.set(task.kind, (byKind.get(task.kind) ?? 0) + 1);
    this.#rateLimits.log(chosen.queue, byKind, nowMs);
    if (keyRated.length > 0) {
      const perKey = new Map<string, number>();
      for (const task of changed) {
        const key = limitKeyOf(task);
        if (key !== null && keyRated.includes(task.kind)) perKey.set(JSON.stringify([task.kind, key]), (perKey.get(JSON.stringify([task.kind, key])) ?? 0) + 1);
      }
      for (const [slot, count] of perKey) {
        const [kind, key] = JSON.parse(slot) as [string, string];
        this.#keyRates.log(kind, key, count, nowMs);
      }
    }
    // Short: did this claim use up the room? (as the PostgreSQL store's `rateLimitRooms` read)
    let after = changed.length < limit && onRateLimited !== undefined ? this.#rateLimits.rooms(chosen.queue, chosen.kinds, 1, nowMs).held : null;
    // Per-key rate limits: as the PostgreSQL store's `keyRateHeld` read.
    const named = chosen.kinds;
    if (after === null && changed.length < limit && onRateLimited !== undefined && named !== null && keyRated.length > 0 && named.every((kind) => keyRated.includes(kind))) {
      let anyHeld = false;
      let anyFree = false;
      let reopensAtMs = this.#keyRates.earliestReopen(named, nowMs);
      for (const t of this.#db.tasks.values()) {
        if (t.state !== TaskState.SCHEDULED || t.queue !== chosen.queue || !named.includes(t.kind) || this.#pause.holds(t.queue, t.kind)) continue;
        if (t.dueAt.getTime() > nowMs) {
          reopensAtMs = Math.min(reopensAtMs, t.dueAt.getTime());
          continue;
        }
        const key = limitKeyOf(t);
        const rate = key === null ? undefined : this.#keyRates.room(t.kind, key, nowMs);
        if (rate === undefined || rate.room > 0) anyFree = true;
        else anyHeld = true;
      }
      if (anyHeld && !anyFree) after = { reopensInMs: Math.max(0, reopensAtMs - nowMs) };
    }
    if (after !== null && onRateLimited !== undefined) notifyRateLimited(onRateLimited, after);
    return changed.map((task) => toClaimedTask(task, nowMs));
  }

  async extend(params: ExtendParams): Promise<boolean> {
    this.#assertOpen();
    checkCallParams('extend', params);
    const id = parseTaskId(params.id);
    const command: Command = { type: 'extend', attempt: validateAttempt(params.attempt), leaseMs: validatePositiveMs(params.leaseMs, 'leaseMs') };
    return resultOf(await this.#apply(id, command), 'extend').extended;
  }

  /** Every item through `transition('extend')` in ONE write set under the row locks of all of them. @returns renewed or not, in input order */
  async extendMany(params: ExtendManyParams): Promise<boolean[]> {
    this.#assertOpen();
    const { items, leaseMs } = validateExtendMany(params);
    if (items.length === 0) return [];
    return this.#locks.runAll(items.map((i) => i.id).sort(compareIds), () => {
      this.#assertOpen();
      const nowMs = this.#clock.now();
      const ws = this.#db.begin();
      const renewed = items.map(({ id, attempt }) => resultOf(this.#stage(ws, id, { type: 'extend', attempt, leaseMs }, nowMs), 'extend').extended);
      this.#db.commit(ws);
      return renewed;
    });
  }

  async complete(params: CompleteParams<MemoryTx>): Promise<CompleteOutcome> {
    this.#assertOpen();
    checkCallParams('complete', params);
    const id = parseTaskId(params.id);
    const attempt = validateAttempt(params.attempt);
    const owner = validateOwner(params.owner);
    const { value: result } = validateJson(params.result ?? null, 'result', this.#maxPayloadBytes, 'INVALID_RESULT');
    const work = params.work;
    if (work !== undefined && typeof work !== 'function') throw new ValidationError('INVALID_OPTION', 'work', 'must be a function');
    const keep = validateKeep(params.keep);
    return this.#locks.run(id, async () => {
      this.#assertOpen();
      const nowMs = this.#clock.now();
      const ws = this.#db.begin();
      const step = this.#stage(ws, id, { type: 'complete', attempt, result, keep }, nowMs);
      const outcome = resultOf(step, 'complete');
      if (outcome.keepDone || outcome.drop === true) {
        if (outcome.keepDone) ws.recordCompletion({ taskId: id, attempt, worker: owner, finishedAt: new Date(nowMs) });
        try {
          await work?.(new MemoryTx(ws));
        } catch (error) {
          this.#db.rollback(ws);
          throw error;
        }
      }
      this.#db.commit(ws);
      return outcome.outcome;
    });
  }

  /**
   * Every item through `transition('complete')` in ONE write set, holding the row locks of all the
   * items (taken in id order, like the PostgreSQL store): DONE items are kept with their completion, or with
   * `keep: false` are deleted (no history); then each of those items' `work` runs on the write set,
   * in input order; all commit together. A work that throws rolls the whole write set back and is
   * rethrown. @returns outcomes in input order
   */
  async completeMany(items: readonly CompleteManyItem<MemoryTx>[]): Promise<CompleteOutcome[]> {
    this.#assertOpen();
    const valid = validateCompleteMany<MemoryTx>(items, this.#maxPayloadBytes);
    if (valid.length === 0) return [];
    const ids = valid.map((i) => i.id).sort(compareIds);
    return this.#locks.runAll(ids, async () => {
      this.#assertOpen();
      const nowMs = this.#clock.now();
      const ws = this.#db.begin();
      const works: ((tx: MemoryTx) => Promise<void>)[] = [];
      const outcomes = valid.map(({ id, attempt, owner, result, keep, work }) => {
        const outcome = resultOf(this.#stage(ws, id, { type: 'complete', attempt, result, keep }, nowMs), 'complete');
        if (outcome.keepDone) ws.recordCompletion({ taskId: id, attempt, worker: owner, finishedAt: new Date(nowMs) });
        if ((outcome.keepDone || outcome.drop === true) && work !== undefined) works.push(work);
        return outcome.outcome;
      });
      if (works.length > 0) {
        const tx = new MemoryTx(ws);
        try {
          for (const work of works) await work(tx);
        } catch (error) {
          this.#db.rollback(ws);
          throw error;
        }
      }
      this.#db.commit(ws);
      return outcomes;
    });
  }

  async fail(params: FailParams): Promise<FailResult> {
    this.#assertOpen();
    checkCallParams('fail', params);
    const id = parseTaskId(params.id);
    const command: Command = {
      type: 'fail',
      attempt: validateAttempt(params.attempt),
      error: errorText(params.error),
      backoffMs: validateNonNegativeMs(params.backoffMs, 'backoffMs'),
      ...validateFailRetry(params),
    };
    const { result } = resultOf(await this.#apply(id, command), 'fail');
    return result.outcome === 'SCHEDULED' ? { outcome: 'SCHEDULED', dueAt: new Date(result.dueAt) } : result;
  }

  /** Core `transition('snooze')` under the row lock; `delayMs` counts from this store's clock. */
  async snooze(params: SnoozeParams): Promise<SnoozeResult> {
    this.#assertOpen();
    const p = validateSnoozeParams(params, this.#clock.now());
    // `delayMs` counts from the same clock reading as `updatedAt`, under the row lock (as one SQL statement would).
    const step = await this.#locks.run(p.id, () => {
      this.#assertOpen();
      const nowMs = this.#clock.now();
      const ws = this.#db.begin();
      const staged = this.#stage(ws, p.id, { type: 'snooze', attempt: p.attempt, dueAt: p.dueAt ?? new Date(nowMs + p.delayMs) }, nowMs);
      this.#db.commit(ws);
      return staged;
    });
    const { result } = resultOf(step, 'snooze');
    return result.outcome === 'SCHEDULED' ? { outcome: 'SCHEDULED', dueAt: new Date(result.dueAt) } : result;
  }

  async release(params: ReleaseParams): Promise<ReleaseOutcome> {
    this.#assertOpen();
    checkCallParams('release', params);
    const id = parseTaskId(params.id);
    return resultOf(await this.#apply(id, { type: 'release', attempt: validateAttempt(params.attempt) }), 'release').outcome;
  }

  async reclaimExpired(params: ReclaimParams = {}): Promise<ReclaimedTask[]> {
    this.#assertOpen();
    checkCallParams('reclaimExpired', params);
    const limit = validatePositiveInt(params.limit ?? DEFAULT_BATCH_LIMIT, 'limit', MAX_BATCH_LIMIT);
    const nowMs = this.#clock.now();
    // The partial index `lease_until WHERE state = 'CLAIMED'`, in (leaseUntil, id) order.
    const candidates = this.#unlocked(TaskState.CLAIMED, (t) => t.leaseUntil?.getTime() ?? 0);
    const { steps } = this.#applyBatch(candidates, { type: 'reclaim' }, nowMs, limit, (r) => resultOf(r, 'reclaim').outcome !== null);
    return steps.map(({ before, result }) => ({ id: before.id, attempt: before.attempt, outcome: resultOf(result, 'reclaim').outcome! }));
  }

  async peekDue(params: PeekParams): Promise<PeekResult> {
    this.#assertOpen();
    checkCallParams('peekDue', params);
    const withinMs = validateNonNegativeMs(params.withinMs, 'withinMs');
    const limit = validatePositiveInt(params.limit ?? DEFAULT_BATCH_LIMIT, 'limit', MAX_BATCH_LIMIT);
    const nowMs = this.#clock.now();
    const selected = selection(params);
    const tasks = this.#byState(TaskState.SCHEDULED, (t) => t.dueAt.getTime())
      .filter((t) => t.dueAt.getTime() <= nowMs + withinMs && selected(t) && !this.#pause.holds(t.queue, t.kind))
      .slice(0, limit)
      .map((t) => ({ id: t.id, dueAt: new Date(t.dueAt) }));
    const { queue, kinds } = validateSelection(params);
    return { now: new Date(nowMs), tasks, ...(this.#pause.holdsAll(queue, kinds) ? { paused: true } : {}) };
  }

  async getTask(id: TaskId): Promise<Task | null> {
    this.#assertOpen();
    const task = this.#db.tasks.get(parseTaskId(id));
    if (task === undefined) return null;
    // As the PostgreSQL store: only a task still at the held due time (a reschedule moves it off, docs/contract.md#dependencies).
    const waiting = task.state === TaskState.SCHEDULED && task.dueAt.getTime() === HELD_DUE_AT_MS ? this.#db.dependencies.waiting(task.id) : undefined;
    return waiting === undefined ? structuredClone(task) : { ...structuredClone(task), ...waiting };
  }

  /** The completion of a DONE task kept in history, else null (see core `Store.getCompletion`). @throws ValidationError INVALID_TASK_ID */
  async getCompletion(id: TaskId): Promise<Completion | null> {
    this.#assertOpen();
    const taskId = parseTaskId(id);
    const completion = this.#db.completions.get(taskId);
    return completion === undefined || this.#db.tasks.get(taskId)?.state !== 'DONE' ? null : structuredClone(completion);
  }

  async countByState(): Promise<StateCounts> {
    this.#assertOpen();
    const counts = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<TaskStateT, number>;
    for (const task of this.#db.tasks.values()) counts[task.state] += 1;
    return counts;
  }

  /** Bulk operations by filter or ids (docs/contract.md#bulk-operations): see `./bulk.ts`. */
  readonly #bulk = new MemoryBulk({
    db: this.#db,
    locks: this.#locks,
    nowMs: () => this.#clock.now(),
    assertOpen: () => this.#assertOpen(),
    cancel: (id) => this.cancel(id),
    retry: (params) => this.#admin.retry(params),
    retriedAs: (id) => this.#admin.retriedAs(id),
    forget: (id) => this.#admin.forget(id),
  });
  cancelMany = (filter: BulkFilter, options?: BulkOptions): Promise<CancelManyResult> => this.#bulk.cancelMany(filter, options);
  retryMany = (filter: BulkFilter, options?: RetryManyOptions): Promise<RetryManyResult> => this.#bulk.retryMany(filter, options);
  rescheduleMany = (filter: BulkFilter, options: RescheduleManyOptions): Promise<RescheduleManyResult> => this.#bulk.rescheduleMany(filter, options);
  deleteMany = (filter: BulkFilter, options?: BulkOptions): Promise<DeleteManyResult> => this.#bulk.deleteMany(filter, options);

  /** Store operations (list, retry, prune, stats): see `./admin.ts`. */
  listTasks = (params?: ListTasksParams): Promise<TaskPage> => this.#admin.listTasks(params);
  retry = (params: RetryParams): Promise<RetryResult> => this.#admin.retry(params);
  prune = (params: PruneParams): Promise<PruneResult> => this.#admin.prune(params);
  stats = (): Promise<StoreStats> => this.#admin.stats();
  unclaimedKinds = (params: UnclaimedKindsParams): Promise<UnclaimedKinds> => this.#admin.unclaimedKinds(params);

  async now(): Promise<Date> {
    this.#assertOpen();
    return new Date(this.#clock.now());
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#waiters.closeAll();
  }

  /**
   * Runs `fn` in a fresh transaction: its writes (table rows, tasks scheduled with `{ tx }`) commit
   * together when `fn` resolves and are dropped when it throws (the error is rethrown).
   * @throws StoreClosedError; StoreError 23505 when a staged INSERT conflicts at commit
   */
  async transaction<T>(fn: (tx: MemoryTx) => Promise<T>): Promise<T> {
    this.#assertOpen();
    const ws = this.#db.begin();
    let value: T;
    try {
      value = await fn(new MemoryTx(ws));
    } catch (error) {
      this.#db.rollback(ws);
      throw error;
    }
    this.#db.commit(ws);
    return value;
  }

  /** The committed rows of a caller table (copies), keyed as inserted; empty when it was never written. */
  table(name: string): ReadonlyMap<string, unknown> {
    this.#assertOpen();
    return new Map([...(this.#db.tables.get(name) ?? new Map<string, unknown>())].map(([k, v]) => [k, structuredClone(v)]));
  }

  /**
   * Test seam: the in-memory counterpart of a raw `UPDATE task SET ... WHERE id = $1`. It bypasses
   * the state machine but not the table constraints, and waits for the row lock like an UPDATE.
   * @returns false when there is no such task (0 rows)
   * @throws StoreError 23514 when the row would break the lease CHECK (nothing changes); ValidationError for a malformed id
   */
  async rawUpdateTask(id: TaskId, patch: RawTaskPatch): Promise<boolean> {
    this.#assertOpen();
    const taskId = parseTaskId(id);
    return this.#locks.run(taskId, () => {
      const task = this.#db.tasks.get(taskId);
      if (task === undefined) return false;
      const ws = this.#db.begin();
      try {
        ws.putTask({ ...task, ...patch, id: taskId });
      } catch (error) {
        this.#db.rollback(ws);
        throw error;
      }
      this.#db.commit(ws);
      return true;
    });
  }

  /**
   * Test seam: the in-memory counterpart of `alter table task alter column id restart with <next>`:
   * the next task gets id `next`. Ids are kept as bigint, so they stay exact past 2⁵³.
   * @throws ValidationError INVALID_TASK_ID unless `next` is a positive bigint
   */
  restartTaskIds(next: TaskId): void {
    this.#assertOpen();
    this.#db.restartTaskIds(parseTaskId(next, 'next'));
  }

  /**
   * Test seam: the in-memory counterpart of `select count(*) from task where limit_key is not null`
   * (docs/contract.md#per-key-concurrency): how many limit keys the store holds. Only SCHEDULED and
   * CLAIMED tasks keep one, so it falls back to 0 once every keyed task has finished, died, been
   * cancelled or deleted.
   */
  limitKeyCount(): number {
    return this.#db.limitKeys.size;
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /**
   * Inserts the tasks in one write set, all or none. An input whose (kind, key) a SCHEDULED or CLAIMED
   * task holds (`task_key_idx`, docs/contract.md#dedup-keys) inserts nothing: `keep` returns that task,
   * `replace` (and `debounce`) runs `transition('replace')` on it, `fail` throws before anything is
   * staged. `debounce` and `queueBehind` first take the key off a CLAIMED holder (its `key` becomes null), so a new task
   * is queued behind it; `throttle` reads the key's throttle row and creates nothing while its window
   * is closed (`throttled: true`), else records the task it created. A caller transaction holds no row
   * lock here: a key taken by another transaction that commits first makes this one's commit fail with
   * 23505 (a throttle row written first: 40001), where PostgreSQL would wait and then decide.
   * @throws DuplicateKeyError (`fail`)
   */
  #insertTasks(inputs: readonly NormalizedSchedule[], tx: MemoryTx | undefined, options: NormalizedScheduleOptions): ScheduledTask[] {
    const { onConflict, throttleMs } = options;
    const ws = tx === undefined ? this.#db.begin() : this.#ownWriteSet(tx);
    ws.assertOpen();
    const now = new Date(this.#clock.now());
    // One id per input, drawn in input order even when the input conflicts, as PostgreSQL's statement does;
    // except an input a closed throttle window holds back: PostgreSQL's throttle gate leaves it out of the insert.
    const held = inputs.map((input) => {
      if (onConflict !== 'throttle' || input.key === null) return false;
      const row = ws.getThrottle(input.kind, input.key);
      return row !== undefined && row.closedUntilMs > now.getTime();
    });
    const ids = inputs.map((_, i) => (held[i] ? undefined : this.#db.nextTaskId()));
    // Dependencies (docs/contract.md#dependencies): every `after` id must name a task, live or finished, before anything is staged (after the ids are drawn: PostgreSQL's failed insert has drawn them too).
    for (const [n, input] of inputs.entries()) {
      for (const [i, e] of (input.after ?? []).entries()) {
        if (e.id !== null && ws.getTask(e.id) === null) {
          if (tx === undefined) this.#db.rollback(ws);
          const field = inputs.length === 1 && n === 0 ? `after[${i}]` : `tasks[${n}].after[${i}]`;
          throw new ValidationError('DEPENDENCY_NOT_FOUND', field, `no task has id ${e.id} (live or in history; a DONE task not kept or pruned leaves none): nothing was written`);
        }
      }
    }
    const holders = inputs.map((input) => (input.key === null ? undefined : ws.liveByKey(input.kind, input.key)));
    const taken = holders.findIndex((holder) => holder !== undefined);
    if (onConflict === 'fail' && taken >= 0) {
      const input = inputs[taken] as NormalizedSchedule;
      if (tx === undefined) this.#db.rollback(ws);
      throw new DuplicateKeyError(input.kind, input.key as string, (holders[taken] as Task).id);
    }
    const scheduled = inputs.map((input, i): ScheduledTask => {
      const dueAt = input.runAt ?? new Date(now.getTime() + input.delayMs);
      let holder = holders[i];
      if (onConflict === 'throttle' && input.key !== null) {
        const row = ws.getThrottle(input.kind, input.key);
        if (row !== undefined && row.closedUntilMs > now.getTime()) {
          return { id: row.taskId, dueAt: new Date(row.dueAtMs), created: false, replaced: false, throttled: true };
        }
      }
      if (HANDS_OVER_KEY.includes(onConflict) && holder?.state === TaskState.CLAIMED) {
        ws.putTask({ ...holder, key: null });
        holder = undefined;
      }
      if (holder !== undefined) {
        const replacing = onConflict === 'replace' || onConflict === 'debounce';
        const step = replacing ? transition(holder, { type: 'replace', payload: JSON.parse(input.payloadText), dueAt }, now.getTime()) : null;
        const replaced = step !== null && resultOf(step, 'replace').replaced;
        if (replaced) ws.putTask(step?.task as Task);
        return { id: holder.id, dueAt: new Date(replaced ? dueAt : holder.dueAt), created: false, replaced };
      }
      const task: Task = {
        id: ids[i] as TaskId,
        kind: input.kind,
        key: input.key,
        queue: input.queue,
        priority: input.priority,
        payload: JSON.parse(input.payloadText),
        state: TaskState.SCHEDULED,
        dueAt,
        attempt: 0,
        failures: 0,
        maxAttempts: input.maxAttempts,
        leaseOwner: null,
        leaseUntil: null,
        cancelRequested: false,
        result: null,
        lastError: null,
        createdAt: now,
        updatedAt: now,
        ...(input.traceContext === null ? {} : { traceContext: { ...input.traceContext } }),
        ...(input.retry === null ? {} : { retry: { ...input.retry } }),
      };
      ws.putTask(task);
      if (input.limitKey !== null) ws.putLimitKey(task.id, input.limitKey);
      if (onConflict === 'throttle' && input.key !== null) {
        ws.putThrottle(input.kind, input.key, { closedUntilMs: now.getTime() + (throttleMs as number), taskId: task.id, dueAtMs: dueAt.getTime() });
      }
      return { id: task.id, dueAt: new Date(dueAt), created: true, replaced: false };
    });
    for (const [n, input] of inputs.entries()) {
      for (const e of input.after ?? []) {
        const dependency = e.id ?? (scheduled[e.index as number] as ScheduledTask).id;
        ws.dependencies.push({ dependent: (scheduled[n] as ScheduledTask).id, dependency, onFailure: e.onFailure });
      }
    }
    if (tx === undefined) this.#db.commit(ws);
    return scheduled;
  }

  #ownWriteSet(tx: MemoryTx): WriteSet {
    const ws = writeSetOf(tx);
    if (ws.db !== this.#db) throw new ValidationError('INVALID_OPTION', 'tx', 'belongs to another MemoryStore');
    return ws;
  }

  /** Applies one command to one task under its row lock and commits the change, if any. */
  async #apply(id: TaskId, command: Command): Promise<Step> {
    return this.#locks.run(id, () => {
      this.#assertOpen();
      const ws = this.#db.begin();
      const step = this.#stage(ws, id, command, this.#clock.now());
      this.#db.commit(ws);
      return step;
    });
  }

  /** Runs transition() on the committed row and stages the new row when it changed. */
  #stage(ws: WriteSet, id: TaskId, command: Command, nowMs: number): Step {
    const before = this.#db.tasks.get(id) ?? null;
    const step = transition(before, command, nowMs);
    if (step.task !== null && step.task !== before) {
      // DONE not kept (docs/contract.md#done-not-kept): the fenced delete, no history and no effect.
      if (step.result.type === 'complete' && step.result.drop === true) ws.dropTask(step.task);
      else ws.putTask(step.task);
    }
    return step;
  }

  /**
   * Applies `command` to `candidates` in order until `limit` of them were `accepted`, all in one
   * transaction (one statement in SQL).
   */
  #applyBatch(
    candidates: readonly Task[],
    command: Command,
    nowMs: number,
    limit: number,
    accepted: (result: Step) => boolean,
    admit: (task: Task) => boolean = () => true,
  ): { changed: Task[]; steps: { before: Task; result: Step }[] } {
    const ws = this.#db.begin();
    const steps: { before: Task; result: Step }[] = [];
    for (const before of candidates) {
      if (steps.length >= limit) break;
      if (!admit(before)) continue;
      const step = this.#stage(ws, before.id, command, nowMs);
      if (accepted(step)) steps.push({ before, result: step });
    }
    this.#db.commit(ws);
    return { changed: steps.map((s) => s.result.task as Task), steps };
  }

  /** Committed tasks in `state`, ordered by `key` then id (by priority, higher first, before that when `byPriority`). */
  #byState(state: TaskStateT, key: (task: Task) => number, byPriority = false): Task[] {
    const rank = (t: Task) => (byPriority ? -t.priority : 0);
    return [...this.#db.tasks.values()]
      .filter((t) => t.state === state)
      .sort((a, b) => rank(a) - rank(b) || key(a) - key(b) || compareIds(a.id, b.id));
  }

  #unlocked(state: TaskStateT, key: (task: Task) => number, byPriority = false): Task[] {
    return this.#byState(state, key, byPriority).filter((t) => !this.#locks.isLocked(t.id));
  }
}

/** Creates an in-memory store. @throws ValidationError INVALID_OPTION for bad options */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  return new MemoryStore(options);
}

type ResultOf<T extends Result['type']> = Extract<Result, { type: T }>;

function resultOf<T extends Result['type']>(step: Step, type: T): ResultOf<T> {
  if (step.result.type !== type) throw new Error(`transition returned a ${step.result.type} result for a ${type} command`);
  return step.result as ResultOf<T>;
}

/** The tasks a claim or peek of `params` may take: its queue, and its kinds when given (core `validateSelection`). */
function selection(params: { readonly queue?: unknown; readonly kinds?: unknown }): (task: Task) => boolean {
  const { queue, kinds } = validateSelection(params);
  const set = kinds === null ? null : new Set(kinds);
  return (t) => t.queue === queue && (set === null || set.has(t.kind));
}

function compareIds(a: TaskId, b: TaskId): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

function toClaimedTask(task: Task, nowMs: number): ClaimedTask {
  return {
    id: task.id,
    kind: task.kind,
    payload: structuredClone(task.payload),
    attempt: task.attempt,
    failures: task.failures,
    maxAttempts: task.maxAttempts,
    dueAt: new Date(task.dueAt),
    leaseUntil: new Date(task.leaseUntil as Date),
    claimedAt: new Date(nowMs),
    priority: task.priority,
    ...(task.traceContext === undefined ? {} : { traceContext: { ...task.traceContext } }),
    ...(task.retry === undefined ? {} : { retry: { ...task.retry } }),
  };
}
