/**
 * What the dashboard shows, read through the store's operations only (`stats`, `unclaimedKinds`, `listRateLimits`, `listTasks`,
 * `getTaskRecord`, `getCompletion`, `listPaused`): the live counts, the tasks due in the next hour, and the lateness of
 * recent claims. Times are the store's clock (`stats().now`, the database's `now()`), never this
 * process's.
 */
import { isKeyRateLimitStore, type KeyRateLimitRecord } from '@postpone/core';
import type { Completion, PausedEntry, RateLimitRecord, StoreStats, TaskRecord, TaskState, UnclaimedKinds } from '@postpone/core';
import { MAX_LIST_LIMIT, SchemaVersionError, StoreError } from '@postpone/core';
import { SqlState } from '@postpone/postgres';
import type { PostgresStore } from '@postpone/postgres';

/** The store methods the dashboard uses (the PostgreSQL store has them all). */
export type DashboardStore = Pick<PostgresStore<unknown>, 'stats' | 'unclaimedKinds' | 'listTasks' | 'getTaskRecord' | 'getCompletion' | 'retry' | 'cancel' | 'cancelMany' | 'retryMany' | 'deleteMany' | 'listPaused' | 'pause' | 'resume' | 'listRateLimits' | 'getBatch'>;

/** Width of one histogram bar: one minute. */
export const DUE_BUCKET_MS = 60_000;
/** The histogram's window: the next hour. */
export const DUE_WINDOW_MS = 3_600_000;
/** Most tasks the histogram reads (pages of {@link MAX_LIST_LIMIT}); beyond it the figure says `truncated`. */
export const MAX_DUE_TASKS = 5_000;
/** The kinds-nobody-claims read of the stats view: oldest task due this long (1 minute, the worker's default `unclaimedAfterMs`), none CLAIMED. */
export const UNCLAIMED_AFTER_MS = 60_000;
/** How many recent claimed / finished tasks the lateness chart reads. */
export const LATENESS_SAMPLE = 200;

export interface DueHistogram {
  /** Start of the first bucket (the store's now). */
  readonly from: Date;
  readonly bucketMs: number;
  /** Tasks per bucket, `DUE_WINDOW_MS / bucketMs` buckets: SCHEDULED with `from + i·bucketMs ≤ dueAt < from + (i+1)·bucketMs`. */
  readonly counts: readonly number[];
  /** Tasks counted. */
  readonly total: number;
  /** True when more than {@link MAX_DUE_TASKS} were due in the hour (only that many were counted). */
  readonly truncated: boolean;
}

/**
 * One recent claim. The store keeps no claim time (a task row has `dueAt` and `updatedAt`), so
 * `latenessMs = updatedAt − dueAt`:
 * - CLAIMED: `updatedAt` is the claim, or the last lease renewal after it;
 * - DONE: `updatedAt` is the completion, so the handler's run time is included.
 * Either way it is an upper bound of the claim's lateness (due → claim), exact for a CLAIMED task whose
 * lease was not renewed yet. `dueAt` is the due time of the last claim (a failed attempt's backoff
 * moves it), so this is the lateness of the last claim, not the first.
 */
export interface LatenessPoint {
  readonly id: string;
  readonly kind: string;
  readonly state: 'CLAIMED' | 'DONE';
  readonly at: Date;
  readonly latenessMs: number;
}

export interface Overview {
  readonly stats: StoreStats;
  /** Kinds due with nobody claiming (`store.unclaimedKinds({ dueForMs: UNCLAIMED_AFTER_MS })`). */
  readonly unclaimed: UnclaimedKinds;
  /** The paused queues and kinds (`store.listPaused`, docs/contract.md#pause-and-resume); none on a schema before migration 15. */
  readonly paused: readonly PausedEntry[];
  /** Rate limits of kinds and queues with their use now (`store.listRateLimits()`, docs/contract.md#rate-limits). */
  readonly rateLimits: readonly RateLimitRecord[];
  /**
   * Per-key rate limits with the keys held back now (`store.listKeyRateLimits()`,
   * docs/contract.md#per-key-rate-limits); none from a store without them (the sharded front) or on a
   * schema before migration 23.
   */
  readonly keyRateLimits: readonly KeyRateLimitRecord[];
  readonly due: DueHistogram;
  readonly lateness: readonly LatenessPoint[];
}

