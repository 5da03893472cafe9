/**
 * The per-key backlog in memory (`KeyBacklogStore` of `@postpone/core`, docs/contract.md#key-backlog):
 * the figures of the PostgreSQL store's `keyBacklog` statement, from the live keyed tasks
 * (`MemoryDatabase.limitKeys`) and the store's clock.
 */
import {
  compareKeyBacklogEntries,
  encodeKeyBacklogCursor,
  type KeyBacklogEntry,
  type KeyBacklogPage,
  type KeyBacklogParams,
  type Task,
  type TaskId,
  TaskState,
  validateKeyBacklogParams,
} from '@postpone/core';

/**
 * One page of the backlog of `params.kind` over `limitKeys` (task id → limit key of the live keyed
 * tasks), reading each task with `taskOf`; `nowMs` is the store's clock.
 * @throws ValidationError (core `validateKeyBacklogParams`)
 */
export function memoryKeyBacklog(params: KeyBacklogParams, limitKeys: ReadonlyMap<TaskId, string>, taskOf: (id: TaskId) => Task | undefined, nowMs: number): KeyBacklogPage {
  const p = validateKeyBacklogParams(params);
  const byKey = new Map<string, { due: number; notDue: number; claimed: number; oldestMs: number | null }>();
  for (const [id, limitKey] of limitKeys) {
    const task = taskOf(id);
    if (task === undefined || task.kind !== p.kind || (task.state !== TaskState.SCHEDULED && task.state !== TaskState.CLAIMED)) continue;
    let e = byKey.get(limitKey);
    if (e === undefined) byKey.set(limitKey, (e = { due: 0, notDue: 0, claimed: 0, oldestMs: null }));
    const dueMs = task.dueAt.getTime();
    if (task.state === TaskState.CLAIMED) e.claimed += 1;
    else if (dueMs <= nowMs) {
      e.due += 1;
      e.oldestMs = e.oldestMs === null ? dueMs : Math.min(e.oldestMs, dueMs);
    } else e.notDue += 1;
  }
  const all: KeyBacklogEntry[] = [...byKey].map(([limitKey, e]) => ({
    limitKey,
    due: e.due,
    notDue: e.notDue,
    claimed: e.claimed,
    oldestDueAt: e.oldestMs === null ? null : new Date(e.oldestMs),
    latenessMs: e.oldestMs === null ? 0 : Math.max(0, nowMs - e.oldestMs),
  }));
  const after = p.after;
  const rest = (after === null ? all : all.filter((e) => compareKeyBacklogEntries(after, e) < 0)).sort(compareKeyBacklogEntries);
  const entries = rest.slice(0, p.limit);
  const last = entries.at(-1);
  return { kind: p.kind, entries, nextCursor: rest.length > p.limit && last !== undefined ? encodeKeyBacklogCursor(last) : null };
}
