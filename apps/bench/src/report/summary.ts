/**
 * Figures of the report derived from the raw results: medians and ranges over rounds, the best peer
 * of each measure, and ratios to it and to the ceiling. Pure functions, no I/O.
 */
import { CEILING_REFERENCE_BATCH, type CeilingResult } from '../ceiling/ceiling.js';
import type { IdleResult } from '../peers/idle.js';
import type { LatenessResult } from '../peers/lateness.js';
import type { RoundsOf } from '../peers/alternate.js';
import { type RoundSummary, summarizeRounds } from '../peers/util/stats.js';
import type { StatementStat } from '../peers/db/statements.js';
import type { ThroughputResult } from '../peers/throughput.js';

export const SELF = 'postpone';
/** Postpone's tuned setting with history kept, and the same with DONE not kept (`apps/bench/src/peers/systems/postpone.ts`). */
export const TUNED_KEPT = 'tuned';
export const TUNED_DROPPED = 'tuned-drop';

/** Postpone's row of `setting` among `rows`, if measured. */
export function selfRow<R extends { readonly system: string; readonly setting: string }>(rows: readonly R[], setting: string): R | undefined {
  return rows.find((x) => x.system === SELF && x.setting === setting);
}

export interface ThroughputRow extends ContenderColumns {
  readonly tasksPerSecond: RoundSummary;
  readonly statementsPerTask: number;
  readonly serverMsPerTask: number;
  readonly workerCpuMsPerTask: number;
  /** WAL the whole server wrote per task while the clock ran, bytes (NaN in results saved before it was measured). */
  readonly walBytesPerTask: number;
  /** CPU of every PostgreSQL server process per task while the clock ran, ms (`/proc`; NaN in results saved before it was measured). */
  readonly serverCpuMsPerTask: number;
  /** Request/response turns per task (only measured through the network section's proxy; NaN otherwise). */
  readonly roundTripsPerTask: number;
  /** The statement profile of the round closest to the median rate. */
  readonly topStatements: readonly StatementStat[];
  /** Some round hit the time cap before every task completed. */
  readonly capped: boolean;
  readonly completed: number;
  readonly errors: readonly string[];
}

/** The round whose `value` is closest to the median of the rounds. */
function medianRound<T>(rounds: readonly T[], value: (r: T) => number): T | undefined {
  const m = summarizeRounds(rounds.map(value)).median;
  let best: T | undefined;
  for (const r of rounds) if (best === undefined || Math.abs(value(r) - m) < Math.abs(value(best) - m)) best = r;
  return best;
}

/** The columns every row of a contender starts with. */
export interface ContenderColumns {
  readonly label: string;
  readonly system: string;
  readonly setting: string;
}

/** A contender's {@link ContenderColumns}. */
function identity(c: ContenderColumns): ContenderColumns {
  return { label: c.label, system: c.system, setting: c.setting };
}

export function throughputRows(contenders: readonly RoundsOf<ThroughputResult>[]): ThroughputRow[] {
  return contenders.map((c) => ({
    ...identity(c),
    tasksPerSecond: summarizeRounds(c.rounds.map((r) => r.tasksPerSecond)),
    statementsPerTask: summarizeRounds(c.rounds.map((r) => r.statementsPerTask)).median,
    serverMsPerTask: summarizeRounds(c.rounds.map((r) => r.serverMsPerTask)).median,
    workerCpuMsPerTask: summarizeRounds(c.rounds.map((r) => r.workerCpuMsPerTask)).median,
    walBytesPerTask: summarizeRounds(c.rounds.map((r) => r.walBytesPerTask ?? Number.NaN)).median,
    serverCpuMsPerTask: summarizeRounds(c.rounds.map((r) => r.serverCpuMsPerTask ?? Number.NaN)).median,
    roundTripsPerTask: summarizeRounds(c.rounds.map((r) => r.roundTripsPerTask ?? Number.NaN)).median,
    topStatements: medianRound(c.rounds, (r) => r.tasksPerSecond)?.topStatements ?? [],
    capped: c.rounds.some((r) => r.capped),
    completed: summarizeRounds(c.rounds.map((r) => r.completed)).median,
    errors: c.errors,
  }));
}

