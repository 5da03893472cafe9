import { MAX_DELAY_MS, overrideStore, PostponeError, ValidationError } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { describe, expect, it } from 'vitest';
import { createWorker, HYBRID_DEFAULTS, TaskAbortedError, WORKER_DEFAULTS, WorkerStoppedError, type WorkerOptions } from '../src/index.js';

const store = createMemoryStore();
const handlers = { ping: async () => 'pong' };

function rejection(options: Record<string, unknown>): { code: string; field: string } {
  try {
    createWorker({ store, handlers, ...options } as unknown as WorkerOptions<unknown>);
  } catch (error) {
    if (!ValidationError.isInstance(error)) throw error;
    return { code: error.code, field: error.field };
  }
  throw new Error(`no error for ${JSON.stringify(options)}`);
}

describe('worker options', () => {
  it('fills in the documented defaults', () => {
    const worker = createWorker({ store, handlers });
    expect(worker.options).toMatchObject({
      concurrency: 10,
      leaseMs: 30_000,
      renewEveryMs: 10_000,
      pollIntervalMs: 1_000,
      reclaimEveryMs: 15_000,
      backoffBaseMs: 1_000,
      maxBackoffMs: 3_600_000,
      shutdownTimeoutMs: 10_000,
      handlerTimeoutMs: 900_000,
      abandonGraceMs: 5_000,
      completeBatchSize: 50,
      completeBatchDelayMs: 0,
      prune: null,
      unclaimedAfterMs: 60_000,
      claimKinds: 'handlers',
      queue: 'default',
      kindConcurrency: null,
    });
    expect(createWorker({ store, handlers, kindConcurrency: { ping: 3 } }).options.kindConcurrency).toEqual({ ping: 3 });
    expect(createWorker({ store, handlers, unclaimedAfterMs: null }).options.unclaimedAfterMs).toBeNull();
    expect(worker.options.concurrency).toBe(WORKER_DEFAULTS.concurrency);
    expect(worker.id).toMatch(/^.+-\d+-[0-9a-f]{6}$/);
    expect(worker.state).toBe('idle');
  });

  it('polls by default; hybrid discovery has its own documented defaults', () => {
    expect(createWorker({ store, handlers }).options.discovery).toBe('poll');
    const worker = createWorker({ store, handlers, discovery: 'hybrid', hybrid: { fallbackPollMs: 5_000 } });
    expect(worker.options.discovery).toBe('hybrid');
    expect(worker.options.hybrid).toEqual({ ...HYBRID_DEFAULTS, fallbackPollMs: 5_000 });
    expect(HYBRID_DEFAULTS).toEqual({ fallbackPollMs: 2_000, tickMs: 2, levels: 3, slotsPerLevel: 64, loadLimit: 1_000, pauseThresholdMs: 1_000 });
    expect(worker.discovery).toMatchObject({ mode: 'hybrid', wheelSize: 0, fired: 0, listening: false });
  });

  it('derives renewal, reclaim and grace from leaseMs', () => {
    const worker = createWorker({ store, handlers, leaseMs: 1_000 });
    expect(worker.options).toMatchObject({ renewEveryMs: 333, reclaimEveryMs: 500, abandonGraceMs: 1_000 });
  });

  it.each([
    [{ concurrency: 0 }, 'concurrency'],
    [{ concurrency: 1.5 }, 'concurrency'],
    [{ concurrency: 10_001 }, 'concurrency'],
    [{ leaseMs: -1 }, 'leaseMs'],
    [{ leaseMs: Number.NaN }, 'leaseMs'],
    [{ leaseMs: 2 ** 31 }, 'leaseMs'],
    [{ leaseMs: '1000' }, 'leaseMs'],
    [{ leaseMs: 1_000, renewEveryMs: 1_000 }, 'renewEveryMs'],
    [{ renewEveryMs: 0 }, 'renewEveryMs'],
    [{ pollIntervalMs: 0 }, 'pollIntervalMs'],
    [{ pollIntervalMs: Number.POSITIVE_INFINITY }, 'pollIntervalMs'],
    [{ reclaimEveryMs: 0.5 }, 'reclaimEveryMs'],
    [{ backoffBaseMs: -5 }, 'backoffBaseMs'],
    [{ maxBackoffMs: 0 }, 'maxBackoffMs'],
    [{ shutdownTimeoutMs: -1 }, 'shutdownTimeoutMs'],
    [{ handlerTimeoutMs: 0 }, 'handlerTimeoutMs'],
    [{ abandonGraceMs: -1 }, 'abandonGraceMs'],
    [{ completeBatchSize: 0 }, 'completeBatchSize'],
    [{ completeBatchSize: 10_001 }, 'completeBatchSize'],
    [{ completeBatchSize: 2.5 }, 'completeBatchSize'],
    [{ completeBatchDelayMs: -1 }, 'completeBatchDelayMs'],
    // leaseMs 1 000, renewEveryMs 333: a queued completion may wait less than the 667 ms left.
    [{ leaseMs: 1_000, completeBatchDelayMs: 667 }, 'completeBatchDelayMs'],
    [{ store: { ...Object.fromEntries(['claim', 'extend', 'complete', 'fail', 'release', 'reclaimExpired', 'getTask'].map((m) => [m, () => {}])) } }, 'store'],
    [{ id: '' }, 'id'],
    [{ id: 'a\u0000b' }, 'id'],
    [{ id: 'x'.repeat(201) }, 'id'],
    [{ logLevel: 'loud' }, 'logLevel'],
    [{ logger: {} }, 'logger'],
    [{ pacing: { now: () => 0 } }, 'pacing'],
    [{ store: {} }, 'store'],
    [{ store: null }, 'store'],
    [{ handlers: {} }, 'handlers'],
    [{ handlers: [] }, 'handlers'],
    [{ handlers: { ping: 'not a function' } }, 'handlers["ping"]'],
    [{ discovery: 'wheel' }, 'discovery'],
    [{ hybrid: 5 }, 'hybrid'],
    [{ hybrid: { fallbackPollMs: 0 } }, 'hybrid.fallbackPollMs'],
    [{ hybrid: { tickMs: 0.5 } }, 'hybrid.tickMs'],
    [{ hybrid: { slotsPerLevel: 48 } }, 'hybrid.slotsPerLevel'],
    [{ hybrid: { slotsPerLevel: 1 } }, 'hybrid.slotsPerLevel'],
    [{ hybrid: { levels: 0 } }, 'hybrid.levels'],
    [{ hybrid: { levels: 6, slotsPerLevel: 4_096 } }, 'hybrid.levels'],
    [{ hybrid: { loadLimit: 10_001 } }, 'hybrid.loadLimit'],
    [{ hybrid: { pauseThresholdMs: -1 } }, 'hybrid.pauseThresholdMs'],
    [{ claimKinds: 'all' }, 'claimKinds'],
    [{ kindConcurrency: [2] }, 'kindConcurrency'],
    [{ kindConcurrency: { book: 0 } }, 'kindConcurrency.book'],
    [{ kindConcurrency: { book: 1.5 } }, 'kindConcurrency.book'],
    [{ prune: 60_000 }, 'prune'],
    [{ prune: null }, 'prune'],
    [{ prune: {} }, 'prune.olderThanMs'],
    [{ prune: { olderThanMs: 86_400_000 } }, 'prune.everyMs'],
    [{ prune: { olderThanMs: -1, everyMs: 60_000 } }, 'prune.olderThanMs'],
    [{ prune: { olderThanMs: MAX_DELAY_MS + 1, everyMs: 60_000 } }, 'prune.olderThanMs'],
    [{ prune: { olderThanMs: 0, everyMs: 0 } }, 'prune.everyMs'],
    [{ prune: { olderThanMs: 0, everyMs: 2 ** 31 } }, 'prune.everyMs'],
    [{ prune: { olderThanMs: 0, everyMs: 1_000, batchSize: 0 } }, 'prune.batchSize'],
    [{ prune: { retention: {}, everyMs: 1_000 } }, 'prune.retention'],
    [{ prune: { retention: { RUNNING: 1 }, everyMs: 1_000 } }, 'prune.retention.RUNNING'],
    [{ prune: { retention: { DONE: 1 }, olderThanMs: 0, everyMs: 1_000 } }, 'prune.retention'],
    [{ prune: { olderThanMs: 0, everyMs: 1_000, batchSize: 10_001 } }, 'prune.batchSize'],
    [{ prune: { olderThanMs: 0, every: 1_000 } }, 'prune.every'],
    [{ unclaimedAfterMs: 0 }, 'unclaimedAfterMs'],
    [{ unclaimedAfterMs: 2 ** 31 }, 'unclaimedAfterMs'],
    [{ unclaimedAfterMs: '1m' }, 'unclaimedAfterMs'],
    // A 1 ms tick over 2 × 64 slots reaches 4 096 ms: loads reach 2 048 ms, not past a 5 s fallback.
    [{ hybrid: { tickMs: 1, levels: 2, fallbackPollMs: 5_000 } }, 'hybrid.tickMs'],
  ])('rejects %j with INVALID_OPTION on %s', (options, field) => {
    expect(rejection(options)).toEqual({ code: 'INVALID_OPTION', field });
  });

  it('rejects a bad queue with INVALID_QUEUE', () => {
    expect(rejection({ prune: { retention: { DONE: -1 }, everyMs: 1_000 } })).toEqual({ code: 'INVALID_DELAY', field: 'prune.retention.DONE' });
    expect(rejection({ queue: '' })).toEqual({ code: 'INVALID_QUEUE', field: 'queue' });
    expect(rejection({ queue: 'a\u0000' })).toEqual({ code: 'INVALID_QUEUE', field: 'queue' });
  });

  it('rejects a handler name that is not a valid kind', () => {
    expect(rejection({ handlers: { '': async () => 1 } })).toEqual({ code: 'INVALID_KIND', field: 'handlers[""]' });
    expect(rejection({ handlers: { 'a\nb': async () => 1 } })).toEqual({ code: 'INVALID_KIND', field: 'handlers["a\\nb"]' });
  });

  it('rejects a bad stop timeout', async () => {
    const worker = createWorker({ store, handlers });
    expect(() => worker.stop({ timeoutMs: -1 })).toThrow(ValidationError);
    await worker.stop({ timeoutMs: 0 });
  });
});

