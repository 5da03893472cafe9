import { StoreClosedError, TASK_STATES, ValidationError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError, expectPostponeError, expectValidationError, stateCounts } from '../../src/kit/index.js';

describe('conformance helpers', () => {
  it('captureError returns a rejection, a synchronous throw, and fails on success', async () => {
    const boom = new Error('boom');
    expect(await captureError(() => Promise.reject(boom))).toBe(boom);
    expect(
      await captureError(() => {
        throw boom;
      }),
    ).toBe(boom);
    const missing = await captureError(() => captureError(async () => 1));
    expect((missing as Error).message).toMatch(/expected the call to throw/);
  });

  it('expectValidationError checks class, code and field', async () => {
    const error = new ValidationError('INVALID_DELAY', 'delayMs', 'must be finite');
    expect(await expectValidationError(() => Promise.reject(error), 'INVALID_DELAY', 'delayMs')).toBe(error);
    await expect(expectValidationError(() => Promise.reject(error), 'INVALID_KIND')).rejects.toThrow();
    await expect(expectValidationError(() => Promise.reject(error), 'INVALID_DELAY', 'runAt')).rejects.toThrow();
    await expect(expectValidationError(() => Promise.reject(new Error('plain')), 'INVALID_DELAY')).rejects.toThrow();
  });

  it('expectPostponeError checks the marker and the code', async () => {
    const closed = new StoreClosedError();
    expect(await expectPostponeError(() => Promise.reject(closed), 'STORE_CLOSED')).toBe(closed);
    await expect(expectPostponeError(() => Promise.reject(closed), 'STORE_ERROR')).rejects.toThrow();
    await expect(expectPostponeError(() => Promise.reject(new Error('plain')))).rejects.toThrow();
  });

  it('stateCounts names every state', () => {
    expect(Object.keys(stateCounts()).sort()).toEqual([...TASK_STATES].sort());
    expect(stateCounts({ DONE: 2 })).toEqual({ SCHEDULED: 0, CLAIMED: 0, DONE: 2, CANCELLED: 0, DEAD: 0 });
  });
});
