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

/** An expression must name a time within this many years of {@link REFERENCE_MS} (`0 0 30 2 *` names none). */
export const MAX_YEARS_TO_NEXT = 10;
/** The fixed reference the next-run check starts from: 2001-01-01T00:00:00Z (so the check does not depend on today). */
const REFERENCE_MS = Date.UTC(2001, 0, 1);

export class Occurrences {
  readonly #cron: Cron;

  /**
   * @throws ValidationError INVALID_OPTION naming `field.cron` (not 5 or 6 fields — croner also reads a
   *   7th, the year, which Postpone does not promise —, an expression croner refuses, or one that names no
   *   time in the `MAX_YEARS_TO_NEXT` years after 2001-01-01 in its zone, e.g. `0 0 30 2 *`) or
   *   `field.timeZone` (unknown zone)
   */
  constructor(
    readonly expression: string,
    readonly timeZone: string,
    field: string,
  ) {
    const fields = expression.trim().split(/\s+/).length;
    if (!expression.trim().startsWith('@') && fields !== 5 && fields !== 6) {
      throw new ValidationError('INVALID_OPTION', `${field}.cron`, `must have 5 fields (minute first) or 6 (seconds first), got ${fields}: ${JSON.stringify(expression)}`);
    }
    try {
      this.#cron = new Cron(expression, { timezone: timeZone, paused: true });
    } catch (error) {
      throw new ValidationError('INVALID_OPTION', `${field}.cron`, `is not a cron expression croner accepts: ${(error as Error).message}`, { cause: error });
    }
    let first: Date | null;
    try {
      first = this.#cron.nextRun(new Date(REFERENCE_MS));
    } catch (error) {
      throw new ValidationError('INVALID_OPTION', `${field}.timeZone`, `is not an IANA time zone: ${JSON.stringify(timeZone)}`, { cause: error });
    }
    // croner's own search is bounded and answers null for a date that never exists (30 February).
    if (first === null || first.getTime() > REFERENCE_MS + MAX_YEARS_TO_NEXT * 366 * 86_400_000) {
      throw new ValidationError('INVALID_OPTION', `${field}.cron`, `names no time in the next ${MAX_YEARS_TO_NEXT} years (from 2001-01-01): ${JSON.stringify(expression)} never fires`);
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
