import { describe, expect, it } from 'vitest';
import { CancelOutcome, CompleteOutcome, idempotencyKey, isTerminal, TASK_STATES, TaskState, TERMINAL_STATES } from '../src/index.js';

describe('states and outcomes', () => {
  it('lists the five states, three of them terminal', () => {
    expect(TASK_STATES).toEqual(['SCHEDULED', 'CLAIMED', 'DONE', 'CANCELLED', 'DEAD']);
    expect(TERMINAL_STATES).toEqual(['DONE', 'CANCELLED', 'DEAD']);
    expect(TASK_STATES.filter(isTerminal)).toEqual(TERMINAL_STATES);
    expect(Object.isFrozen(TaskState) && Object.isFrozen(TASK_STATES) && Object.isFrozen(TERMINAL_STATES)).toBe(true);
  });

  it('names the public outcome values of docs/contract.md#outcomes', () => {
    expect(Object.values(CancelOutcome)).toEqual(['CANCELLED', 'REQUESTED', 'TOO_LATE', 'ALREADY_CANCELLED', 'NOT_FOUND']);
    expect(Object.values(CompleteOutcome)).toEqual(['DONE', 'CANCELLED_BEFORE_COMMIT', 'REJECTED_STALE', 'NOT_FOUND']);
  });

  it('idempotencyKey is task-<id>, one per task across attempts', () => {
    expect(idempotencyKey('42')).toBe('task-42');
  });
});