export interface TaskDetail {
  readonly task: TaskRecord;
  /** What history says of its DONE (attempt, worker, finish time); null unless DONE and kept. */
  readonly completion: Completion | null;
}

/** Counts the SCHEDULED tasks due in `[now, now + 1 h)` per minute, keyset page by page (bounded). */
export async function dueHistogram(store: DashboardStore, now: Date): Promise<DueHistogram> {
  const buckets = DUE_WINDOW_MS / DUE_BUCKET_MS;
  const counts = new Array<number>(buckets).fill(0);
  const dueBefore = new Date(now.getTime() + DUE_WINDOW_MS);
  let cursor: string | null = null;
  let total = 0;
  let truncated = false;
  for (let page = 0; page < MAX_DUE_TASKS / MAX_LIST_LIMIT; page++) {
    const result = await store.listTasks({ states: ['SCHEDULED'], dueFrom: now, dueBefore, order: 'oldest', limit: MAX_LIST_LIMIT, cursor });
    for (const task of result.tasks) {
      const i = Math.floor((task.dueAt.getTime() - now.getTime()) / DUE_BUCKET_MS);
      counts[Math.min(Math.max(i, 0), buckets - 1)]! += 1;
      total += 1;
    }
    cursor = result.nextCursor;
    if (cursor === null) break;
    if (page === MAX_DUE_TASKS / MAX_LIST_LIMIT - 1) truncated = true;
  }
  return { from: now, bucketMs: DUE_BUCKET_MS, counts, total, truncated };
}

/** The newest {@link LATENESS_SAMPLE} CLAIMED or DONE tasks (by id) as lateness points, oldest `at` first. */
export async function recentLateness(store: DashboardStore): Promise<LatenessPoint[]> {
  const states: TaskState[] = ['CLAIMED', 'DONE'];
  const { tasks } = await store.listTasks({ states, order: 'newest', limit: LATENESS_SAMPLE });
  return tasks
    .filter((t) => t.attempt > 0)
    .map((t) => ({
      id: t.id,
      kind: t.kind,
      state: t.state as 'CLAIMED' | 'DONE',
      at: t.updatedAt,
      latenessMs: Math.max(0, t.updatedAt.getTime() - t.dueAt.getTime()),
    }))
    .sort((a, b) => a.at.getTime() - b.at.getTime());
}

export async function overview(store: DashboardStore): Promise<Overview> {
  const stats = await store.stats();
  const [due, lateness, unclaimed, paused, rateLimits, keyRateLimits] = await Promise.all([
    dueHistogram(store, stats.now),
    recentLateness(store),
    store.unclaimedKinds({ dueForMs: UNCLAIMED_AFTER_MS }),
    pausedOrNone(store),
    store.listRateLimits(),
    keyRateLimitsOrNone(store),
  ]);
  return { stats, unclaimed, paused, rateLimits, keyRateLimits, due, lateness };
}

/**
 * The per-key rate limits for the dashboard: none from a store that has no `listKeyRateLimits` (the
 * sharded front) or whose schema predates migration 23 (no table: nothing can be declared there).
 */
export async function keyRateLimitsOrNone(store: unknown): Promise<KeyRateLimitRecord[]> {
  if (!isKeyRateLimitStore(store)) return [];
  try {
    return await store.listKeyRateLimits();
  } catch (error) {
    // A schema from 18 to 22 has no `key_rate_limit` table: 42P01 (undefined_table, PostgreSQL 17 Appendix A).
    if (StoreError.isInstance(error) && (error as StoreError).sqlState === SqlState.UNDEFINED_TABLE) return [];
    throw error;
  }
}

/**
 * The paused queues and kinds for `postpone stats` and the dashboard: none on a schema before
 * migration 15 (no `pause` table: nothing can be paused there), so both keep working on an older schema.
 */
export async function pausedOrNone(store: Pick<DashboardStore, 'listPaused'>): Promise<PausedEntry[]> {
  try {
    return await store.listPaused();
  } catch (error) {
    if (SchemaVersionError.isInstance(error) && error.code === 'SCHEMA_BEHIND') return [];
    throw error;
  }
}

/** A task with its completion, or null when there is no such task. */
export async function taskDetail(store: DashboardStore, id: string): Promise<TaskDetail | null> {
  const task = await store.getTaskRecord(id);
  if (task === null) return null;
  return { task, completion: await store.getCompletion(id) };
}
