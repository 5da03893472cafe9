/**
 * The worker's watch for kinds nobody claims (option `unclaimedAfterMs`, issue #27): a task of a kind
 * no live worker handles — no handler anywhere, a typo at the call site, a queue nobody serves —
 * stays SCHEDULED for ever. Keeping it is right (a newer worker of a rolling deploy may know the
 * kind); saying nothing is not.
 *
 * At the reclaim sweep, at most once per `unclaimedAfterMs` (the first time `unclaimedAfterMs` after
 * `start()`, so a fleet starting together does not report each other's kinds), the watch reads
 * `store.unclaimedKinds({ dueForMs: unclaimedAfterMs })` (less the pairs whose queue or kind is paused,
 * read with `store.listPaused()` only when there are pairs) — the (queue, kind) pairs whose oldest task
 * has been due that long while none of them is CLAIMED (core `unclaimed.ts`) — and keeps the pairs
 * this worker does not handle (another queue, or a kind without a handler here). For those it emits
 * one `unclaimedKinds` event per check and logs one `warn` line per pair: when the pair first shows
 * up, then again at most every {@link UNCLAIMED_LOG_REPEAT_PERIODS} periods while it stays (a pair
 * that disappears and comes back is new again). The check is best-effort: a failed read is an
 * `error` event (operation `unclaimedKinds`) and a debug line, never a rejection, and the next check
 * comes a period later. It runs beside the loop (not awaited by claims); `stop()` waits for it.
 */
import { type Store, UNCLAIMED_DUE_COUNT_CAP, type UnclaimedKind } from '@postpone/core';
import type { Pacing } from '@postpone/wheel';
import type { Logger } from 'pino';
import type { TypedEmitter, UnclaimedKindReport } from './events.js';

/** While a pair stays unclaimed, its warning is repeated at most every this many periods (10 minutes at the default 60 000 ms). */
export const UNCLAIMED_LOG_REPEAT_PERIODS = 10;

export interface UnclaimedWatchDeps {
  readonly store: Store<unknown>;
  /** The threshold and the period, ms. */
  readonly afterMs: number;
  /** The queue this worker claims from. */
  readonly queue: string;
  /** The kinds it claims; null with `claimKinds: 'any'` (every kind of its queue). */
  readonly kinds: readonly string[] | null;
  readonly pacing: Pacing;
  readonly events: TypedEmitter;
  readonly logger: Logger;
}

export class UnclaimedWatch {
  private nextAt = Number.POSITIVE_INFINITY;
  private inFlight: Promise<void> | null = null;
  /** The pairs of the last successful check that this worker does not handle (the `postpone.tasks.unclaimed_due` gauge reads them). */
  latest: readonly UnclaimedKindReport[] = [];
  /** Pairs reported by the last check → when their line was last logged (pacing ms). */
  private logged = new Map<string, number>();

  constructor(private readonly deps: UnclaimedWatchDeps) {}

  /** Arms the watch: the first check is due `afterMs` from now. */
  start(): void {
    this.nextAt = this.deps.pacing.now() + this.deps.afterMs;
  }

  /** Starts a check when one is due and none is running (not awaited; it never rejects). */
  poke(): void {
    if (this.inFlight !== null || this.deps.pacing.now() < this.nextAt) return;
    this.nextAt = this.deps.pacing.now() + this.deps.afterMs;
    this.inFlight = this.check()
      // check() catches the store's errors itself; anything else (a logger that throws) is dropped here, never an unhandled rejection.
      .catch(() => {})
      .finally(() => {
        this.inFlight = null;
      });
  }

  /** Resolves when no check is running. */
  async settled(): Promise<void> {
    await this.inFlight;
  }