describe('option names and error classes', () => {
  it('refuses an option name it does not know instead of using a default', () => {
    expect(rejection({ concurency: 5 })).toEqual({ code: 'INVALID_OPTION', field: 'concurency' });
    expect(rejection({ hybrid: { fallbackPoll: 100 } })).toEqual({ code: 'INVALID_OPTION', field: 'hybrid.fallbackPoll' });
  });

  it('takes a prune schedule (batchSize defaults to the store default) and refuses it for a store without prune()', () => {
    expect(createWorker({ store, handlers, prune: { olderThanMs: 86_400_000, everyMs: 3_600_000 } }).options.prune).toEqual({
      olderThanMs: 86_400_000,
      retention: null,
      everyMs: 3_600_000,
      batchSize: 1_000,
    });
    expect(createWorker({ store, handlers, prune: { retention: { DONE: 86_400_000 }, everyMs: 3_600_000 } }).options.prune).toEqual({
      olderThanMs: null,
      retention: { DONE: 86_400_000 },
      everyMs: 3_600_000,
      batchSize: 1_000,
    });
    const noPrune = overrideStore(store, { prune: undefined });
    expect(rejection({ store: noPrune, prune: { olderThanMs: 0, everyMs: 1_000 } })).toEqual({ code: 'INVALID_OPTION', field: 'store' });
    expect(() => createWorker({ store: noPrune, handlers })).not.toThrow();
  });

  it('refuses a maxBackoffMs beyond what a store accepts (100 years)', () => {
    expect(rejection({ maxBackoffMs: Number.MAX_SAFE_INTEGER })).toEqual({ code: 'INVALID_OPTION', field: 'maxBackoffMs' });
    expect(createWorker({ store, handlers, maxBackoffMs: MAX_DELAY_MS }).options.maxBackoffMs).toBe(MAX_DELAY_MS);
  });

  it('TaskAbortedError and WorkerStoppedError are PostponeErrors with codes', () => {
    const aborted = new TaskAbortedError('timeout');
    const stopped = new WorkerStoppedError();
    expect(PostponeError.isInstance(aborted) && aborted.code === 'TASK_ABORTED' && aborted.reason === 'timeout').toBe(true);
    expect(PostponeError.isInstance(stopped) && stopped.code === 'WORKER_STOPPED').toBe(true);
  });
});
