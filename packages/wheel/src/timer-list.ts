/**
 * The intrusive doubly linked list behind every slot: O(1) append, O(1) unlink of any timer,
 * O(1) pop from the head. A timer knows the list it is on, which is what makes cancel
 * (STOP_TIMER in Varghese & Lauck, SOSP 1987) O(1): it unlinks the timer without searching.
 */

/** Where a timer is in its life. `pending` timers sit in exactly one slot (or the overdue list). */
export type TimerState = 'pending' | 'fired' | 'cancelled';

/** What `schedule*` returns: pass it to `cancel`. Read-only view of one timer. */
export interface TimerHandle<T> {
  /** The absolute tick the timer is due at. */
  readonly tick: number;
  /** The value handed to `onFire`. */
  readonly value: T;
  readonly state: TimerState;
}

/** One timer. Internal: callers only see it as a {@link TimerHandle}. */
export class TimerNode<T> implements TimerHandle<T> {
  state: TimerState = 'pending';
  prev: TimerNode<T> | undefined = undefined;
  next: TimerNode<T> | undefined = undefined;
  list: TimerList<T> | undefined = undefined;

  constructor(
    /** The wheel that owns the timer; cancel from another wheel is refused. */
    readonly owner: object,
    readonly tick: number,
    readonly value: T,
  ) {}
}

/** A slot: the timers of one (level, slot) pair, or the wheel's overdue list. */
export class TimerList<T> {
  head: TimerNode<T> | undefined = undefined;
  tail: TimerNode<T> | undefined = undefined;
  size = 0;

  append(node: TimerNode<T>): void {
    node.list = this;
    node.prev = this.tail;
    node.next = undefined;
    if (this.tail) this.tail.next = node;
    else this.head = node;
    this.tail = node;
    this.size++;
  }

  /** Removes `node`, which must be on this list. */
  unlink(node: TimerNode<T>): void {
    if (node.prev) node.prev.next = node.next;
    else this.head = node.next;
    if (node.next) node.next.prev = node.prev;
    else this.tail = node.prev;
    node.prev = undefined;
    node.next = undefined;
    node.list = undefined;
    this.size--;
  }

  /** Removes and returns the first timer, or undefined when empty. */
  shift(): TimerNode<T> | undefined {
    const node = this.head;
    if (node) this.unlink(node);
    return node;
  }
}
