/**
 * apps/bench/src/citus — `pnpm bench --citus` (issue #25): throughput, claim latency, statements and
 * server time per task per node, and the coordinator's overhead per statement, on plain PostgreSQL 15
 * vs Citus 13.2 with 1 and 2 worker nodes, through the sharded front.
 */
export { type CitusCluster, CitusClusterError, type CitusNode, startCitusCluster } from './cluster.js';
export { citusMain } from './main.js';
export { CITUS_BENCH_DEFAULTS, type CitusBenchOptions, quantile, runCitusBench, SETUPS, type SetupName, type SetupRound } from './measure.js';
export { type CitusRun, renderCitusReport, writeCitusReport } from './report.js';
