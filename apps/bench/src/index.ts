/**
 * @postpone/bench — the measurements behind `pnpm bench`, importable for tests and other tools.
 * The command line is `dist/main.js`.
 */
export { FULL, QUICK, SECTIONS, SECTION_GROUPS, selectSections, type BenchSizes, type Section } from './config.js';
export { measurePartialDueIndex, partialIndexShapeHolds, type PartialIndexResult } from './seed/partial-index.js';
export { measurePollTradeoff, pollShapeHolds, runPollInterval, type PollRunResult, type PollTradeoff } from './seed/poll-interval.js';
export { claimSql, clockTimestampClaimSql } from './seed/claim-variants.js';
export { runHeap, runWheel, timerQueueInput, type TimerQueueResult } from './curves/timer-queues.js';
export { runBench, type BenchOptions } from './run-bench.js';
export { writeReport } from './report/write.js';
export type { BenchResults } from './results.js';
