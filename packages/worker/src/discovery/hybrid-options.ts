/**
 * Settings of hybrid discovery, their defaults and their validation (core `ValidationError`, code
 * INVALID_OPTION, naming the field as `hybrid.<field>`).
 */
import { MAX_DELAY_MS, rejectUnknownFields, ValidationError, validatePositiveInt, validatePositiveMs } from '@postpone/core';
import { MAX_TIMER_MS } from '@postpone/wheel';

/** How a worker finds due tasks: `poll` or `hybrid` (see the worker's `discovery` option). */
export type DiscoveryMode = 'poll' | 'hybrid';

/**
 * Defaults of {@link HybridOptions}. A 2 ms tick over 3 levels × 64 slots gives a horizon of
 * 64³ × 2 ms = 524 288 ms (about 8 min 44 s); the worker loads tasks due within half of it (262 s),
 * so a task is always in the wheel well before it is due, and a timer fires at most 2 ms late.
 */
export const HYBRID_DEFAULTS = Object.freeze({
  fallbackPollMs: 2_000,
  tickMs: 2,
  levels: 3,
  slotsPerLevel: 64,
  loadLimit: 1_000,
  pauseThresholdMs: 1_000,
});

/** Settings of hybrid discovery (timing wheel + notifications + fallback poll). */
export interface HybridOptions {
  /**
   * Period of the fallback re-read of the store (`peekDue`, no claim): finds what a notification
   * missed, and every task on a store without notifications (e.g. the in-memory store). Default 2 000.
   */
  readonly fallbackPollMs?: number;
  /** Wheel tick in whole ms: a timer fires at the first tick not before the task's due time. Default 2. */
  readonly tickMs?: number;
  /** Wheel levels, 1..6 (default 3). */
  readonly levels?: number;
  /** Slots per level, a power of two 2..4 096 (default 64). */
  readonly slotsPerLevel?: number;
  /** Most tasks one re-read lists (the `peekDue` limit), 1..10 000 (default 1 000). */
  readonly loadLimit?: number;
  /**
   * A stall of the worker (SIGSTOP, a frozen VM, a blocked event loop) longer than this, on the
   * monotonic clock, is a gap: the wheel is rebuilt from the store at once. Default 1 000.
   */
  readonly pauseThresholdMs?: number;
}

export type ResolvedHybridOptions = Required<HybridOptions>;

const MAX_WHEEL_LEVELS = 6;
const MAX_WHEEL_SLOTS = 4_096;
/** Largest wheel, in ticks: 2^40 (the wheel itself allows 2^52). */
const MAX_WHEEL_BITS = 40;
/** Most tasks one load may list (the store's `peekDue` limit). */
const MAX_LOAD_LIMIT = 10_000;

/** Each rule checks one field (given, not undefined) and returns it. */
const RULES: Readonly<Record<keyof HybridOptions, (value: unknown, field: string) => number>> = {
  fallbackPollMs: (v, f) => validatePositiveMs(v, f, MAX_TIMER_MS),
  tickMs: (v, f) => validatePositiveMs(v, f, 1_000),
  levels: (v, f) => validatePositiveInt(v, f, MAX_WHEEL_LEVELS),
  slotsPerLevel: (v, f) => {
    const slots = validatePositiveInt(v, f, MAX_WHEEL_SLOTS);
    if (slots < 2 || !Number.isInteger(Math.log2(slots))) throw invalid(f, `must be a power of two 2..${MAX_WHEEL_SLOTS}, got ${slots}`);
    return slots;
  },
  loadLimit: (v, f) => validatePositiveInt(v, f, MAX_LOAD_LIMIT),
  pauseThresholdMs: (v, f) => validatePositiveMs(v, f, MAX_TIMER_MS),
};

function invalid(field: string, message: string): ValidationError {
  return new ValidationError('INVALID_OPTION', field, message);
}

/**
 * Validates the `hybrid` option and fills in the defaults.
 * @throws ValidationError INVALID_OPTION naming `hybrid` or `hybrid.<field>`: a bad value, an unknown
 *         field, a wheel larger than 2^40 ticks, a horizon not above 2 × `fallbackPollMs`, or half a
 *         horizon beyond what a store reads ahead (core `MAX_DELAY_MS`)
 */
export function resolveHybridOptions(options: unknown): ResolvedHybridOptions {
  if (options === undefined) return HYBRID_DEFAULTS;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw invalid('hybrid', 'must be an object');
  rejectUnknownFields(options, Object.keys(RULES), 'hybrid.');
  const given = options as Record<string, unknown>;
  const resolved: Record<keyof HybridOptions, number> = { ...HYBRID_DEFAULTS };
  for (const [name, check] of Object.entries(RULES) as [keyof HybridOptions, (typeof RULES)[keyof HybridOptions]][]) {
    if (given[name] !== undefined) resolved[name] = check(given[name], `hybrid.${name}`);
  }
  const { tickMs, levels, slotsPerLevel, fallbackPollMs } = resolved;
  if (Math.log2(slotsPerLevel) * levels > MAX_WHEEL_BITS) throw invalid('hybrid.levels', `slotsPerLevel^levels must not exceed 2^${MAX_WHEEL_BITS}, got ${slotsPerLevel}^${levels}`);
  // The worker loads tasks due within half the horizon; that must reach past the next fallback re-read.
  const lookAheadMs = Math.floor((tickMs * slotsPerLevel ** levels) / 2);
  if (lookAheadMs <= fallbackPollMs) {
    throw invalid('hybrid.tickMs', `the wheel horizon (tickMs × slotsPerLevel^levels = ${2 * lookAheadMs} ms) must exceed 2 × fallbackPollMs (${fallbackPollMs})`);
  }
  // Each load asks the store for tasks due within lookAheadMs: a store accepts at most MAX_DELAY_MS.
  if (lookAheadMs > MAX_DELAY_MS) {
    throw invalid('hybrid.levels', `half the wheel horizon (tickMs × slotsPerLevel^levels / 2 = ${lookAheadMs} ms) is what each load reads ahead; a store reads at most ${MAX_DELAY_MS} ms (100 years) ahead: use fewer levels, fewer slots or a smaller tickMs`);
  }
  return resolved;
}
