import { HISTORY_CASES } from '../src/history/index.js';
import { OPERATIONS_CASES } from '../src/ops/index.js';
import { QUEUE_CASES } from '../src/queues/index.js';
import { describe, expect, it } from 'vitest';
import { CONFORMANCE_CASES } from '../src/index.js';

describe('conformance suite', () => {
  it('registers every group of cases', () => {
    expect(CONFORMANCE_CASES.map((f) => f.name)).toEqual([
      'scheduleCases',
      'dedupCases',
      'dedupModeCases',
      'claimCases',
      'leaseCases',
      'completeCases',
      'completeManyCases',
      'keepDoneCases',
      'progressWaitCases',
      'dependencyCases',
      'batchCases',
      'failCases',
      'releaseCases',
      'failuresCases',
      'staleCases',
      'cancelCases',
      'terminalCases',
      'constraintCases',
      'validationCases',
      'observeCases',
      'lifecycleCases',
      'adminCases',
      'unclaimedCases',
      'traceContextCases',
      'cancelTxCases',
      'retryCases',
      'extendManyCases',
      'bulkCases',
      'queueCases',
      'kindLimitCases',
      'pauseCases',
      'historyCases',
      'retentionCases',
      'cronCases',
      'rateLimitCases',
      'keyLimitCases',
      'keyRateLimitCases',
      'keyBacklogCases',
    ]);
  });

  it('registers the reads and operations of packages/conformance/src/ops, then packages/conformance/src/queues, then packages/conformance/src/history, in their order, then the cron, rate-limit, key-limit, key-rate-limit and key-backlog cases', () => {
    const tail = OPERATIONS_CASES.length + QUEUE_CASES.length + HISTORY_CASES.length;
    expect(CONFORMANCE_CASES.slice(-tail - 5, -5)).toEqual([...OPERATIONS_CASES, ...QUEUE_CASES, ...HISTORY_CASES]);
  });
});
