/**
 * @postpone/bench — the command line behind `pnpm bench` (`dist/main.js`) and the run that ties the
 * sections together. The measurements live in `apps/bench/src/curves` (Postpone alone) and
 * `apps/bench/src/peers` (side by side), the sizes, results and report in `apps/bench/src/report`;
 * this entry still exports what it exported before they moved.
 */
export { claimSql, clockTimestampClaimSql } from './seed/claim-variants.js';
export { measurePartialDueIndex, type PartialIndexResult, partialIndexShapeHolds } from './seed/partial-index.js';
export { measurePollTradeoff, type PollRunResult, pollShapeHolds, type PollTradeoff, runPollInterval } from './seed/poll-interval.js';
export { runHeap, runWheel, type TimerQueueResult, timerQueueInput } from './curves/timer-queues.js';
export type { BenchResults } from './report/results.js';
export { type BenchSizes, FULL, QUICK, SECTION_GROUPS, SECTIONS, type Section, selectSections } from './report/config.js';
export { writeReport } from './report/write.js';
export { type BenchOptions, runBench } from './run-bench.js';
