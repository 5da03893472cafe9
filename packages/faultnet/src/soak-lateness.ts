/**
 * The soak's lateness, split by fault windows (evidence/soak.md "Lateness inside and outside fault
 * windows"). Times are epoch ms: claims and due times by the database clock, fault windows by the
 * harness's `Date.now()` — the embedded server runs on the same host, so both read the same system clock.
 */
import type { ClaimRecord } from './claims.js';
import { quantile } from './claims.js';

export type FaultKind = 'kill' | 'stop' | 'restart';

/**
 * One fault: `startMs` when it began (SIGKILL sent, SIGSTOP sent, server stopped), `endMs` when it was
 * over (the replacement process ready, SIGCONT sent, the server accepting connections again).
 */
export interface FaultWindow {
  readonly kind: FaultKind;
  readonly startMs: number;
  readonly endMs: number;
}

export interface LatenessFigures {
  readonly claims: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface SplitLateness {
  readonly inside: LatenessFigures;
  readonly outside: LatenessFigures;
  /** Share of the run's span (first due to last due) covered by fault windows, 0..1. */
  readonly coveredShare: number;
}

function figures(values: number[]): LatenessFigures {
  values.sort((a, b) => a - b);
  return { claims: values.length, p50Ms: quantile(values, 0.5), p99Ms: quantile(values, 0.99), maxMs: values.at(-1) ?? Number.NaN };
}

/**
 * Splits the claims' lateness (`claimedAt - dueAt`, ms) in two. A claim is **inside** a fault window
 * when its task's due time falls in `[startMs, endMs + graceMs]` of some fault (`graceMs`: the lease,
 * the time the tasks a faulted process held stay locked), or when it is a second or later attempt
 * (a re-claim: in the soak the handler never fails, so a task is claimed again only because a fault
 * took its earlier attempt's lease, and its due time is that of the first attempt). Every other claim is **outside**.
 */
export function splitLateness(claims: readonly ClaimRecord[], windows: readonly FaultWindow[], graceMs: number): SplitLateness {
  const spans = windows.map((w) => [w.startMs, w.endMs + graceMs] as const).sort((a, b) => a[0] - b[0]);
  // Merged, so a due time is looked up by binary search and the coverage is not counted twice.
  const merged: [number, number][] = [];
  for (const [s, e] of spans) {
    const last = merged.at(-1);
    if (last !== undefined && s <= last[1]) last[1] = Math.max(last[1], e);
    else merged.push([s, e]);
  }
  const covered = (t: number): boolean => {
    let lo = 0;
    let hi = merged.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const [s, e] = merged[mid]!;
      if (t < s) hi = mid - 1;
      else if (t > e) lo = mid + 1;
      else return true;
    }
    return false;
  };
  const inside: number[] = [];
  const outside: number[] = [];
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const c of claims) {
    first = Math.min(first, c.dueAtMs);
    last = Math.max(last, c.dueAtMs);
    (c.attempt > 1 || covered(c.dueAtMs) ? inside : outside).push(c.claimedAtMs - c.dueAtMs);
  }
  let coveredMs = 0;
  for (const [s, e] of merged) coveredMs += Math.max(0, Math.min(e, last) - Math.max(s, first));
  return { inside: figures(inside), outside: figures(outside), coveredShare: last > first ? coveredMs / (last - first) : 0 };
}

/** Lateness of first claims by due-time bucket of `bucketMs` from the first due time: where the backlog builds. */
export function latenessByDueBucket(claims: readonly ClaimRecord[], bucketMs: number): { readonly fromMs: number; readonly figures: LatenessFigures }[] {
  const firstClaims = claims.filter((c) => c.attempt === 1);
  if (firstClaims.length === 0) return [];
  let origin = Number.POSITIVE_INFINITY;
  for (const c of firstClaims) origin = Math.min(origin, c.dueAtMs);
  const buckets = new Map<number, number[]>();
  for (const c of firstClaims) {
    const b = Math.floor((c.dueAtMs - origin) / bucketMs);
    const list = buckets.get(b) ?? [];
    list.push(c.claimedAtMs - c.dueAtMs);
    buckets.set(b, list);
  }
  return [...buckets.entries()].sort((a, b) => a[0] - b[0]).map(([b, values]) => ({ fromMs: b * bucketMs, figures: figures(values) }));
}
