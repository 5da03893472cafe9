import type { Pacing } from '@postpone/wheel';
import type { RetryDefaults } from './retry-policy.js';

/** What an attempt reads of the worker's resolved options (the worker's `ResolvedOptions` fits). */
export interface AttemptSettings extends RetryDefaults {
  /** Worker identity, the claim's `owner` and the completion's `worker`. */
  readonly id: string;
  readonly pacing: Pacing;
  /** Lease length per renewal, in ms of the store's clock. */
  readonly leaseMs: number;
  /** Renewal period on the monotonic clock, below `leaseMs`. */
  readonly renewEveryMs: number;
  /** Per-attempt time limit in ms; null: none. */
  readonly handlerTimeoutMs: number | null;
  /** After the handler's signal aborted, how long to wait for it to settle (ms). */
  readonly abandonGraceMs: number;
  /** Most completions in one `completeMany` (1: every completion alone). */
  readonly completeBatchSize: number;
  /** How long the first queued completion waits for others (ms; 0: the next macrotask). */
  readonly completeBatchDelayMs: number;
  /** Least time between two progress writes of one task, in ms of `pacing` (default 1 000; docs/contract.md#progress). */
  readonly progressIntervalMs?: number;
  /** Keep DONE tasks in history (the worker's `keepDone`; default true). */
  readonly keepDone?: boolean;
  /** Per-kind overrides of {@link keepDone}. */
  readonly keepDoneByKind?: Readonly<Record<string, boolean>>;
}

/** Whether a DONE task of `kind` is kept in history: its kind's `keepDoneByKind`, else `keepDone` (default true). */
export function keepsDone(settings: Pick<AttemptSettings, 'keepDone' | 'keepDoneByKind'>, kind: string): boolean {
  const byKind = settings.keepDoneByKind;
  if (byKind !== undefined && Object.hasOwn(byKind, kind)) return byKind[kind] as boolean;
  return settings.keepDone ?? true;
}
