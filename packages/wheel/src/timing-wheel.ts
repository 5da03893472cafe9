/**
 * The hierarchical timing wheel (Varghese & Lauck, SOSP 1987; IEEE/ACM ToN 1997, scheme 7).
 */
import { WheelCallbackError, WheelHorizonError, WheelReentryError } from './errors.js';
import { TimerList, TimerNode, type TimerHandle } from './timer-list.js';
import { assertFiniteMs, assertTickValue } from './validate.js';
import { resolveWheelConfig, type TimingWheelOptions } from './wheel-config.js';

/** Counters since construction. */
export interface WheelStats {
  /** Timers accepted by `scheduleAt` / `scheduleAfter`. */
  scheduled: number;
  /** Timers whose `onFire` was called. */
  fired: number;
  /** Successful `cancel` calls. */
  cancelled: number;
  /** Timer moves from a coarser level to a finer one. */
  cascades: number;
  /** Pending timers (scheduled, neither fired nor cancelled). */
  size: number;
}

/**
 * A hierarchical timing wheel: Varghese & Lauck, "Hashed and Hierarchical Timing Wheels: Data
 * Structures for the Efficient Implementation of a Timer Facility", SOSP 1987; extended in
 * IEEE/ACM Transactions on Networking 5(6), 1997 (scheme 7, hierarchical wheels).
 *
 * Terms:
 * - **tick**: the unit of time of the wheel (`tickMs` milliseconds); ticks are absolute integers
 *   counted from tick 0 = `startMs`. The wheel's *current tick* is the last tick it processed.
 * - **level** l (0 = finest) has `slotsPerLevel` (S) **slots**; one slot of level l spans S^l ticks.
 * - **horizon**: S^levels ticks. A timer must be due less than a horizon ahead of the current tick.
 * - **cascade**: when the current tick reaches the start of a level-l slot's span (l >= 1), the
 *   timers of that slot move to finer levels (or to the level-0 slot of this very tick).
 *
 * Placement: a timer due `delta` ticks ahead goes to the lowest level l with delta < S^(l+1), in
 * slot `floor(tick / S^l) mod S`. That slot is next visited exactly at the start of the timer's
 * level-l span, which lies in (current, tick]; so a timer is cascaded at most `levels - 1` times and
 * fires exactly at its tick. A timer due at or before the current tick goes to an *overdue* list
 * that fires at the start of the next `advanceTo` (or at the end of the tick being processed, when
 * scheduled from inside `onFire`): it is never lost.
 *
 * The wheel is pure: no clock, no I/O. A driver (see `WheelDriver`) maps time to ticks.
 *
 * @example
 * const wheel = new TimingWheel<string>({ tickMs: 10, onFire: (taskId) => claim(taskId) });
 * const handle = wheel.scheduleAt(wheel.tickForDueTime(dueMs), 'task-1');
 * wheel.cancel(handle); // true
 * wheel.advanceTo(wheel.tickForTime(nowMs)); // fires everything due, in tick order
 */
export class TimingWheel<T> {
  /** Milliseconds per tick. */
  readonly tickMs: number;
  readonly levels: number;
  readonly slotsPerLevel: number;
  /** The time (ms) tick 0 stands for. */
  readonly startMs: number;
  /** `slotsPerLevel ** levels`; scheduling at `delta >= horizonTicks` throws. */
  readonly horizonTicks: number;

  private readonly spans: readonly number[];
  /** Level l, slot s is `slots[l * slotsPerLevel + s]`. */
  private readonly slots: TimerList<T>[] = [];
  private readonly overdue = new TimerList<T>();
  private readonly onFire: TimingWheelOptions<T>['onFire'];
  private current = 0;
  /** Pending timers in slots (all pending timers minus the overdue list). */
  private inSlots = 0;
  private advancing = false;
  private readonly counters = { scheduled: 0, fired: 0, cancelled: 0, cascades: 0 };

  /**
   * @param options `onFire` (required), `tickMs` (default 1), `levels` (default 3),
   *   `slotsPerLevel` (default 64, a power of two), `startMs` (default 0).
   * @throws {WheelConfigError} for an invalid option.
   */
  constructor(options: TimingWheelOptions<T>) {
    const config = resolveWheelConfig(options);
    this.tickMs = config.tickMs;
    this.levels = config.levels;
    this.slotsPerLevel = config.slotsPerLevel;
    this.startMs = config.startMs;
    this.horizonTicks = config.horizonTicks;
    this.spans = config.spans;
    this.onFire = options.onFire;
    for (let i = 0; i < this.levels * this.slotsPerLevel; i++) this.slots.push(new TimerList<T>());
  }

