/**
 * A source of "now" for a store. PostgreSQL stores use the database clock (`now()`,
 * `clock_timestamp()`) unless a Clock is injected, in which case its time enters every statement
 * as a parameter (tests and differential models only).
 */
export interface Clock {
  /** Wall time as epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

/** A clock that only moves when told to. */
export class TestClock implements Clock {
  private ms: number;
  constructor(start: number | Date = Date.UTC(2030, 0, 1)) {
    this.ms = typeof start === 'number' ? start : start.getTime();
  }
  now(): number {
    return this.ms;
  }
  /** Moves the clock forward by `ms` (non-negative). */
  tick(ms: number): void {
    if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`tick expects a non-negative finite ms, got ${ms}`);
    this.ms += ms;
  }
  setTime(ms: number | Date): void {
    this.ms = typeof ms === 'number' ? ms : ms.getTime();
  }
}
