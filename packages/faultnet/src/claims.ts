/**
 * What the workers reported claiming, gathered across processes, and the numbers the cases print
 * from it: claims, tasks claimed more than once, lateness (database clock: `claimedAt - dueAt`).
 */
import type { HarnessChild } from './harness-child.js';

export interface ClaimRecord {
  readonly worker: string;
  readonly id: string;
  readonly attempt: number;
  readonly claimedAtMs: number;
  readonly dueAtMs: number;
  readonly leaseUntilMs: number;
}

/** Every `claimed` event of `children`, tagged with the child's name. */
export function collectClaims(children: readonly HarnessChild[]): ClaimRecord[] {
  return children.flatMap((child) =>
    child.eventsOf('claimed').map((e) => ({
      worker: child.name,
      id: e.id,
      attempt: e.attempt,
      claimedAtMs: e.claimedAtMs,
      dueAtMs: e.dueAtMs,
      leaseUntilMs: e.leaseUntilMs,
    })),
  );
}

export interface ClaimStats {
  readonly claims: number;
  /** Distinct tasks claimed. */
  readonly tasks: number;
  readonly tasksClaimedMoreThanOnce: number;
  /** Tasks claimed by two or more different workers. */
  readonly byMultipleWorkers: number;
}

export function claimStats(claims: readonly ClaimRecord[]): ClaimStats {
  const byTask = new Map<string, ClaimRecord[]>();
  for (const c of claims) byTask.set(c.id, [...(byTask.get(c.id) ?? []), c]);
  let more = 0;
  let multi = 0;
  for (const list of byTask.values()) {
    if (list.length > 1) more++;
    if (new Set(list.map((c) => c.worker)).size > 1) multi++;
  }
  return { claims: claims.length, tasks: byTask.size, tasksClaimedMoreThanOnce: more, byMultipleWorkers: multi };
}

/** The value at quantile `q` (0..1) of ascending `sorted` (nearest rank); NaN when empty. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export interface LatenessStats {
  readonly minMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** Lateness `claimedAt - dueAt` of each claim, by the database clock, in ms. */
export function lateness(claims: readonly ClaimRecord[]): LatenessStats {
  const values = claims.map((c) => c.claimedAtMs - c.dueAtMs).sort((a, b) => a - b);
  return { minMs: values[0] ?? Number.NaN, p50Ms: quantile(values, 0.5), p99Ms: quantile(values, 0.99), maxMs: values.at(-1) ?? Number.NaN };
}