  /** The last tick processed (0 before the first advance). */
  get currentTick(): number {
    return this.current;
  }

  /** Pending timers. O(1). */
  get size(): number {
    return this.inSlots + this.overdue.size;
  }

  /**
   * Schedules `value` to fire at absolute tick `tick`. O(levels) = O(1) for a fixed geometry.
   * A tick at or before the current tick fires at the next advance.
   * @throws {WheelTickError} if `tick` is not a non-negative safe integer.
   * @throws {WheelHorizonError} if `tick - currentTick >= horizonTicks`.
   */
  scheduleAt(tick: number, value: T): TimerHandle<T> {
    assertTickValue('tick', tick);
    const delta = tick - this.current;
    if (delta >= this.horizonTicks) throw new WheelHorizonError(delta, this.horizonTicks);
    const node = new TimerNode<T>(this, tick, value);
    if (delta <= 0) this.overdue.append(node);
    else this.placeInSlot(node);
    this.counters.scheduled++;
    return node;
  }

  /**
   * Schedules `value` to fire `delayTicks` after the current tick (0 = at the next advance).
   * @throws {WheelTickError} if `delayTicks` is not a non-negative safe integer.
   * @throws {WheelHorizonError} if `delayTicks >= horizonTicks`.
   */
  scheduleAfter(delayTicks: number, value: T): TimerHandle<T> {
    assertTickValue('delayTicks', delayTicks);
    return this.scheduleAt(this.current + delayTicks, value);
  }

  /**
   * Cancels a pending timer. O(1). Idempotent.
   * @returns true if the timer was pending and will now never fire; false if it already fired,
   *   was already cancelled, or is not a handle of this wheel.
   */
  cancel(handle: TimerHandle<T>): boolean {
    if (!(handle instanceof TimerNode) || handle.owner !== this || handle.state !== 'pending') return false;
    const node = handle as TimerNode<T>;
    const list = node.list;
    if (list) {
      list.unlink(node);
      if (list !== this.overdue) this.inSlots--;
    }
    node.state = 'cancelled';
    this.counters.cancelled++;
    return true;
  }

  /**
   * Processes every tick from `currentTick + 1` to `tick`, in order: at each tick, cascades the
   * coarse slots whose span starts there, then fires the tick's level-0 slot. Overdue timers fire
   * first, at the current tick. A `tick` at or before the current tick only fires overdue timers
   * (a clock that stepped back moves nothing).
   *
   * Cost: O(ticks advanced + timers fired + timers cascaded); a jump over a stretch with no pending
   * timers is O(1).
   * @returns the number of timers fired.
   * @throws {WheelTickError} if `tick` is not a non-negative safe integer.
   * @throws {WheelReentryError} if called from inside `onFire`.
   * @throws {WheelCallbackError} if `onFire` threw; the wheel stops after the tick where it threw,
   *   with every timer due at that tick fired.
   */
  advanceTo(tick: number): number {
    assertTickValue('tick', tick);
    if (this.advancing) throw new WheelReentryError();
    this.advancing = true;
    const errors: unknown[] = [];
    let fired = 0;
    try {
      fired += this.fireAll(this.overdue, errors);
      for (let t = this.current + 1; t <= tick && errors.length === 0; t++) {
        if (this.size === 0) {
          this.current = tick;
          break;
        }
        this.current = t;
        this.cascadeAt(t);
        fired += this.fireAll(this.slotOf(0, t), errors);
        fired += this.fireAll(this.overdue, errors);
      }
    } finally {
      this.advancing = false;
    }
    if (errors.length > 0) throw new WheelCallbackError(errors, this.current);
    return fired;
  }

  /**
   * `advanceTo(currentTick + ticks)`. `advance(0)` fires only overdue timers.
   * @throws as {@link advanceTo}; {WheelTickError} if `ticks` is not a non-negative safe integer.
   */
  advance(ticks = 1): number {
    assertTickValue('ticks', ticks);
    return this.advanceTo(this.current + ticks);
  }

