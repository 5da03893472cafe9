/**
 * @postpone/bench — the command line behind `pnpm bench` (`dist/main.js`) and the run that ties the
 * sections together. The measurements live in `@postpone/bench-curves` (Postpone alone) and
 * `@postpone/bench-peers` (side by side), the sizes, results and report in `@postpone/bench-report`;
 * this entry still exports what it exported before they moved.
 */
export {
  claimSql,
  clockTimestampClaimSql,
  measurePartialDueIndex,
  measurePollTradeoff,
  type PartialIndexResult,
  partialIndexShapeHolds,
  type PollRunResult,
  pollShapeHolds,
  type PollTradeoff,
  runHeap,
  runPollInterval,
  runWheel,
  type TimerQueueResult,
  timerQueueInput,
} from '@postpone/bench-curves';
export { type BenchResults, type BenchSizes, FULL, QUICK, SECTION_GROUPS, SECTIONS, type Section, selectSections, writeReport } from '@postpone/bench-report';
export { type BenchOptions, runBench } from './run-bench.js';
