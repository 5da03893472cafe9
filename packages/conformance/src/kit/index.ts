/**
 * @postpone/conformance src/kit/ — what the conformance cases stand on: the harness a store adapter hands
 * the suite ({@link ConformanceHarness}), the assertions the cases share ({@link captureError},
 * {@link expectValidationError}, {@link claimExactly}, …) and the builders of terminal tasks
 * ({@link makeTerminal}). `@postpone/conformance` and `src/ops/` build on it;
 * differential tests may reuse it.
 */
export type { ConformanceHarness, HarnessRef } from './harness.js';
export {
  LEASE_MS,
  captureError,
  claimExactly,
  expectPostponeError,
  expectValidationError,
  mustGetTask,
  observe,
  scheduleAndClaim,
  stateCounts,
} from './helpers.js';
export { makeTerminal, type TerminalFixture } from './fixtures.js';
