/**
 * What the CLI's commands share: its two error classes (they decide the exit code) and the parsers of
 * option values.
 */

/** Bad usage found by the CLI itself (exit 2). */
export class UsageError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A command that ran but did not succeed (exit 1), e.g. NOT_FOUND. */
export class OutcomeError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `500`, `500ms`, `30s`, `15m`, `2h`, `7d` → milliseconds; with `unit` `'required'` (prune's cut-offs)
 * a bare number other than 0 is refused.
 * @throws UsageError INVALID_OPTION for anything else
 */
export function parseDuration(text: string, field: string, unit: 'optional' | 'required' = 'optional'): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (m === null) throw new UsageError('INVALID_OPTION', `${field}: expected a duration such as ${unit === 'optional' ? '500, ' : ''}30s, 15m, 2h or 7d, got ${JSON.stringify(text)}`);
  // What deletes history takes no bare number but 0: "7" meant as 7 days would be 7 ms and prune nearly all of it.
  if (m[2] === undefined && unit === 'required' && Number(m[1]) !== 0) throw new UsageError('INVALID_OPTION', `${field}: give a unit (ms, s, m, h or d), such as 7d; a bare number would be milliseconds, got ${JSON.stringify(text)}`);
  return Number(m[1]) * (UNITS[m[2] ?? 'ms'] as number);
}

/**
 * RFC 3339 / ISO 8601: a date alone (`2030-01-01`, midnight UTC), or a date and time with its offset
 * (`2030-01-01T12:00:00Z`, `2030-01-01 12:00+02:00`, `+0200` or `+02`; seconds and a fraction
 * optional), which covers what psql prints for a timestamptz (`2030-01-01 12:00:00.123456+00`).
 */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

/**
 * An absolute time given on the command line (`--run-at`, `--due-from`, `--before`, …) → Date.
 * Only ISO 8601 as {@link ISO_TIME} describes: `new Date(text)` alone would take `5` as May 2001,
 * `March 7` as a day of 2001 and `2030-02-30` as March 2nd, and a time without offset as the
 * machine's local time; each of those is refused here, so a typo never becomes a due time.
 * @throws UsageError INVALID_RUN_AT naming `field` for any other text, or a date or time that does
 *         not exist (year 0000, month 13, February 30th, hour 24, offset above 23:59)
 */
export function parseTime(text: string, field: string): Date {
  const refuse = (why: string) =>
    new UsageError('INVALID_RUN_AT', `${field}: expected an ISO 8601 time with its offset, such as 2030-01-01T12:00:00Z, or a date (midnight UTC)${why}, got ${JSON.stringify(text)}`);
  const m = ISO_TIME.exec(text.trim());
  if (m === null) throw refuse('');
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4] ?? '0', m[5] ?? '0', m[6] ?? '0'].map(Number) as [number, number, number, number, number, number];
  if (m[4] !== undefined && m[8] === undefined) throw refuse(' (a time needs its offset: Z or +hh:mm)');
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !isLeapYear(year) ? 1 : 0);
  const offsetHours = Number(m[10] ?? 0);
  const offsetMinutes = Number(m[11] ?? 0);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) {
    throw refuse(': no such date or time');
  }
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number((m[7] ?? '').padEnd(3, '0').slice(0, 3)));
  const sign = m[9] === '-' ? -1 : 1;
  const time = new Date(date.getTime() - sign * (offsetHours * 60 + offsetMinutes) * 60_000);
  // The offset may carry 0001-01-01 back into year 0 or 9999-12-31 into year 10000: outside what a
  // due time may be (the store's years 1..9999), refused here with the option's name.
  if (time.getUTCFullYear() < 1 || time.getUTCFullYear() > 9999) throw refuse(': outside years 0001..9999');
  return time;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** @throws UsageError INVALID_OPTION when `text` is not a decimal integer */
export function parseInteger(text: string, field: string): number {
  if (!/^-?\d+$/.test(text.trim())) throw new UsageError('INVALID_OPTION', `${field}: expected an integer, got ${JSON.stringify(text)}`);
  return Number(text);
}

/** The terminal states `--retention` names, as the store's `prune({ retention })` takes them. */
export const RETENTION_STATES = ['DONE', 'DEAD', 'CANCELLED'] as const;
export type RetentionState = (typeof RETENTION_STATES)[number];

/**
 * `DONE=1d,DEAD=7d,CANCELLED=7d` (any of the three states, each once, in any case; durations as
 * {@link parseDuration}) → `{ DONE: 86400000, … }` for `store.prune({ retention })`
 * (docs/contract.md#retention).
 * @throws UsageError INVALID_OPTION for an empty list, a part without `=`, an unknown or repeated state, a bad duration
 */
export function parseRetention(text: string, field: string): Partial<Record<RetentionState, number>> {
  const retention: Partial<Record<RetentionState, number>> = {};
  for (const part of text.split(',')) {
    const m = /^\s*([A-Za-z]+)\s*=(.*)$/.exec(part);
    if (m === null) throw new UsageError('INVALID_OPTION', `${field}: expected STATE=duration[,STATE=duration…] such as DONE=1d,DEAD=7d, got ${JSON.stringify(text)}`);
    const state = (m[1] as string).toUpperCase() as RetentionState;
    if (!RETENTION_STATES.includes(state)) {
      throw new UsageError('INVALID_OPTION', `${field}: unknown state ${JSON.stringify(m[1])}; expected ${RETENTION_STATES.join(', ')}`);
    }
    if (retention[state] !== undefined) throw new UsageError('INVALID_OPTION', `${field}: ${state} given twice`);
    retention[state] = parseDuration(m[2] as string, `${field} ${state}`, 'required');
  }
  return retention;
}