export interface LatenessRow extends ContenderColumns {
  readonly p50: RoundSummary;
  readonly p99: RoundSummary;
  readonly max: RoundSummary;
  /** Smallest lateness seen in any round (negative = early run). */
  readonly min: number;
  readonly early: number;
  readonly missing: number;
  readonly errors: readonly string[];
}

export function latenessRows(contenders: readonly RoundsOf<LatenessResult>[]): LatenessRow[] {
  return contenders.map((c) => ({
    ...identity(c),
    p50: summarizeRounds(c.rounds.map((r) => r.lateness.p50)),
    p99: summarizeRounds(c.rounds.map((r) => r.lateness.p99)),
    max: summarizeRounds(c.rounds.map((r) => r.lateness.max)),
    min: c.rounds.length > 0 ? Math.min(...c.rounds.map((r) => r.lateness.min)) : Number.NaN,
    early: c.rounds.reduce((n, r) => n + r.early, 0),
    missing: c.rounds.reduce((n, r) => n + r.missing, 0),
    errors: c.errors,
  }));
}

export interface IdleRow extends ContenderColumns {
  readonly statementsPerSecond: RoundSummary;
  readonly errors: readonly string[];
}

export function idleRows(contenders: readonly RoundsOf<IdleResult>[]): IdleRow[] {
  return contenders.map((c) => ({
    ...identity(c),
    statementsPerSecond: summarizeRounds(c.rounds.map((r) => r.statementsPerSecond)),
    errors: c.errors,
  }));
}

/**
 * The ceiling at `batch` (default the reference batch of 50) over rounds, for one record of DONE:
 * history kept (the default, and every result saved before the mode was recorded) or not kept.
 */
export function ceilingSummary(rounds: readonly CeilingResult[], batch = CEILING_REFERENCE_BATCH, keepDone = true): RoundSummary {
  return summarizeRounds(
    rounds
      .filter((r) => (r.keepDone ?? true) === keepDone)
      .map((r) => r.points.find((p) => p.batch === batch)?.tasksPerSecond ?? Number.NaN)
      .filter(Number.isFinite),
  );
}

/** Rows measured on the bench's worker Node.js (not the extra rows on the parent's Node.js, labelled `…, Node 20`). */
export function onWorkerNode<R extends { readonly label: string }>(rows: readonly R[]): R[] {
  return rows.filter((r) => !/, Node \d+$/.test(r.label));
}

/** The best row among those `keep` accepts: highest `value` when `higherIsBetter`, else lowest; non-finite values skipped. */
export function bestWhere<R>(rows: readonly R[], keep: (r: R) => boolean, value: (r: R) => number, higherIsBetter: boolean): R | undefined {
  let best: R | undefined;
  for (const r of rows) {
    if (!keep(r) || !Number.isFinite(value(r))) continue;
    if (best === undefined || (higherIsBetter ? value(r) > value(best) : value(r) < value(best))) best = r;
  }
  return best;
}

/** The best peer (a system other than Postpone) by `value`: highest when `higherIsBetter`, else lowest; non-finite values skipped. */
export function bestPeer<R extends { readonly system: string }>(rows: readonly R[], value: (r: R) => number, higherIsBetter: boolean): R | undefined {
  return bestWhere(rows, (r) => r.system !== SELF, value, higherIsBetter);
}

/** The best Postpone row by `value` (same rules as {@link bestPeer}). */
export function bestSelf<R extends { readonly system: string }>(rows: readonly R[], value: (r: R) => number, higherIsBetter: boolean): R | undefined {
  return bestWhere(rows, (r) => r.system === SELF, value, higherIsBetter);
}

/** `a / b`, NaN when either is not a finite number or `b` is 0. */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : Number.NaN;
}
