/**
 * apps/bench/src/scale — `pnpm bench --scale`: Postpone from 0 to 100 M finished tasks on one
 * primary (issue #16): claim p50/p99 and buffers per size, table and index sizes, retention by
 * DELETE against DROP PARTITION, dead tuples and autovacuum under steady load, and a long-held
 * REPEATABLE READ snapshot under load.
 */
export { type ClaimPoint, keepDue, measureClaim, PROBE_KIND } from './claim.js';
export { scaleMain } from './main.js';
export { measureRetention, type RetentionResult } from './retention.js';
export { runScale, type ScaleOptions, type ScaleRun, type SizePoint } from './run.js';
export { writeScaleReport } from './report.js';
export { addFinished, addFinishedTo, historyTable, type RelationSize, relationSizes, vacuumAnalyze } from './seed.js';
export { runSteady, type SteadyOptions, type SteadyResult, type SteadySample } from './steady.js';
