import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// One test file at a time: each runs several worker processes, and the latency evidence should not
// compete with another file's processes for the CPU.
export default defineConfig({ test: sharedTestConfig({ globalSetup: ['@postpone/embedded/vitest-setup'], fileParallelism: false }) });
