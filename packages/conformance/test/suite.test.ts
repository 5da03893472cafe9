import { OPERATIONS_CASES } from '@postpone/conformance-ops';
import { describe, expect, it } from 'vitest';
import { CONFORMANCE_CASES } from '../src/index.js';

describe('conformance suite', () => {
  it('registers every group of cases', () => {
    expect(CONFORMANCE_CASES.map((f) => f.name)).toEqual([
      'scheduleCases',
      'dedupCases',
      'claimCases',
      'leaseCases',
      'completeCases',
      'completeManyCases',
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
      'traceContextCases',
      'cancelTxCases',
      'retryCases',
      'cronCases',
    ]);
  });

  it('registers the reads and operations of @postpone/conformance-ops, in their order, then the cron cases', () => {
    expect(CONFORMANCE_CASES.slice(-OPERATIONS_CASES.length - 1, -1)).toEqual([...OPERATIONS_CASES]);
  });
});
