/**
 * The faultnet Citus suite: the seed's evidence cases and the cluster fault cases (`test/citus/*.citus.ts`)
 * against the coordinator of the 3-node Citus cluster that `@postpone/postgres`'s Citus setup starts
 * from `CITUS_TARBALL` (`../postgres/test/citus/citus-setup.ts`). Without `CITUS_TARBALL` it runs
 * nothing and says, in one line, how to enable it. Run: `pnpm --filter @postpone/faultnet test:citus`
 * (`.ci/run` runs it once, after the store's Citus suite).
 */
import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const enabled = (process.env.CITUS_TARBALL ?? '') !== '';
if (!enabled) {
  console.log('Citus evidence cases skipped: set CITUS_TARBALL to a Citus 13.2 tarball for PostgreSQL 15 (with install-citus.sh and citus-cluster.sh beside it, or in CITUS_DIR) to run them');
}

export default defineConfig({
  test: sharedTestConfig({
    include: enabled ? ['test/citus/*.citus.ts'] : [],
    passWithNoTests: true,
    globalSetup: enabled ? ['../postgres/test/citus/citus-setup.ts'] : [],
    outputFile: { json: '.vitest-results-citus.json' },
    fileParallelism: false,
    testTimeout: 180_000,
  }),
});
