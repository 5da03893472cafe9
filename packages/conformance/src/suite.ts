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
  /**
   * Single cases not run, each with the reason it does not apply, keyed by the case's full name below
   * the suite: its `describe` titles and its `it` title joined by `' > '` (e.g.
   * `'listTasks > newer tasks arrive at the head of newest'`). Each is reported as skipped with its
   * reason (vitest `context.skip(note)`), before the harness is made. Every key must name a case of
   * the suite: a key that names none fails the first case run, so a stale gate cannot hide
   * (a case renamed is then either run or gated again, knowingly). For a store where one case meets
   * a documented difference, as the sharded front of `@postpone/postgres` (docs/sharding.md).
   */
  readonly withoutCases?: Readonly<Record<string, string>>;
}

/** The full name of a case below the `store conformance: …` suite: describe titles and the test title, joined by `' > '`. */
function caseName(task: { name: string; suite?: { name: string; suite?: unknown } | undefined }, root: string): string {
  const parts = [task.name];
  for (let s = task.suite as { name: string; suite?: unknown } | undefined; s !== undefined && s.name !== root; s = s.suite as typeof s) parts.unshift(s.name);
  return parts.join(' > ');
}

/** Every case name of a collected suite (see {@link caseName}). */
function caseNames(suite: { tasks?: readonly unknown[] }, root: string): string[] {
  const out: string[] = [];
  for (const t of (suite.tasks ?? []) as { type: string; name: string; tasks?: unknown[]; suite?: { name: string } }[]) {
    if (t.type === 'suite') out.push(...caseNames(t, root));
    else out.push(caseName(t, root));
  }
  return out;
}

/**
 * Registers the conformance suite as vitest `describe`/`it` blocks named `store conformance: <name>`.
 * Call it at the top level of a test file. `makeHarness` runs before every test (a fresh, migrated,
 * empty store with a TestClock); `cleanup` runs after it, even when the test failed.
 */
export function describeStoreConformance(name: string, makeHarness: () => Promise<ConformanceHarness<any>>, options: ConformanceOptions = {}): void {
  const root = `store conformance: ${name}`;
  const skipped = options.withoutCases ?? {};
  describe(root, () => {
    let current: ConformanceHarness<any> | undefined;
    const harness = (): ConformanceHarness<any> => {
      if (current === undefined) throw new Error('conformance harness is not ready (makeHarness failed?)');
      return current;
    };
    let checked = Object.keys(skipped).length === 0;
    beforeEach(async (context) => {
      if (!checked) {
        // Once, at the first case run: every key of withoutCases must name a case of this suite.
        checked = true;
        let top = context.task.suite as { name: string; suite?: unknown; tasks?: readonly unknown[] } | undefined;
        while (top !== undefined && top.name !== root) top = top.suite as typeof top;
        const known = new Set(top === undefined ? [] : caseNames(top, root));
        const stale = Object.keys(skipped).filter((k) => !known.has(k));
        if (stale.length > 0) throw new Error(`withoutCases names no case of the suite: ${stale.map((k) => JSON.stringify(k)).join(', ')}`);
      }
      const reason = skipped[caseName(context.task, root)];
      if (reason !== undefined) {
        context.skip(reason);
        return;
      }
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
