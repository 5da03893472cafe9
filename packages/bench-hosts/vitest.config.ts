import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// The hosts bench talks to a real PostgreSQL over network-namespace hosts.
export default defineConfig({
  test: sharedTestConfig({ globalSetup: ['@postpone/embedded/vitest-setup'] }),
});
