/**
 * Kinds nobody claims (issue #27): the shapes, limits and input check of `Store.unclaimedKinds`, the
 * read behind the worker's `unclaimedKinds` event and warning, `postpone stats` and `postpone health`.
 *
 * A task of a kind no live worker handles (no handler anywhere, a typo at the call site, a queue
 * nobody serves) stays SCHEDULED for ever: kept on purpose (a newer worker of a rolling deploy may
 * know the kind), but it should not be silent. The store cannot know which workers run; it reports
 * the heuristic below, and each worker compares it with what it handles itself.
 *
 * A (queue, kind) pair is **unclaimed** when, at the store's now:
 * 1. its oldest SCHEDULED task was due at least `dueForMs` ago (`dueAt ≤ now − dueForMs`), and
 * 2. no task of that kind in that queue is CLAIMED.
 * A kind whose workers are merely saturated (every slot busy with other kinds, or a fleet that is
 * down) looks the same; a kind being worked always has a CLAIMED task now and then, and its due
 * tasks do not wait `dueForMs` in a healthy fleet.
 *
 * Bounded cost (docs/contract.md#unclaimed-kinds): the read walks the SCHEDULED tasks by
 * (queue, kind, priority) — on PostgreSQL a loose index scan of `task_claim_idx`, one descent per
 * step — over at most {@link UNCLAIMED_MAX_PAIRS} pairs and the {@link UNCLAIMED_MAX_LEVELS}
 * highest priorities of each, and counts due tasks only of the pairs it returns, at most
 * {@link UNCLAIMED_DUE_COUNT_CAP} per priority level and per pair.
 */
import { ValidationError } from './errors/errors.js';
import { rejectUnknownFields, validateNonNegativeMs, validateQueue } from './input/validate.js';

/** Most (queue, kind) pairs of SCHEDULED tasks one read walks, in (queue, kind) order; pairs beyond are not reported. */
export const UNCLAIMED_MAX_PAIRS = 1_000;
/** Most priority levels read per pair, highest first: the oldest due time and the count come from these. */
export const UNCLAIMED_MAX_LEVELS = 10;
/** `due` is counted up to this many tasks per pair: a larger backlog reads as this number. */
export const UNCLAIMED_DUE_COUNT_CAP = 1_000;
/** Default and largest `limit` of {@link UnclaimedKindsParams}. */
export const DEFAULT_UNCLAIMED_LIMIT = 100;
export const MAX_UNCLAIMED_LIMIT = 100;

export interface UnclaimedKindsParams {
  /** How long the oldest task of a pair must have been due, in whole ms 0..MAX_DELAY_MS (the worker passes `unclaimedAfterMs`). */
  readonly dueForMs: number;
  /** Only this queue (default: every queue). */
  readonly queue?: string;
  /** Most pairs returned, the longest waiting first, 1..{@link MAX_UNCLAIMED_LIMIT} (default {@link DEFAULT_UNCLAIMED_LIMIT}). */
  readonly limit?: number;
}

/** One (queue, kind) pair whose due tasks nobody claims. */
export interface UnclaimedKind {
  readonly queue: string;
  readonly kind: string;
  /** SCHEDULED tasks of the pair due now (`dueAt ≤ now`), counted up to {@link UNCLAIMED_DUE_COUNT_CAP}. */
  readonly due: number;
  /** Due time of the pair's oldest SCHEDULED task (store clock). */
  readonly oldestDueAt: Date;
  /** `now − oldestDueAt` in ms: at least `dueForMs`. */
  readonly overdueMs: number;
}

export interface UnclaimedKinds {
  /** The store's clock at the read. */
  readonly now: Date;
  /** The threshold the read applied, in ms. */
  readonly dueForMs: number;
  /** Longest waiting first (oldest `oldestDueAt`, then queue, then kind). */
  readonly kinds: readonly UnclaimedKind[];
}

export interface NormalizedUnclaimedKindsParams {
  readonly dueForMs: number;
  readonly queue: string | null;
  readonly limit: number;
}