  /** One check: read, keep what this worker does not handle, emit and log. Never throws. */
  private async check(): Promise<void> {
    const { store, afterMs, queue, kinds, events, logger, pacing } = this.deps;
    let found: readonly UnclaimedKind[];
    try {
      if (typeof store.unclaimedKinds !== 'function') return;
      found = (await store.unclaimedKinds({ dueForMs: afterMs })).kinds;
    } catch (error) {
      events.emit('error', { error, operation: 'unclaimedKinds' });
      logger.debug({ err: error }, `could not read the kinds nobody claims; next try in ${afterMs} ms`);
      return;
    }
    const paused = found.length === 0 ? null : await pausedTargets(store);
    const handled = kinds ?? [];
    const reports: UnclaimedKindReport[] = found
      .filter((k) => k.queue !== queue || (kinds !== null && !kinds.includes(k.kind)))
      // Paused on purpose (docs/contract.md#pause-and-resume): nobody claims it, as asked.
      .filter((k) => paused === null || !(paused.has(`queue\u0000${k.queue}`) || paused.has(`kind\u0000${k.kind}`)))
      .map((k) => ({ ...k, closestHandledKind: closestKind(k.kind, handled) }));
    const now = pacing.now();
    const logged = new Map<string, number>();
    for (const report of reports) {
      const key = `${report.queue}\u0000${report.kind}`;
      const last = this.logged.get(key);
      if (last !== undefined && now - last < UNCLAIMED_LOG_REPEAT_PERIODS * afterMs) {
        logged.set(key, last);
        continue;
      }
      logged.set(key, now);
      logger.warn(
        {
          queue: report.queue,
          kind: report.kind,
          due: report.due,
          overdueMs: report.overdueMs,
          oldestDueAt: report.oldestDueAt.toISOString(),
          handledKinds: handled,
          workerQueue: queue,
          ...(report.closestHandledKind === null ? {} : { closestHandledKind: report.closestHandledKind }),
        },
        unclaimedMessage(report, queue, kinds),
      );
    }
    this.logged = logged;
    this.latest = reports;
    if (reports.length > 0) events.emit('unclaimedKinds', { kinds: reports, queue, handledKinds: handled });
  }
}

/**
 * The paused queues and kinds (`store.listPaused`) as `scope\u0000name` keys; null when the store cannot
 * say (no such method, a schema before migration 15, a failed read): then nothing is left out.
 */
async function pausedTargets(store: { listPaused?: unknown }): Promise<ReadonlySet<string> | null> {
  if (typeof store.listPaused !== 'function') return null;
  try {
    const paused = (await (store as { listPaused(): Promise<readonly { scope: string; name: string }[]> }).listPaused()) ?? [];
    return new Set(paused.map((p) => `${p.scope}\u0000${p.name}`));
  } catch {
    return null;
  }
}

/** The warning of one pair, e.g. `3 tasks of kind "close-reservaton" (queue default) due for 61 s with nobody claiming them; this worker handles close-reservation, send-receipt (did you mean "close-reservation"?)`. */
function unclaimedMessage(report: UnclaimedKindReport, queue: string, kinds: readonly string[] | null): string {
  const count = report.due >= UNCLAIMED_DUE_COUNT_CAP ? `at least ${UNCLAIMED_DUE_COUNT_CAP} tasks` : report.due === 1 ? '1 task' : `${report.due} tasks`;
  const handles = report.queue !== queue ? `this worker claims queue ${JSON.stringify(queue)} only` : `this worker handles ${kinds?.join(', ') ?? 'every kind'}`;
  const hint = report.closestHandledKind === null ? '' : ` (did you mean ${JSON.stringify(report.closestHandledKind)}?)`;
  return `${count} of kind ${JSON.stringify(report.kind)} (queue ${JSON.stringify(report.queue)}) due for ${Math.round(report.overdueMs / 1000)} s with nobody claiming them; ${handles}${hint}`;
}

/** The kind of `candidates` nearest to `kind` by Levenshtein distance, if at most 3 and below `kind.length`; ties: the first. */
export function closestKind(kind: string, candidates: readonly string[]): string | null {
  const limit = Math.min(3, kind.length - 1);
  let best: string | null = null;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    if (candidate === kind) continue;
    const d = editDistance(kind, candidate, limit);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance of `a` and `b`, or `limit + 1` as soon as it must exceed `limit` (kinds are at most 200 characters). */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const v = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      row.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin > limit) return limit + 1;
    previous = row;
  }
  return previous[b.length] as number;
}
