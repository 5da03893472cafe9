/**
 * The one conformance suite every Store runs (docs/contract.md#transitions, #outcomes, #input-errors):
 * the transition cases of this package, then the reads and operations of `src/ops/`,
 * then queues, kinds and priorities of `src/queues/`, then the live/history split and
 * retention of `src/history/`.
 */
import type { ConformanceHarness } from './kit/harness.js';
import { cronCases } from './cron/cases-cron.js';
import { keyLimitCases } from './cases-key-limit.js';
import { keyRateLimitCases } from './cases-key-rate-limit.js';
import { keyBacklogCases } from './cases-key-backlog.js';
import { rateLimitCases } from './cases-rate-limit.js';
import { HISTORY_CASES } from './history/index.js';
import { OPERATIONS_CASES } from './ops/index.js';
import { QUEUE_CASES } from './queues/index.js';
import { afterEach, beforeEach, describe } from 'vitest';
import { cancelCases } from './cases-cancel.js';
import { claimCases } from './cases-claim.js';
import { completeCases } from './cases-complete.js';
import { completeManyCases } from './cases-complete-many.js';
import { keepDoneCases } from './cases-keep-done.js';
import { progressWaitCases } from './cases-progress-wait.js';
import { dependencyCases } from './cases-dependencies.js';
import { batchCases } from './cases-batch.js';
import { constraintCases } from './cases-constraint.js';
import { dedupCases } from './cases-dedup.js';
import { dedupModeCases } from './cases-dedup-modes.js';
import { failCases } from './cases-fail.js';
import { failuresCases } from './cases-failures.js';
import { leaseCases } from './cases-lease.js';
import { releaseCases } from './cases-release.js';
import { scheduleCases } from './cases-schedule.js';
import { staleCases } from './cases-stale.js';
import { terminalCases } from './cases-terminal.js';
import { validationCases } from './cases-validation.js';

/** Every group of cases, in the order they are registered. */
export const CONFORMANCE_CASES = [
  scheduleCases,
  dedupCases,
  dedupModeCases,
  claimCases,
  leaseCases,
  completeCases,
  completeManyCases,
  keepDoneCases,
  progressWaitCases,
  dependencyCases,
  batchCases,
  failCases,
  releaseCases,
  failuresCases,
  staleCases,
  cancelCases,
  terminalCases,
  constraintCases,
  validationCases,
  ...OPERATIONS_CASES,
  ...QUEUE_CASES,
  ...HISTORY_CASES,
  cronCases,
  rateLimitCases,
  keyLimitCases,
  keyRateLimitCases,
  keyBacklogCases,
] as const;

/** Options of {@link describeStoreConformance}. */
export interface ConformanceOptions {
  /**
   * Groups of cases not registered, by the name of their function in {@link CONFORMANCE_CASES}
   * (e.g. `'dependencyCases'`): for a store that refuses that feature with a typed error, as the
   * PostgreSQL store on Citus refuses dependencies and batches (docs/contract.md#dependencies, #batches).
   */
  readonly without?: readonly string[];
}

/**
 * Registers the conformance suite as vitest `describe`/`it` blocks named `store conformance: <name>`.
 * Call it at the top level of a test file. `makeHarness` runs before every test (a fresh, migrated,
 * empty store with a TestClock); `cleanup` runs after it, even when the test failed.
 */
export function describeStoreConformance(name: string, makeHarness: () => Promise<ConformanceHarness<any>>, options: ConformanceOptions = {}): void {
  describe(`store conformance: ${name}`, () => {
    let current: ConformanceHarness<any> | undefined;
    const harness = (): ConformanceHarness<any> => {
      if (current === undefined) throw new Error('conformance harness is not ready (makeHarness failed?)');
      return current;
    };
    beforeEach(async () => {
      current = await makeHarness();
    });
    afterEach(async () => {
      const h = current;
      current = undefined;
      await h?.cleanup();
    });
    for (const register of CONFORMANCE_CASES) if (!options.without?.includes(register.name)) register(harness);
  });
}
