/**
 * @postpone/conformance — the one suite every Postpone Store passes (docs/contract.md#transitions, #outcomes, #input-errors).
 *
 * ```ts
 * import { describeStoreConformance } from '@postpone/conformance';
 * describeStoreConformance('memory', async () => makeMemoryHarness());
 * ```
 */
export { type ConformanceOptions, describeStoreConformance, CONFORMANCE_CASES } from './suite.js';
// The harness contract and the shared assertions live in @postpone/conformance src/kit/; exported here too.
export * from './kit/index.js';
