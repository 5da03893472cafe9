/**
 * @postpone/conformance — the one suite every Postpone Store passes (docs/contract.md#transitions, #outcomes, #input-errors).
 *
 * ```ts
 * import { describeStoreConformance } from '@postpone/conformance';
 * describeStoreConformance('memory', async () => makeMemoryHarness());
 * ```
 */
export type { ConformanceHarness, HarnessRef } from './harness.js';
export { describeStoreConformance, CONFORMANCE_CASES } from './suite.js';
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
