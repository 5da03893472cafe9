/**
 * Dependencies in the memory store (docs/contract.md#dependencies), with the PostgreSQL store's
 * semantics: a dependent is held (due time {@link HELD_DUE_AT_MS}, never claimed) until every
 * dependency is terminal; the commit that makes the last one terminal releases it at
 * `max(own due time, last finish)`, or cancels it (and cascades) for a `'cancel'` edge whose
 * dependency ended DEAD or CANCELLED. All of it runs inside `MemoryDatabase.commit`, synchronously,
 * so no other commit interleaves: the in-process equivalent of the trigger running in the
 * finishing transaction under the dependent's row lock.
 */
import { type DependencyFailurePolicy, dependencyCancelReason, HELD_DUE_AT_MS, isTerminal, type Task, type TaskId, TaskState } from '@postpone/core';

/** An edge staged by a schedule, applied at its commit. */
export interface StagedDependency {
  readonly dependent: TaskId;
  readonly dependency: TaskId;
  readonly onFailure: DependencyFailurePolicy;
}

interface Held {
  waiting: number;
  /** Own due time, raised to each finish as dependencies end. */
  dueMs: number;
}

/** The edge table and the held dependents of one memory database. */
export class MemoryDependencies {
  /** dependency → its edges (the `task_dependency` rows). */
  readonly #edges = new Map<TaskId, { dependent: TaskId; onFailure: DependencyFailurePolicy }[]>();
  /** dependent → its count and own due time (`waiting_for`, `held_due_at`). */
  readonly #held = new Map<TaskId, Held>();

  /**
   * After a reschedule of `id` committed (its `dueAt` the new due time): a task still waiting keeps
   * waiting — the new time becomes its own due time and `dueAt` goes back to the held one.
   */
  rescheduled(tasks: Map<TaskId, Task>, id: TaskId): void {
    const h = this.#held.get(id);
    const task = tasks.get(id);
    if (h === undefined || h.waiting <= 0 || task === undefined || task.state !== TaskState.SCHEDULED) return;
    h.dueMs = task.dueAt.getTime();
    tasks.set(id, { ...task, dueAt: new Date(HELD_DUE_AT_MS) });
  }

  /** For getTask: the waiting count and own due time of a held task, or undefined. */
  waiting(id: TaskId): { waitingFor: number; dueAt: Date } | undefined {
    const h = this.#held.get(id);
    return h === undefined || h.waiting <= 0 ? undefined : { waitingFor: h.waiting, dueAt: new Date(h.dueMs) };
  }

  /**
   * Runs after a commit applied its task rows (`tasks` the committed table): links the staged edges
   * (a dependency terminal by now counts as finished), then releases or cancels the dependents of
   * every task the commit made terminal, cascading. Returns the tasks it changed.
   */
  afterCommit(tasks: Map<TaskId, Task>, staged: readonly StagedDependency[], finished: readonly Task[]): Task[] {
    const changed = new Map<TaskId, Task>();
    const queue: Task[] = [...finished];
    const cancel = (id: TaskId, reason: string, atMs: number) => {
      const task = tasks.get(id);
      const h = this.#held.get(id);
      if (task === undefined || task.state !== TaskState.SCHEDULED || h === undefined) return;
      this.#held.delete(id);
      const next: Task = { ...task, state: TaskState.CANCELLED, dueAt: new Date(h.dueMs), lastError: reason, updatedAt: new Date(Math.max(atMs, task.updatedAt.getTime())) };
      tasks.set(id, next);
      changed.set(id, next);
      queue.push(next);
    };
    // Link: per dependent, count the dependencies still live.
    const byDependent = new Map<TaskId, StagedDependency[]>();
    for (const e of staged) byDependent.set(e.dependent, [...(byDependent.get(e.dependent) ?? []), e]);
    for (const [id, edges] of byDependent) {
      const task = tasks.get(id);
      if (task === undefined || task.state !== TaskState.SCHEDULED) continue;
      const h: Held = { waiting: 0, dueMs: task.dueAt.getTime() };
      let reason: string | null = null;
      for (const e of edges) {
        const dep = tasks.get(e.dependency);
        if (dep !== undefined && !isTerminal(dep.state)) {
          h.waiting += 1;
          this.#edges.set(e.dependency, [...(this.#edges.get(e.dependency) ?? []), { dependent: id, onFailure: e.onFailure }]);
          continue;
        }
        if (dep !== undefined) h.dueMs = Math.max(h.dueMs, dep.updatedAt.getTime());
        if (reason === null && dep !== undefined && e.onFailure === 'cancel' && (dep.state === TaskState.DEAD || dep.state === TaskState.CANCELLED)) reason = dependencyCancelReason(e.dependency, dep.state);
      }
      this.#held.set(id, h);
      const next: Task = { ...task, dueAt: new Date(h.waiting > 0 ? HELD_DUE_AT_MS : h.dueMs) };
      tasks.set(id, next);
      changed.set(id, next);
      if (reason !== null) cancel(id, reason, task.updatedAt.getTime());
      else if (h.waiting === 0) this.#held.delete(id);
    }
    // Release: every task made terminal, in order, cascading through cancelled dependents.
    for (let i = 0; i < queue.length; i++) {
      const done = queue[i] as Task;
      // A held task made terminal (a cancel) keeps its own due time, not the held one, as in PostgreSQL's history.
      const own = this.#held.get(done.id);
      if (own !== undefined && done.dueAt.getTime() === HELD_DUE_AT_MS) {
        const kept: Task = { ...done, dueAt: new Date(own.dueMs) };
        tasks.set(done.id, kept);
        changed.set(done.id, kept);
      }
      this.#held.delete(done.id);
      const edges = this.#edges.get(done.id);
      if (edges === undefined) continue;
      this.#edges.delete(done.id);
      const finishMs = done.updatedAt.getTime();
      for (const e of edges) {
        const h = this.#held.get(e.dependent);
        const task = tasks.get(e.dependent);
        if (h === undefined || task === undefined || task.state !== TaskState.SCHEDULED || h.waiting <= 0) continue;
        if (e.onFailure === 'cancel' && (done.state === TaskState.DEAD || done.state === TaskState.CANCELLED)) {
          cancel(e.dependent, dependencyCancelReason(done.id, done.state), finishMs);
          continue;
        }
        h.waiting -= 1;
        h.dueMs = Math.max(h.dueMs, finishMs);
        if (h.waiting > 0) continue;
        this.#held.delete(e.dependent);
        const next: Task = { ...task, dueAt: new Date(h.dueMs), updatedAt: new Date(Math.max(finishMs, task.updatedAt.getTime())) };
        tasks.set(e.dependent, next);
        changed.set(e.dependent, next);
      }
    }
    return [...changed.values()];
  }
}
