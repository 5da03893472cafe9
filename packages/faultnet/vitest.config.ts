import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// Process-fault cases measure leases of ~1 s on a shared two-core machine: files run one at a time.
export default defineConfig({
  test: sharedTestConfig({
    globalSetup: ['@postpone/embedded/vitest-setup'],
    fileParallelism: false,
  }),
});
