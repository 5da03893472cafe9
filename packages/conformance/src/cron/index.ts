/**
 * @postpone/conformance src/cron/ — conformance cases (vitest) for the `CronStore` capability of
 * `@postpone/core` (docs/contract.md#recurring-schedules), registered by `@postpone/conformance`'s suite.
 */
export { cronCases } from './cases-cron.js';
