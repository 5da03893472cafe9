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
