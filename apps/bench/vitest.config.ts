import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// The ceiling, curves, hosts, schedule and seed tests drive a real PostgreSQL.
export default defineConfig({
  test: sharedTestConfig({ globalSetup: ['@postpone/embedded/vitest-setup'] }),
});
