/**
 * The CLI's parser of absolute times (`--run-at`, `--due-from`, `--before`, …): ISO 8601 only. It
 * was `new Date(text)`, which a fresh user found taking `5` as May 2001 (due at once), `March 7` as a
 * day of 2001 and `2030-02-30` as March 2nd.
 */
import { describe, expect, it } from 'vitest';
import { parseTime, UsageError } from '../src/args.js';

function refusal(text: string): string {
  try {
    parseTime(text, '--run-at');
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).code).toBe('INVALID_RUN_AT');
    return (error as UsageError).message;
  }
  throw new Error(`${JSON.stringify(text)} was accepted`);
}

describe('parseTime', () => {
  it.each([
    ['2030-01-01T12:00:00Z', '2030-01-01T12:00:00.000Z'],
    ['2030-01-01t12:00:00z', '2030-01-01T12:00:00.000Z'],
    ['2030-01-01 12:00+02:00', '2030-01-01T10:00:00.000Z'],
    ['2030-01-01T12:00:00.123456789-0530', '2030-01-01T17:30:00.123Z'],
    ['2030-01-01T00:30:00+01:00', '2029-12-31T23:30:00.000Z'],
    // What psql prints for a timestamptz, pasted into --before (found in review: refused at first).
    ['2030-01-01 12:00:00.123456+00', '2030-01-01T12:00:00.123Z'],
    ['2030-01-01T12:00+05', '2030-01-01T07:00:00.000Z'],
    ['2030-01-01', '2030-01-01T00:00:00.000Z'],
    ['2028-02-29', '2028-02-29T00:00:00.000Z'],
    ['2000-02-29T23:59:59Z', '2000-02-29T23:59:59.000Z'],
    ['0099-06-01', '0099-06-01T00:00:00.000Z'],
    [' 2030-01-01T12:00:00Z ', '2030-01-01T12:00:00.000Z'],
  ])('%j is %s', (text, iso) => {
    expect(parseTime(text, '--run-at').toISOString()).toBe(iso);
  });

  it.each(['5', '2030', 'March 7', '12/31/2030', 'tomorrow', '', '2030-1-1', '2030-01-01T12', '+02030-01-01', '2030-01-01T12:00:00 Z'])('refuses %j as not ISO 8601', (text) => {
    expect(refusal(text)).toBe(`--run-at: expected an ISO 8601 time with its offset, such as 2030-01-01T12:00:00Z, or a date (midnight UTC), got ${JSON.stringify(text)}`);
  });

  it.each(['0000-01-01', '2030-02-30', '2029-02-29', '1900-02-29', '2030-13-01', '2030-00-10', '2030-04-31', '2030-01-01T24:00:00Z', '2030-01-01T12:60Z', '2030-01-01T12:00:60Z', '2030-01-01T12:00+24:00'])(
    'refuses %j: no such date or time (never rolled over)',
    (text) => {
      expect(refusal(text)).toMatch(/: no such date or time, got /);
    },
  );

  it.each(['0001-01-01T00:00+01', '9999-12-31T23:30-01'])('refuses %j: its offset carries it outside years 0001..9999', (text) => {
    expect(refusal(text)).toMatch(/: outside years 0001\.\.9999, got /);
  });

  it('refuses a time without its offset (it would be the machine’s local time)', () => {
    expect(refusal('2030-01-01T12:00:00')).toMatch(/ \(a time needs its offset: Z or \+hh:mm\), got "2030-01-01T12:00:00"$/);
  });
});
