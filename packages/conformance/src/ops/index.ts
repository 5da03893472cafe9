/**
 * @postpone/conformance src/ops/ — the conformance cases for reading and operating a Postpone store:
 * `peekDue`, `countByState`, `getTask` / `getCompletion`, `now` ({@link observeCases}), `migrate` again
 * and `close` ({@link lifecycleCases}), `listTasks`, `retry`, `prune`, `stats` ({@link adminCases}), `unclaimedKinds` ({@link unclaimedCases}),
 * the trace context a task carries ({@link traceContextCases}), `cancel` in the caller's
 * transaction ({@link cancelTxCases}), and the retry policy, DEAD-now fail and snooze
 * ({@link retryCases}, docs/contract.md#retry-policy), one renewal for many leases ({@link extendManyCases}) — docs/contract.md#outcomes, #transactions,
 * #input-errors. `describeStoreConformance` of `@postpone/conformance` registers them after the
 * transition cases; each group takes the current test's harness ({@link HarnessRef}).
 */
import { adminCases } from './cases-admin.js';
import { cancelTxCases } from './cases-cancel-tx.js';
import { extendManyCases } from './cases-extend-many.js';
import { lifecycleCases } from './cases-lifecycle.js';
import { observeCases } from './cases-observe.js';
import { retryCases } from './cases-retry.js';
import { traceContextCases } from './cases-trace-context.js';
import { unclaimedCases } from './cases-unclaimed.js';

export { adminCases, cancelTxCases, extendManyCases, lifecycleCases, observeCases, retryCases, traceContextCases, unclaimedCases };

/** The groups of this package, in the order `describeStoreConformance` registers them. */
export const OPERATIONS_CASES = [observeCases, lifecycleCases, adminCases, unclaimedCases, traceContextCases, cancelTxCases, retryCases, extendManyCases] as const;
