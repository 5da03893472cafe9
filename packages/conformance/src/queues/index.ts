/**
 * @postpone/conformance src/queues/ — the conformance cases of queues, kind-filtered claims and priorities
 * (docs/contract.md#queues, #priorities): {@link queueCases}; per-kind concurrency caps
 * (docs/contract.md#kind-concurrency): {@link kindLimitCases}; pause and resume
 * (docs/contract.md#pause-and-resume): {@link pauseCases}. `describeStoreConformance` of
 * `@postpone/conformance` registers them after the operations cases; each group takes the current
 * test's harness ({@link HarnessRef} of `src/kit/`).
 */
import { kindLimitCases } from './cases-kind-limits.js';
import { pauseCases } from './cases-pause.js';
import { queueCases } from './cases-queues.js';

export { kindLimitCases, pauseCases, queueCases };

/** The groups of this package, in the order `describeStoreConformance` registers them. */
export const QUEUE_CASES = [queueCases, kindLimitCases, pauseCases] as const;
