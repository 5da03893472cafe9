/**
 * The dependency part of `PostgresStore.schedule` / `scheduleMany` (docs/contract.md#dependencies):
 * run in the schedule's transaction, after the insert, only for a batch with `after`.
 */
import { dependencyCancelReason, type NormalizedSchedule, resolveDependencies, type ScheduledTask, ValidationError } from '@postpone/core';
import type { DependencyStatements } from '../sql/dependency-sql.js';
import type { QueryFn } from './driver.js';

/** Whether any input of the batch has dependencies. */
export function hasDependencies(tasks: readonly NormalizedSchedule[]): boolean {
  return tasks.some((t) => (t.after?.length ?? 0) > 0);
}

/**
 * Links the created tasks of a batch to their dependencies, in the schedule's transaction `query`:
 * locks the live dependencies (`dependencyLock`, id order), reads the terminal ones from history
 * (`dependencyFinished`, a later statement so a finish that committed meanwhile is seen), refuses
 * an id that is neither (DEPENDENCY_NOT_FOUND: the caller's transaction or the store's own rolls
 * back, nothing written), writes the edges and holds the dependents (`dependencyHold`), and cancels
 * at once a dependent whose `'cancel'` dependency already ended DEAD or CANCELLED (`dependencyCancel`).
 * @throws ValidationError DEPENDENCY_NOT_FOUND naming `after[i]` / `tasks[n].after[i]`
 */
export async function linkDependencies(query: QueryFn, sql: DependencyStatements, tasks: readonly NormalizedSchedule[], scheduled: readonly ScheduledTask[], now: string | null): Promise<void> {
  const edges = resolveDependencies(
    tasks.map((t) => t.after),
    scheduled.map((s) => s.id),
  );
  const wanted = [...new Set(edges.map((e) => e.dependency))];
  const live = new Set((await query(sql.dependencyLock, [JSON.stringify(wanted)])).map((r) => String(r.id)));
  const other = wanted.filter((id) => !live.has(id));
  const finished = new Map<string, { state: string; finishedAtMs: number }>();
  if (other.length > 0) {
    for (const r of await query(sql.dependencyFinished, [JSON.stringify(other)])) finished.set(String(r.id), { state: String(r.state), finishedAtMs: Number(r.finishedatms) });
  }
  // An id entry naming a task of this batch did not exist before the call (a task could wait for itself).
  const created = new Set(scheduled.map((s) => s.id));
  const missing = edges.find((e) => (!e.byIndex && created.has(e.dependency)) || (!live.has(e.dependency) && !finished.has(e.dependency)));
  if (missing !== undefined) {
    throw new ValidationError('DEPENDENCY_NOT_FOUND', missing.field, `no task has id ${missing.dependency} (live or in history; a DONE task not kept or pruned leaves none): nothing was written`);
  }
  const held = new Map<string, { waiting: number; lastFinishMs: number | null; reason: string | null }>();
  for (const e of edges) {
    const h = held.get(e.dependent) ?? { waiting: 0, lastFinishMs: null, reason: null };
    const end = finished.get(e.dependency);
    if (end === undefined) h.waiting += 1;
    else {
      h.lastFinishMs = Math.max(h.lastFinishMs ?? end.finishedAtMs, end.finishedAtMs);
      if (h.reason === null && e.onFailure === 'cancel' && (end.state === 'DEAD' || end.state === 'CANCELLED')) h.reason = dependencyCancelReason(e.dependency, end.state);
    }
    held.set(e.dependent, h);
  }
  const liveEdges = edges.filter((e) => live.has(e.dependency)).map((e) => ({ dependent: e.dependent, dependency: e.dependency, onFailure: e.onFailure }));
  const holds = [...held].map(([id, h]) => ({ id, waiting: h.waiting, lastFinish: h.lastFinishMs === null ? null : new Date(h.lastFinishMs).toISOString() }));
  await query(sql.dependencyHold, [JSON.stringify(liveEdges), JSON.stringify(holds)]);
  const doomed = [...held].filter(([, h]) => h.reason !== null).map(([id, h]) => ({ id, reason: h.reason }));
  if (doomed.length > 0) await query(sql.dependencyCancel, [JSON.stringify(doomed), now]);
}
