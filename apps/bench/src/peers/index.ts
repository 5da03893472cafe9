/**
 * apps/bench/src/peers — Postpone, pg-boss and graphile-worker side by side on one PostgreSQL: each
 * run in a fresh database cloned from its system's migrated template, real worker processes
 * (`child.js`) running each system's own worker, contenders alternated A B A B over rounds. Also the
 * server helpers (databases, statement counts) and the statistics the whole bench shares.
 */
export { alternate, type RoundsOf } from './alternate.js';
export { type Contender, contenderLabel, execPathOf, type Route, type RunContext, spawnContender } from './contender.js';
export { nodeVersionOf, workerNode } from './node24.js';
export { WorkerProcesses } from './processes.js';
export { withClient } from './db/admin.js';
export { createDatabase, dropDatabase, freshDatabaseName } from './db/databases.js';
export { openStatementCounter, type StatementCounter, type StatementSource, type StatementStat } from './db/statements.js';
export { type IdleParams, type IdleResult, runIdle } from './idle.js';
export { type LatenessParams, type LatenessResult, runLateness } from './lateness.js';
export { BENCH_TASK, SYSTEM_NAMES, type SystemName } from './protocol.js';
export { RunDatabases } from './run-databases.js';
export { POSTPONE_SCHEMA, postponeAdmin } from './systems/postpone.js';
export { loadAdmin } from './systems/registry.js';
export type { SettingInfo, SystemAdmin } from './systems/system.js';
export { type RateFigures, rateFigures, runThroughput, type ThroughputParams, type ThroughputResult } from './throughput.js';
export { type Distribution, distribution, median, percentile, type RoundSummary, summarizeRounds } from './util/stats.js';
export { delay, waitFor, type WaitOptions, WaitTimeoutError } from './util/wait.js';
