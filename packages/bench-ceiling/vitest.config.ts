import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// The ceiling's test drives a real PostgreSQL.
export default defineConfig({
  test: sharedTestConfig({ globalSetup: ['@postpone/embedded/vitest-setup'] }),
});
