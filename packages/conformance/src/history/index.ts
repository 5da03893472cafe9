/**
 * @postpone/conformance src/history/ — the conformance cases of the live/history split
 * (docs/contract.md#live-and-history): {@link historyCases}; and of history retention
 * (docs/contract.md#retention): {@link retentionCases}. `describeStoreConformance` of
 * `@postpone/conformance` registers them after the queue cases; each group takes the current
 * test's harness ({@link HarnessRef} of `src/kit/`).
 */
import { historyCases } from './cases-history.js';
import { retentionCases } from './cases-retention.js';

export { historyCases, retentionCases };

/** The groups of this package, in the order `describeStoreConformance` registers them. */
export const HISTORY_CASES = [historyCases, retentionCases] as const;
