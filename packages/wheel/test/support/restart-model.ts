/**
 * An in-process model of "wheel as a cache of the durable store" (docs/contract.md#discovery), for the
 * `wheel_restart_needs_durable` evidence case. Time is a controlled integer clock in ms; the wheel
 * ticks every 1 ms.
 *
 * - The **store** (durable) is a Map of tasks: due time, state, and how often each was executed.
 * - A **worker** keeps a wheel holding only tasks due within its horizon, loading more from the
 *   store every `loadEveryMs`. On fire it claims the task (SCHEDULED -> RUNNING, executions + 1)
 *   and commits it (RUNNING -> DONE) `workMs` later; the pending commit lives only in memory.
 * - A **crash** loses the worker: its wheel, what it had loaded, and every uncommitted commit.
 */
import { TimingWheel } from '../../src/index.js';
import { randomInt } from '@postpone/testkit';

export type TaskState = 'SCHEDULED' | 'RUNNING' | 'DONE';

export interface StoredTask {
  readonly id: number;
  readonly dueMs: number;
  /** How long one execution takes before it commits, ms. */
  readonly workMs: number;
  state: TaskState;
  executions: number;
}

export type Store = Map<number, StoredTask>;

export function createStore(random: () => number, tasks: number, dueRangeMs: number, workMs: [number, number]): Store {
  const store: Store = new Map();
  for (let id = 0; id < tasks; id++) {
    store.set(id, {
      id,
      dueMs: randomInt(random, 1, dueRangeMs - 1),
      workMs: randomInt(random, workMs[0], workMs[1]),
      state: 'SCHEDULED',
      executions: 0,
    });
  }
  return store;
}

export function cloneStore(store: Store): Store {
  return new Map([...store].map(([id, task]) => [id, { ...task }]));
}

type WheelEvent = { kind: 'fire'; id: number } | { kind: 'commit'; id: number };

export interface WorkerOptions {
  /** Load tasks from the store at all (false: an empty wheel that only hears of new tasks). */
  loadFromStore: boolean;
  /** On its first load, also take RUNNING tasks: orphans of a crashed worker (lease lost). */
  recoverOrphans: boolean;
  loadEveryMs: number;
}

export class ModelWorker {
  readonly wheel: TimingWheel<WheelEvent>;
  /** Task ids this worker put into its wheel (memory only). */
  readonly loaded = new Set<number>();
  private loads = 0;

  constructor(
    private readonly store: Store,
    private readonly startMs: number,
    private readonly options: WorkerOptions,
  ) {
    this.wheel = new TimingWheel<WheelEvent>({
      levels: 3,
      slotsPerLevel: 64,
      tickMs: 1,
      startMs,
      onFire: (event) => this.onFire(event),
    });
  }

  /** Advances the worker's clock to `nowMs`: fires what is due, and loads on its schedule. */
  runUntil(nowMs: number): void {
    this.wheel.advanceTo(this.wheel.tickForTime(nowMs));
    if ((nowMs - this.startMs) % this.options.loadEveryMs === 0) this.load();
  }

  /** Puts every eligible task due within the horizon into the wheel (already due: fires at once). */
  private load(): void {
    if (!this.options.loadFromStore) return;
    const takeOrphans = this.options.recoverOrphans && this.loads === 0;
    this.loads++;
    for (const task of this.store.values()) {
      if (this.loaded.has(task.id)) continue;
      if (!(task.state === 'SCHEDULED' || (takeOrphans && task.state === 'RUNNING'))) continue;
      const tick = this.wheel.tickForDueTime(task.dueMs);
      if (tick - this.wheel.currentTick >= this.wheel.horizonTicks) continue; // stays in the store
      this.wheel.scheduleAt(tick, { kind: 'fire', id: task.id });
      this.loaded.add(task.id);
    }
  }

  private onFire(event: WheelEvent): void {
    const task = this.store.get(event.id);
    if (!task) return;
    if (event.kind === 'fire') {
      if (task.state === 'DONE') return;
      task.state = 'RUNNING'; // claim
      task.executions++;
      this.wheel.scheduleAfter(task.workMs, { kind: 'commit', id: task.id });
    } else if (task.state === 'RUNNING') {
      task.state = 'DONE'; // commit
    }
  }
}

/** Runs `worker` ms by ms from `fromMs` to `toMs`, both inclusive (a worker loads at its start). */
export function runWorker(worker: ModelWorker, fromMs: number, toMs: number): void {
  for (let ms = fromMs; ms <= toMs; ms++) worker.runUntil(ms);
}

export function countBy(store: Store, predicate: (task: StoredTask) => boolean): number {
  let n = 0;
  for (const task of store.values()) if (predicate(task)) n++;
  return n;
}