/**
 * Checks `unclaimedKinds` parameters.
 * @throws ValidationError INVALID_OPTION (not an object, unknown field, missing or bad dueForMs, bad limit), INVALID_QUEUE (queue)
 */
export function validateUnclaimedKindsParams(params: unknown): NormalizedUnclaimedKindsParams {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) throw new ValidationError('INVALID_OPTION', 'params', 'must be an object { dueForMs, queue?, limit? }');
  const p = params as Record<string, unknown>;
  rejectUnknownFields(p, ['dueForMs', 'queue', 'limit']);
  if (p.dueForMs === undefined) throw new ValidationError('INVALID_OPTION', 'dueForMs', 'is required: how long a task must have been due, in ms');
  const limit = p.limit ?? DEFAULT_UNCLAIMED_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_UNCLAIMED_LIMIT) {
    throw new ValidationError('INVALID_OPTION', 'limit', `must be an integer 1..${MAX_UNCLAIMED_LIMIT}, got ${String(limit)}`);
  }
  return {
    dueForMs: validateNonNegativeMs(p.dueForMs, 'dueForMs'),
    queue: p.queue === undefined ? null : validateQueue(p.queue),
    limit,
  };
}

/** One SCHEDULED task as {@link unclaimedKindsOf} reads it. */
export interface UnclaimedCandidate {
  readonly queue: string;
  readonly kind: string;
  readonly priority: number;
  readonly dueAtMs: number;
}

/**
 * The answer of `unclaimedKinds` from every live task, for stores that hold them in memory: the
 * same pairs, levels, caps and order the SQL walk applies (pairs in code-unit order of queue, then kind).
 * @param scheduled the SCHEDULED tasks
 * @param claimed the (queue, kind) of each CLAIMED task
 */
export function unclaimedKindsOf(
  nowMs: number,
  p: NormalizedUnclaimedKindsParams,
  scheduled: Iterable<UnclaimedCandidate>,
  claimed: Iterable<{ readonly queue: string; readonly kind: string }>,
): UnclaimedKinds {
  const key = (queue: string, kind: string) => `${queue}\u0000${kind}`;
  const busy = new Set<string>();
  for (const c of claimed) busy.add(key(c.queue, c.kind));
  // pair → priority → due times
  const pairs = new Map<string, { queue: string; kind: string; levels: Map<number, number[]> }>();
  for (const t of scheduled) {
    if (p.queue !== null && t.queue !== p.queue) continue;
    const k = key(t.queue, t.kind);
    let pair = pairs.get(k);
    if (pair === undefined) pairs.set(k, (pair = { queue: t.queue, kind: t.kind, levels: new Map() }));
    let level = pair.levels.get(t.priority);
    if (level === undefined) pair.levels.set(t.priority, (level = []));
    level.push(t.dueAtMs);
  }
  const walked = [...pairs.values()].sort((a, b) => compare(a.queue, b.queue) || compare(a.kind, b.kind)).slice(0, UNCLAIMED_MAX_PAIRS);
  const found: UnclaimedKind[] = [];
  for (const pair of walked) {
    if (busy.has(key(pair.queue, pair.kind))) continue;
    const levels = [...pair.levels].sort(([a], [b]) => b - a).slice(0, UNCLAIMED_MAX_LEVELS);
    const oldest = Math.min(...levels.map(([, dues]) => Math.min(...dues)));
    if (oldest > nowMs - p.dueForMs) continue;
    const due = levels.reduce((n, [, dues]) => n + Math.min(UNCLAIMED_DUE_COUNT_CAP, dues.filter((d) => d <= nowMs).length), 0);
    found.push({ queue: pair.queue, kind: pair.kind, due: Math.min(UNCLAIMED_DUE_COUNT_CAP, due), oldestDueAt: new Date(oldest), overdueMs: nowMs - oldest });
  }
  found.sort((a, b) => a.oldestDueAt.getTime() - b.oldestDueAt.getTime() || compare(a.queue, b.queue) || compare(a.kind, b.kind));
  return { now: new Date(nowMs), dueForMs: p.dueForMs, kinds: found.slice(0, p.limit) };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
