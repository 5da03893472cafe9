import { describe } from 'vitest';
import { pgHarness } from './harness.js';
import { workerSuite } from './worker-suite.js';

describe('worker on PostgreSQL (pg)', () => workerSuite(pgHarness));
