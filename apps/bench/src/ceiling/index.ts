/**
 * apps/bench/src/ceiling — the SQL-only ceiling of Postpone's schema: the store's claim and batched
 * fenced completion (the move to history) in a tight loop of prepared statements, one connection per
 * process, no worker logic. Postpone's throughput as a fraction of it is what the worker costs.
 */
export { CEILING_REFERENCE_BATCH, type CeilingParams, type CeilingPoint, type CeilingResult, ceilingModes, runSqlCeiling } from './ceiling.js';
