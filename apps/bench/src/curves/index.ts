/**
 * apps/bench/src/curves — the bench's measurements of Postpone alone: the seed cases (the partial
 * due index under `now()` vs `clock_timestamp()`, the poll interval trade-off) and the cost curves
 * (idle claim vs history, the claim while pruning, backlog, worker processes, timing wheel vs heap).
 */
export { type BacklogOptions, type BacklogPoint, measureBacklogCurve } from './backlog.js';
export type { ClaimTiming, ExplainProbe, ExplainSample } from './claim-probe.js';
export { type HistoryOptions, type HistoryPoint, measureHistoryCurve } from './history.js';
export { measureProcessesCurve, type ProcessesOptions, type WorkerCurveOptions } from './processes.js';
export {
  CLAIM_COMPATIBLE_LOCKS,
  measureClaimWhilePruning,
  pruneInvariantsHold,
  type PruneUnderLoadOptions,
  type PruneUnderLoadResult,
} from './prune.js';
export { runHeap, runWheel, timerQueueInput, type TimerQueueResult } from './timer-queues.js';
export { claimSql, clockTimestampClaimSql } from '../seed/claim-variants.js';
export { measurePartialDueIndex, partialIndexShapeHolds, type PartialIndexResult } from '../seed/partial-index.js';
export { measurePollTradeoff, pollShapeHolds, runPollInterval, type PollRunResult, type PollTradeoff } from '../seed/poll-interval.js';
export { claimTiming, explainMedians, explainOnce, timeClaimOnce } from './claim-probe.js';
