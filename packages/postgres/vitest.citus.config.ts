/**
 * The Citus suite: a selection of the store tests against the coordinator of a 3-node Citus
 * cluster started from `CITUS_TARBALL` (see `test/citus/citus-setup.ts`). Without `CITUS_TARBALL`
 * it runs nothing and says, in one line, how to enable it. Run: `pnpm --filter @postpone/postgres test:citus`.
 */
import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

/** The test files run on Citus (the rest of the package assumes plain PostgreSQL's plans or server). */
export const CITUS_TEST_FILES = ['test/sql/split.test.ts', 'test/sql/citus.test.ts', 'test/store.test.ts', 'test/conformance.test.ts', 'test/sharded.test.ts', 'test/citus-node-down.test.ts'];

const enabled = (process.env.CITUS_TARBALL ?? '') !== '';
if (!enabled) {
  console.log('Citus suite skipped: set CITUS_TARBALL to a Citus 13.2 tarball for PostgreSQL 15 (with install-citus.sh and citus-cluster.sh beside it, or in CITUS_DIR) to run it');
}

export default defineConfig({
  test: sharedTestConfig({
    include: enabled ? CITUS_TEST_FILES : [],
    passWithNoTests: true,
    globalSetup: enabled ? ['./test/citus/citus-setup.ts'] : [],
    outputFile: { json: '.vitest-results-citus.json' },
    fileParallelism: false,
  }),
});
