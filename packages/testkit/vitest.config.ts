import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// The proxy's tests talk to a real PostgreSQL through it.
export default defineConfig({ test: sharedTestConfig({ globalSetup: ['@postpone/embedded/vitest-setup'] }) });
