/**
 * Shared vitest settings for every workspace package.
 *
 * Each package writes `.vitest-results.json` (vitest's JSON reporter) next to its package.json;
 * `.ci/run` totals those files into the single `N passed, N failed` line CI reads.
 */
import type { ViteUserConfig } from 'vitest/config';

type TestConfig = NonNullable<ViteUserConfig['test']>;

export function sharedTestConfig(overrides: TestConfig = {}): TestConfig {
  return {
    include: ['test/**/*.test.ts'],
    reporters: ['default', 'json'],
    outputFile: { json: '.vitest-results.json' },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    ...overrides,
  };
}
