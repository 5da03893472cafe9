/**
 * The attempt's own rules on the in-memory store, with both clocks under the test's control (the
 * store's TestClock, the worker's ManualPacing): fenced writes retried after a lost connection, and
 * the lease keeper's renewals and its verdict when the store says the lease is gone.
 */
import { ConnectionLostError, overrideStore, PoolTimeoutError, StoreError, TestClock, ValidationError } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { ManualPacing } from '@postpone/wheel';
import { describe, expect, it } from 'vitest';
import { type AttemptEmitter, type AttemptEvents, callStore, isRetryableStoreError, keepLease, STORE_CALL_MIN_TRIES, STORE_CALL_TRIES, STORE_RETRY_MAX_MS, TaskAbortedError } from '../../src/attempt/index.js';

function recorder(): AttemptEmitter & { readonly seen: { event: keyof AttemptEvents; payload: unknown }[] } {
  const seen: { event: keyof AttemptEvents; payload: unknown }[] = [];
  return { seen, emit: (event, payload) => void seen.push({ event, payload }) };
}

/** Waits (bounded) until a sleep is registered with the manual pacing. */
async function sleeping(pacing: ManualPacing): Promise<void> {
  for (let i = 0; i < 1_000 && pacing.pendingCount === 0; i++) await new Promise((resolve) => setImmediate(resolve));
  expect(pacing.pendingCount).toBeGreaterThan(0);
}

describe('callStore', () => {
  it('retries a write whose connection was lost, and the store answers once', async () => {
    const base = createMemoryStore();
    await base.schedule({ kind: 'ping' });
    const [task] = await base.claim({ owner: 'w1', limit: 1, leaseMs: 10_000 });
    if (task === undefined) throw new Error('no task claimed');
    let lost = 1;
    const store = overrideStore(base, {
      release: async (params) => {
        const outcome = await base.release(params);
        if (lost-- > 0) throw new ConnectionLostError('the answer was lost after the commit');
        return outcome;
      },
    });
    const events = recorder();
    const pacing = new ManualPacing();
    const answer = callStore({ pacing, events }, 'release', task, () => store.release({ id: task.id, attempt: task.attempt }));
    await sleeping(pacing);
    pacing.advance(1_000);
    // The first release committed; the retried one finds the attempt gone: the store's fence says so.
    expect(await answer).toBe('REJECTED_STALE');
    expect(events.seen.map((e) => e.event)).toEqual(['error']);
    expect((await base.getTask(task.id))?.state).toBe('SCHEDULED');
  });

  it(`gives up after ${STORE_CALL_TRIES} tries, and never retries what is not a lost or refused connection`, async () => {
    const pacing = new ManualPacing();
    const events = recorder();
    let calls = 0;
    const lost = callStore({ pacing, events }, 'fail', undefined, async () => {
      calls += 1;
      throw new ConnectionLostError('gone');
    });
    for (let i = 1; i < STORE_CALL_TRIES; i++) {
      await sleeping(pacing);
      pacing.advance(10_000);
    }
    await expect(lost).rejects.toThrow(ConnectionLostError);
    expect(calls).toBe(STORE_CALL_TRIES);
    expect(events.seen).toHaveLength(STORE_CALL_TRIES);

    const invalid = new ValidationError('INVALID_OPTION', 'error', 'too long');
    expect(isRetryableStoreError(invalid)).toBe(false);
    // A full pool sent nothing (issue 27 item 4): as safe to retry as a refused connection.
    expect(isRetryableStoreError(new PoolTimeoutError(30_000, 10, 4))).toBe(true);
    await expect(callStore({ pacing, events }, 'fail', undefined, async () => Promise.reject(invalid))).rejects.toBe(invalid);
  });
});

describe('callStore and writes with no verdict', () => {
  it('retries a StoreError marked transient (the database gave no verdict) and never one that is not', async () => {
    const pacing = new ManualPacing();
    const events = recorder();
    let calls = 0;
    const answer = callStore({ pacing, events }, 'complete', undefined, async () => {
      calls += 1;
      if (calls <= 2) throw new StoreError('PostgreSQL error 57014: canceling statement due to statement timeout', '57014', { transient: true });
      return 'DONE';
    });
    for (let i = 0; i < 2; i++) {
      await sleeping(pacing);
      pacing.advance(STORE_RETRY_MAX_MS);
    }
    expect(await answer).toBe('DONE');
    expect(calls).toBe(3);
    expect(events.seen.map((e) => (e.payload as { error: StoreError }).error.sqlState)).toEqual(['57014', '57014']);

    // A StoreError the store did not mark transient is not "try again" (the PostgreSQL store marks 25006
    // transient, since it discards the read-only node's connection; unmarked here, it is not retried).
    for (const sqlState of ['25006', '23505']) {
      const refused = new StoreError(`PostgreSQL error ${sqlState}`, sqlState);
      expect(refused.transient).toBe(false);
      expect(isRetryableStoreError(refused)).toBe(false);
      await expect(callStore({ pacing, events }, 'fail', undefined, async () => Promise.reject(refused))).rejects.toBe(refused);
    }
  });

  it(`stops retrying once the lease is no longer held, after ${STORE_CALL_MIN_TRIES} tries in all, even with tries left`, async () => {
    const pacing = new ManualPacing();
    const events = recorder();
    let held = true;
    let calls = 0;
    const answer = callStore({ pacing, events, holdsLease: () => held }, 'complete', undefined, async () => {
      calls += 1;
      throw new StoreError('PostgreSQL error 55P03: canceling statement due to lock timeout', '55P03', { transient: true });
    });
    await sleeping(pacing);
    pacing.advance(STORE_RETRY_MAX_MS);
    await sleeping(pacing);
    held = false; // the lease keeper said the lease is gone while the write waited for its next try
    pacing.advance(STORE_RETRY_MAX_MS);
    await expect(answer).rejects.toThrow(/55P03/);
    expect(calls).toBe(STORE_CALL_MIN_TRIES);
    expect(calls).toBeLessThan(STORE_CALL_TRIES);
  });
});

describe('keepLease', () => {
  it('renews every renewEveryMs, then reports lease-lost once the store gave the task to another worker', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    await store.schedule({ kind: 'ping', maxAttempts: 3 });
    const pacing = new ManualPacing();
    const sentAt = pacing.now();
    const [task] = await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
    if (task === undefined) throw new Error('no task claimed');
    const events = recorder();
    const stop = new AbortController();
    const verdict = keepLease(task, sentAt, { store, pacing, events, leaseMs: 1_000, renewEveryMs: 300 }, stop.signal);

    await sleeping(pacing);
    clock.tick(300);
    pacing.advance(300);
    for (let i = 0; i < 1_000 && events.seen.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(events.seen.map((e) => e.event)).toEqual(['renewed']);
    expect((await store.getTask(task.id))?.leaseUntil?.getTime()).toBe(clock.now() + 1_000);

    // The lease lapses on the store's clock, another worker reclaims and claims the task.
    clock.tick(1_001);
    await store.reclaimExpired();
    expect(await store.claim({ owner: 'w2', limit: 1, leaseMs: 1_000 })).toHaveLength(1);
    await sleeping(pacing);
    pacing.advance(300);
    expect(await verdict).toBe('lease-lost');
  });

  it('names the abort reason in TaskAbortedError', () => {
    const error = new TaskAbortedError('timeout', '50 ms');
    expect(error.code).toBe('TASK_ABORTED');
    expect(error.reason).toBe('timeout');
    expect(error.message).toBe('the handler ran past handlerTimeoutMs (50 ms)');
  });
});