  /**
   * The earliest tick any pending timer is due at, or undefined when none is pending. A result
   * `<= currentTick` means overdue timers fire at the next advance.
   *
   * Cost: O(overdue timers) if any are overdue; otherwise O(levels × slotsPerLevel) slot checks
   * plus a scan of the first non-empty slot of each coarser level that could hold an earlier tick.
   */
  nextDueTick(): number | undefined {
    if (this.overdue.size > 0) return minTick(this.overdue);
    let best: number | undefined;
    const slotCount = this.slotsPerLevel;
    for (let i = 1; i < slotCount; i++) {
      if (this.slotOf(0, this.current + i).size > 0) {
        best = this.current + i;
        break;
      }
    }
    for (let l = 1; l < this.levels; l++) {
      const span = this.span(l);
      const block = Math.floor(this.current / span);
      for (let i = 1; i <= slotCount; i++) {
        if (best !== undefined && (block + i) * span >= best) break;
        const list = this.slotOf(l, (block + i) * span);
        if (list.size > 0) {
          const min = minTick(list);
          if (best === undefined || min < best) best = min;
          break;
        }
      }
    }
    return best;
  }

  /**
   * The tick the clock is in at time `ms`: `floor((ms - startMs) / tickMs)`, at least 0.
   * Use it for "advance to now".
   * @throws {WheelTickError} if `ms` is not finite.
   */
  tickForTime(ms: number): number {
    assertFiniteMs('ms', ms);
    return Math.max(0, Math.floor((ms - this.startMs) / this.tickMs));
  }

  /**
   * The first tick whose time is not before `ms`: `ceil((ms - startMs) / tickMs)`, at least 0.
   * Use it for a due time, so a timer never fires before it.
   * @throws {WheelTickError} if `ms` is not finite.
   */
  tickForDueTime(ms: number): number {
    assertFiniteMs('ms', ms);
    return Math.max(0, Math.ceil((ms - this.startMs) / this.tickMs));
  }

  /**
   * The time (ms) tick `tick` stands for: `startMs + tick * tickMs`.
   * @throws {WheelTickError} if `tick` is not a non-negative safe integer.
   */
  timeForTick(tick: number): number {
    assertTickValue('tick', tick);
    return this.startMs + tick * this.tickMs;
  }

  /** Counters since construction, and the pending size. O(1). */
  stats(): WheelStats {
    return { ...this.counters, size: this.size };
  }

  private span(level: number): number {
    return this.spans[level] as number;
  }

  /** The slot of `level` that holds tick `tick`. */
  private slotOf(level: number, tick: number): TimerList<T> {
    const index = Math.floor(tick / this.span(level)) % this.slotsPerLevel;
    return this.slots[level * this.slotsPerLevel + index] as TimerList<T>;
  }

  /** Puts a timer with `0 <= tick - current < horizon` into its slot (delta 0: this tick's level-0 slot). */
  private placeInSlot(node: TimerNode<T>): void {
    const delta = node.tick - this.current;
    let level = 0;
    while (level < this.levels - 1 && delta >= this.span(level + 1)) level++;
    this.slotOf(level, node.tick).append(node);
    this.inSlots++;
  }

  /** Moves the timers of every coarse slot whose span starts at `tick` to finer levels. */
  private cascadeAt(tick: number): void {
    if (tick % this.slotsPerLevel !== 0) return;
    for (let l = this.levels - 1; l >= 1; l--) {
      if (tick % this.span(l) !== 0) continue;
      const list = this.slotOf(l, tick);
      // Re-placed timers land on finer levels, never back on this list: the loop is bounded.
      for (let n = list.size; n > 0; n--) {
        const node = list.shift();
        if (!node) break;
        this.inSlots--;
        this.placeInSlot(node);
        this.counters.cascades++;
      }
    }
  }

  /**
   * Fires the timers on `list` at the current tick. Only the timers present on entry fire: one
   * re-armed into the overdue list by a callback waits for the next pass, so the loop is bounded.
   */
  private fireAll(list: TimerList<T>, errors: unknown[]): number {
    let fired = 0;
    for (let n = list.size; n > 0; n--) {
      const node = list.shift();
      if (!node) break;
      if (list !== this.overdue) this.inSlots--;
      node.state = 'fired';
      this.counters.fired++;
      fired++;
      try {
        this.onFire(node.value, this.current, node);
      } catch (error) {
        errors.push(error);
      }
    }
    return fired;
  }
}

function minTick<T>(list: TimerList<T>): number {
  let min = Number.POSITIVE_INFINITY;
  let node = list.head;
  for (let n = list.size; n > 0 && node; n--, node = node.next) min = Math.min(min, node.tick);
  return min;
}
