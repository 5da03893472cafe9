/**
 * Occurrences of a cron expression in a time zone, from croner (no parser of our own). croner 11
 * follows the DST rules of croner-rust, which `test/dst.test.ts` checks for the cases Postpone
 * promises (docs/contract.md#recurring-schedules):
 * - a fixed-time job (seconds, minutes and hours each one value) whose local time does not exist
 *   (spring forward) runs once, when the clock has jumped forward (02:30 → 03:00 in New York);
 * - a fixed-time job whose local time occurs twice (fall back) runs once, at the first occurrence;
 * - an interval job (`0 * * * *`) runs at every elapsed occurrence: 23 hourly runs on a
 *   spring-forward day, 25 on a fall-back day.
 * croner strips milliseconds: every occurrence is a whole second.
 */
import { ValidationError } from '@postpone/core';
import { Cron } from 'croner';

export class Occurrences {
  readonly #cron: Cron;

  /** @throws ValidationError INVALID_OPTION naming `field.cron` (bad expression) or `field.timeZone` (unknown zone) */
  constructor(
    readonly expression: string,
    readonly timeZone: string,
    field: string,
  ) {
    try {
      this.#cron = new Cron(expression, { timezone: timeZone, paused: true });
    } catch (error) {
      throw new ValidationError('INVALID_OPTION', `${field}.cron`, `is not a cron expression croner accepts: ${(error as Error).message}`, { cause: error });
    }
    try {
      this.#cron.nextRun(new Date(0));
    } catch (error) {
      throw new ValidationError('INVALID_OPTION', `${field}.timeZone`, `is not an IANA time zone: ${JSON.stringify(timeZone)}`, { cause: error });
    }
  }

  /** The first occurrence strictly after `afterMs`, or null when there is none. */
  next(afterMs: number): Date | null {
    return this.#cron.nextRun(new Date(afterMs));
  }

  /**
   * The occurrences strictly after `afterMs` and strictly before `beforeMs`, at most `limit` of them,
   * the LATEST ones, in ascending order.
   */
  latestBetween(afterMs: number, beforeMs: number, limit: number): Date[] {
    const out: Date[] = [];
    // croner's previousRuns(1, t) gives the run strictly before t with t's milliseconds cut off;
    // rounding t up to a whole second makes that "strictly before beforeMs". One step at a time,
    // so the walk stops at the first run not after `afterMs` (a watermark long ago costs `limit` steps).
    let reference = new Date(Math.ceil(beforeMs / 1000) * 1000);
    while (out.length < limit) {
      const [previous] = this.#cron.previousRuns(1, reference);
      if (previous === undefined || previous.getTime() <= afterMs) break;
      if (previous.getTime() < beforeMs) out.push(previous);
      reference = previous;
    }
    return out.reverse();
  }

  /** The occurrences strictly after `afterMs` and at most `untilMs`, at most `limit`, ascending. */
  between(afterMs: number, untilMs: number, limit: number): Date[] {
    const out: Date[] = [];
    let from = afterMs;
    while (out.length < limit) {
      const next = this.next(from);
      if (next === null || next.getTime() > untilMs) break;
      out.push(next);
      from = next.getTime();
    }
    return out;
  }
}
