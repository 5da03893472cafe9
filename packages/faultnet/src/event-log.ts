/**
 * An append-only log of events with bounded, event-driven waits: `waitFor` resolves as soon as a
 * matching event is (or already was) appended, and rejects at its deadline or when the log is closed.
 */
import { WaitTimeoutError } from '@postpone/testkit';

/** An event as stored: the payload plus its position and the receiver's monotonic time. */
export type Logged<E> = E & {
  /** Position in the log, from 0. */
  readonly seq: number;
  /** `performance.now()` of the receiving process when the event arrived, in ms. */
  readonly receivedAt: number;
};

interface Waiter<E> {
  /** Called once per new event, in order. */
  readonly predicate: (event: Logged<E>) => boolean;
  readonly resolve: (event: Logged<E>) => void;
  readonly reject: (error: Error) => void;
}

export class EventLog<E extends object> {
  private readonly items: Logged<E>[] = [];
  private readonly waiters = new Set<Waiter<E>>();
  private closedReason: string | undefined;

  /** All events so far, in arrival order. */
  get events(): readonly Logged<E>[] {
    return this.items;
  }

  /** The `seq` the next event will get; pass it to `waitFor` to ignore earlier events. */
  mark(): number {
    return this.items.length;
  }

  push(event: E): Logged<E> {
    const logged = { ...event, seq: this.items.length, receivedAt: performance.now() } as Logged<E>;
    this.items.push(logged);
    for (const waiter of [...this.waiters]) {
      if (waiter.predicate(logged)) {
        this.waiters.delete(waiter);
        waiter.resolve(logged);
      }
    }
    return logged;
  }

  /** Events matching `predicate`, in order. */
  filter(predicate: (event: Logged<E>) => boolean): Logged<E>[] {
    return this.items.filter(predicate);
  }

  /**
   * The `nth` event (1 = the first) with `seq >= fromSeq` that matches, waiting up to `timeoutMs`.
   * @throws WaitTimeoutError at the deadline; Error when the log is closed first
   */
  waitFor(predicate: (event: Logged<E>) => boolean, timeoutMs: number, what = 'event', fromSeq = 0, nth = 1): Promise<Logged<E>> {
    let seen = 0;
    const counted = (event: Logged<E>) => event.seq >= fromSeq && predicate(event) && ++seen === nth;
    const found = this.items.find(counted);
    if (found) return Promise.resolve(found);
    if (this.closedReason !== undefined) return Promise.reject(new Error(`${what}: ${this.closedReason}`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new WaitTimeoutError(what, timeoutMs, `${nth > 1 ? `matched ${seen} of ${nth}; ` : ''}last events: ${this.tail(5)}`));
      }, timeoutMs);
      const waiter: Waiter<E> = {
        predicate: counted,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(new Error(`${what}: ${error.message}`));
        },
      };
      this.waiters.add(waiter);
    });
  }

  /**
   * Ends the log: pending waits reject with `reason` (after `finalEvent`, if given, had its chance
   * to satisfy them). Later `waitFor` calls only see the history.
   */
  close(reason: string, finalEvent?: E): void {
    if (finalEvent) this.push(finalEvent);
    this.closedReason = reason;
    for (const waiter of [...this.waiters]) {
      this.waiters.delete(waiter);
      waiter.reject(new Error(reason));
    }
  }

  /** The last `n` events as short JSON, for error messages. */
  tail(n: number): string {
    return this.items
      .slice(-n)
      .map(({ receivedAt: _r, ...rest }) => JSON.stringify(rest))
      .join(' ');
  }
}
