import { describe } from 'vitest';
import { pgHarness } from './harness.js';
import { workerSuite } from './worker-suite.js';

// The whole behaviour suite again, with hybrid discovery: tasks reach the wheel through NOTIFY (new,
// retried, handed back, reclaimed), and the fallback read every 200 ms covers the rest.
describe('worker on PostgreSQL (pg), hybrid discovery', () => workerSuite(pgHarness, { discovery: 'hybrid', hybrid: { fallbackPollMs: 200 } }));
