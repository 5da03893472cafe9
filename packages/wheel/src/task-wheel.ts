/**
 * The hybrid worker's cache of near tasks: a hierarchical timing wheel ({@link TimingWheel}) of task
 * ids, each placed at its due time on the worker's monotonic clock, and the bookkeeping that merges
 * a fresh read of the store into it without losing what notifications brought meanwhile.
 *
 * It is only a cache: it decides when to try a claim, never what is claimed. A timer fires at the
 * first tick not before its time (`ceil`), so never early and at most one tick late.
 */
import { isWheelError } from './errors.js';
import type { TimerHandle } from './timer-list.js';
import { TimingWheel } from './timing-wheel.js';

/** A task id (core `TaskId`): any string. */
type TaskId = string;

export interface TaskWheelOptions {
  readonly tickMs: number;
  readonly levels: number;
  readonly slotsPerLevel: number;
  /** The worker's monotonic clock (ms). */
  readonly now: () => number;
  /** Called for each timer that fires, inside {@link TaskWheel.advance}, with the task's due time (database clock, epoch ms). */
  readonly onFire: (id: TaskId, dueAtMs: number) => void;
}

/** One task as read from the store. */
export interface WaitingTask {
  readonly id: TaskId;
  /** Due time, database clock (epoch ms). */
  readonly dueAtMs: number;
}

/** What a load proves: every SCHEDULED task due before `throughMs` (or at it, when `inclusive`) was listed. */
export interface LoadWindow {
  readonly throughMs: number;
  readonly inclusive: boolean;
}

interface Entry {
  readonly handle: TimerHandle<TaskId>;
  readonly dueAtMs: number;
  /** When it was placed, on the wheel's change counter. */
  readonly version: number;
}

export class TaskWheel {
  private readonly wheel: TimingWheel<TaskId>;
  private readonly entries = new Map<TaskId, Entry>();
  private version = 0;
  /** While a load is in flight: ids whose timer went away since it was sent (fired, claimed, cancelled). */
  private goneSinceLoad: Set<TaskId> | null = null;

  constructor(private readonly options: TaskWheelOptions) {
    this.wheel = new TimingWheel<TaskId>({
      tickMs: options.tickMs,
      levels: options.levels,
      slotsPerLevel: options.slotsPerLevel,
      startMs: options.now(),
      onFire: (id, _tick, handle) => {
        const entry = this.entries.get(id);
        if (entry?.handle === handle) this.entries.delete(id);
        this.goneSinceLoad?.add(id);
        options.onFire(id, entry?.handle === handle ? entry.dueAtMs : Number.NaN);
      },
    });
  }

  /** Timers held. */
  get size(): number {
    return this.entries.size;
  }

  /** How far ahead of the wheel's current tick a timer may be placed, in ms. */
  get horizonMs(): number {
    return this.wheel.horizonTicks * this.wheel.tickMs;
  }

  has(id: TaskId): boolean {
    return this.entries.has(id);
  }

  /**
   * Places the timer of `id` at monotonic time `fireAtMs` (moved if it was elsewhere). A time already
   * past fires at the next {@link advance}.
   * @param dueAtMs the task's due time, database clock (kept to judge later loads)
   * @returns false when the time is beyond the wheel's horizon (nothing is held then)
   */
  place(id: TaskId, dueAtMs: number, fireAtMs: number): boolean {
    const tick = this.wheel.tickForDueTime(fireAtMs);
    const existing = this.entries.get(id);
    this.version += 1;
    if (existing !== undefined && existing.handle.tick === tick) {
      this.entries.set(id, { handle: existing.handle, dueAtMs, version: this.version });
      return true;
    }
    if (existing !== undefined) {
      this.wheel.cancel(existing.handle);
      this.entries.delete(id);
    }
    const handle = this.schedule(tick, id);
    if (handle === null) return false;
    this.entries.set(id, { handle, dueAtMs, version: this.version });
    return true;
  }

  /**
   * Moves every timer to `fireTime(its due time)`, e.g. after the database clock's offset was refined,
   * keeping what a load in flight knows of it (not a new placement). @returns how many timers moved
   */
  retime(fireTime: (dueAtMs: number) => number): number {
    let moved = 0;
    for (const [id, entry] of [...this.entries]) {
      const tick = this.wheel.tickForDueTime(fireTime(entry.dueAtMs));
      if (tick === entry.handle.tick) continue;
      this.wheel.cancel(entry.handle);
      const handle = this.schedule(tick, id);
      if (handle === null) this.entries.delete(id);
      else this.entries.set(id, { handle, dueAtMs: entry.dueAtMs, version: entry.version });
      moved += 1;
    }
    return moved;
  }

  /** Drops the timer of `id`. @returns whether one was held */
  remove(id: TaskId): boolean {
    const entry = this.entries.get(id);
    this.goneSinceLoad?.add(id);
    if (entry === undefined) return false;
    this.wheel.cancel(entry.handle);
    this.entries.delete(id);
    return true;
  }

  /** Fires every timer due by now (monotonic clock). @returns how many fired */
  advance(): number {
    return this.wheel.advanceTo(this.wheel.tickForTime(this.options.now()));
  }

  /** Monotonic time of the earliest timer (at or before now when one is overdue), or undefined when none is held. */
  nextFireAt(): number | undefined {
    const tick = this.wheel.nextDueTick();
    return tick === undefined ? undefined : this.wheel.timeForTick(tick);
  }

  /** Marks a load as sent; returns the token to pass to {@link finishLoad}. One load at a time. */
  beginLoad(): number {
    this.goneSinceLoad = new Set();
    this.version += 1;
    return this.version;
  }

  /**
   * Merges the answer of the load begun at `token`: places every listed task whose timer did not go
   * away since (one that fired, was claimed or cancelled meanwhile would only cost an empty claim) and
   * was not placed anew by a notification meanwhile (that one is newer), and drops timers the store no longer lists as waiting — inside the window, and placed before the
   * load was sent (a notification that came during the load is newer than its answer).
   * @param fireTime maps a due time (database clock) to the monotonic time its timer should fire
   */
  finishLoad(token: number, tasks: readonly WaitingTask[], window: LoadWindow, fireTime: (dueAtMs: number) => number): { placed: number; dropped: number } {
    const gone = this.goneSinceLoad ?? new Set<TaskId>();
    this.goneSinceLoad = null;
    const listed = new Set<TaskId>();
    let placed = 0;
    for (const task of tasks) {
      listed.add(task.id);
      if (gone.has(task.id) || (this.entries.get(task.id)?.version ?? 0) > token) continue;
      if (this.place(task.id, task.dueAtMs, fireTime(task.dueAtMs))) placed += 1;
    }
    let dropped = 0;
    for (const [id, entry] of this.entries) {
      const inside = window.inclusive ? entry.dueAtMs <= window.throughMs : entry.dueAtMs < window.throughMs;
      if (inside && entry.version < token && !listed.has(id)) {
        this.remove(id);
        dropped += 1;
      }
    }
    return { placed, dropped };
  }

  /** Forgets the in-flight load (it failed). */
  abandonLoad(): void {
    this.goneSinceLoad = null;
  }

  /** Schedules at `tick`; beyond the horizon, catches the wheel up to now and tries once more. */
  private schedule(tick: number, id: TaskId): TimerHandle<TaskId> | null {
    for (let tryNo = 0; tryNo < 2; tryNo++) {
      try {
        return this.wheel.scheduleAt(tick, id);
      } catch (error) {
        if (!isWheelError(error) || error.code !== 'WHEEL_HORIZON') throw error;
        if (tryNo === 0) this.advance();
      }
    }
    return null;
  }
}
