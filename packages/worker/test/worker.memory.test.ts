import { describe } from 'vitest';
import { memoryHarness } from './harness.js';
import { workerSuite } from './worker-suite.js';

describe('worker on the in-memory store', () => workerSuite(memoryHarness));
