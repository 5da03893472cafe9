/**
 * Retry policy per kind and per task, jitter from a seeded source, NonRetryableError (DEAD now) and
 * Snooze (due again without a failure) — docs/contract.md#retry-policy — on the in-memory store and on
 * a real PostgreSQL (pg). Every wait is `runOnce` + `idle`; delays are read from the rows
 * (`dueAt − updatedAt`: both are the store's now of the fail or snooze), never from the wall clock.
 */
import { type Jitter, retryDelayMs, type Task, TaskState } from '@postpone/core';
import { mulberry32 } from '@postpone/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorker, NonRetryableError, Snooze, type Worker, type WorkerEvents, type WorkerOptions } from '../src/index.js';
import { type Harness, memoryHarness, pgHarness } from './harness.js';

const SEED = 20_261_201;

function retrySuite<Tx>(makeHarness: () => Promise<Harness<Tx>>): void {
  let h: Harness<Tx>;
  const workers: Worker<Tx>[] = [];

  function worker(options: Omit<WorkerOptions<Tx>, 'store'>): Worker<Tx> {
    const w = createWorker<Tx>({ store: h.store, concurrency: 1, pollIntervalMs: 5, ...options });
    workers.push(w);
    return w;
  }

  /** Claims and runs one due task to its end; returns how many were claimed (0 or 1). */
  async function step(w: Worker<Tx>): Promise<number> {
    const claimed = await w.runOnce();
    await w.idle();
    return claimed.length;
  }

  async function task(id: string): Promise<Task> {
    const t = await h.store.getTask(id);
    if (t === null) throw new Error(`task ${id} is missing`);
    return t;
  }

  beforeEach(async () => {
    h = await makeHarness();
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 0 })));
    await h.close();
  });

  it('resolves each field task > kind > worker default, and draws jitter from the seeded source in claim order', async () => {
    const boom = async () => {
      throw new Error('boom');
    };
    const w = worker({
      backoffBaseMs: 1_000,
      maxBackoffMs: 50_000,
      jitter: 'none',
      random: mulberry32(SEED),
      retryByKind: { full: { baseMs: 2_000, jitter: 'full' }, equal: { baseMs: 3_000, capMs: 4_000, jitter: 'equal' } },
      handlers: { plain: boom, full: boom, equal: boom },
    });
    // Due one after another (claim order = due order); the last one's own policy beats its kind's.
    const inputs = [
      { kind: 'plain', want: { base: 1_000, cap: 50_000, jitter: 'none' as Jitter } },
      { kind: 'full', want: { base: 2_000, cap: 50_000, jitter: 'full' as Jitter } },
      { kind: 'equal', want: { base: 3_000, cap: 4_000, jitter: 'equal' as Jitter } },
      { kind: 'full', retry: { baseMs: 10_000, jitter: 'equal' as const }, want: { base: 10_000, cap: 50_000, jitter: 'equal' as Jitter } },
      { kind: 'plain', retry: { capMs: 700 }, want: { base: 1_000, cap: 700, jitter: 'none' as Jitter } },
    ];
    const ids: string[] = [];
    for (const input of inputs) ids.push((await h.store.schedule({ kind: input.kind, ...(input.retry ? { retry: input.retry } : {}) })).id);
    const failed: WorkerEvents['failed'][] = [];
    w.on('failed', (e) => failed.push(e));
    for (let i = 0; i < inputs.length; i++) expect(await step(w)).toBe(1);
    // The same seed, replayed: the draws the worker made, in the same order (none for jitter 'none').
    const replay = mulberry32(SEED);
    for (const [i, input] of inputs.entries()) {
      const expected = retryDelayMs(input.want.base, 1, input.want.cap, input.want.jitter, replay);
      const t = await task(ids[i] as string);
      expect(t).toMatchObject({ state: TaskState.SCHEDULED, failures: 1 });
      expect(t.dueAt.getTime() - t.updatedAt.getTime(), `task ${i} (${input.kind})`).toBe(expected);
      expect(failed[i]?.delayMs).toBe(expected);
    }
  });

  it('maxAttempts: the kind\'s beats the row default, the task\'s own beats the kind\'s', async () => {
    const w = worker({
      backoffBaseMs: 0,
      retryByKind: { twice: { maxAttempts: 2 } },
      handlers: {
        twice: async (_t, ctx) => {
          throw new Error(`failure ${ctx.failures + 1} of ${ctx.maxAttempts}`);
        },
        plain: async () => {
          throw new Error('plain');
        },
      },
    });
    const kindOnly = await h.store.schedule({ kind: 'twice' });
    const own = await h.store.schedule({ kind: 'twice', retry: { maxAttempts: 4 } });
    const rowDefault = await h.store.schedule({ kind: 'plain' });
    for (let i = 0; i < 20 && (await step(w)) > 0; i++);
    expect(await task(kindOnly.id)).toMatchObject({ state: TaskState.DEAD, failures: 2, lastError: 'Error: failure 2 of 2' });
    expect(await task(own.id)).toMatchObject({ state: TaskState.DEAD, failures: 4, lastError: 'Error: failure 4 of 4' });
    expect(await task(rowDefault.id)).toMatchObject({ state: TaskState.DEAD, failures: 5, maxAttempts: 5 });
  });

  it('NonRetryableError: DEAD at the first failure with attempts left, the reason in last_error', async () => {
    const w = worker({
      handlers: {
        charge: async () => {
          throw new NonRetryableError('card declined');
        },
      },
    });
    const { id } = await h.store.schedule({ kind: 'charge', maxAttempts: 5 });
    const failed: WorkerEvents['failed'][] = [];
    w.on('failed', (e) => failed.push(e));
    expect(await step(w)).toBe(1);
    expect(await task(id)).toMatchObject({ state: TaskState.DEAD, attempt: 1, failures: 1, lastError: 'NonRetryableError [NON_RETRYABLE]: card declined' });
    expect(failed.map((e) => [e.result.outcome, e.retryable])).toEqual([['DEAD', false]]);
    expect(await step(w)).toBe(0);
  });

  it('Snooze: due again after delayMs without a failure, fenced like release; no last_error', async () => {
    const w = worker({
      handlers: {
        poll: async () => {
          throw new Snooze({ delayMs: 60_000 });
        },
      },
    });
    const { id } = await h.store.schedule({ kind: 'poll', maxAttempts: 1 });
    const snoozed: WorkerEvents['snoozed'][] = [];
    const failed: WorkerEvents['failed'][] = [];
    w.on('snoozed', (e) => snoozed.push(e));
    w.on('failed', (e) => failed.push(e));
    expect(await step(w)).toBe(1);
    const later = await task(id);
    expect(later).toMatchObject({ state: TaskState.SCHEDULED, attempt: 1, failures: 0, lastError: null, leaseOwner: null, leaseUntil: null });
    expect(later.dueAt.getTime() - later.updatedAt.getTime()).toBe(60_000);
    expect(snoozed.map((e) => e.result)).toEqual([{ outcome: 'SCHEDULED', dueAt: later.dueAt }]);
    expect(failed).toEqual([]);
    expect(await step(w)).toBe(0); // not due for a minute
  });

  it('Snooze with delayMs 0 and with an absolute dueAt: attempt grows, failures stay 0, never DEAD at maxAttempts 1', async () => {
    const dueAt = new Date(Date.UTC(2100, 0, 1));
    const w = worker({
      handlers: {
        now: async (_t, ctx) => {
          if (ctx.attempt <= 3) throw new Snooze({ delayMs: 0 });
          return ctx.attempt;
        },
        far: async () => {
          throw new Snooze({ dueAt });
        },
      },
    });
    const soon = await h.store.schedule({ kind: 'now', maxAttempts: 1 });
    for (let i = 0; i < 10 && (await step(w)) > 0; i++);
    expect(await task(soon.id)).toMatchObject({ state: TaskState.DONE, attempt: 4, failures: 0, result: 4 });
    const far = await h.store.schedule({ kind: 'far', maxAttempts: 1 });
    expect(await step(w)).toBe(1);
    expect(await task(far.id)).toMatchObject({ state: TaskState.SCHEDULED, dueAt, attempt: 1, failures: 0 });
  });

  it('a Snooze the store refuses (due more than 100 years ahead) fails the attempt with the store\'s error, at once', async () => {
    // Found in review: Snooze accepts years up to 9999, the store's snooze at most 100 years ahead;
    // the refusal left the task CLAIMED until its lease ran out, then DEAD as "lease expired".
    const w = worker({
      handlers: {
        later: async () => {
          throw new Snooze({ dueAt: new Date(Date.UTC(2200, 0, 1)) });
        },
      },
    });
    const failed: WorkerEvents['failed'][] = [];
    w.on('failed', (e) => failed.push(e));
    const { id } = await h.store.schedule({ kind: 'later', maxAttempts: 1 });
    expect(await step(w)).toBe(1);
    const dead = await task(id);
    expect(dead).toMatchObject({ state: TaskState.DEAD, attempt: 1, failures: 1, leaseOwner: null });
    expect(dead.lastError).toMatch(/^ValidationError \[INVALID_RUN_AT\]: dueAt: /);
    expect(failed.map((e) => e.result.outcome)).toEqual(['DEAD']);
  });

  it('a kind named "__proto__" (a valid kind) keeps its retryByKind policy (found in review: it was dropped)', async () => {
    const byKind = JSON.parse('{"__proto__":{"maxAttempts":1}}') as Record<string, { maxAttempts: number }>;
    const handlers = JSON.parse('{}') as Record<string, () => Promise<never>>;
    Object.defineProperty(handlers, '__proto__', { value: async () => Promise.reject(new Error('boom')), enumerable: true });
    const w = worker({ retryByKind: byKind, handlers } as never);
    const { id } = await h.store.schedule({ kind: '__proto__' });
    expect(await step(w)).toBe(1);
    // The kind's policy (1 attempt) beats the row's default of 5 only when the worker kept it.
    expect(await task(id)).toMatchObject({ state: TaskState.DEAD, attempt: 1, failures: 1, lastError: 'Error: boom' });
  });

  it('refuses a bad retryByKind, jitter or random before starting', () => {
    const handlers = { k: async () => null };
    expect(() => createWorker({ store: h.store, handlers, retryByKind: { k: { jitter: 'half' } } } as never)).toThrow(expect.objectContaining({ field: 'retryByKind["k"].jitter' }));
    expect(() => createWorker({ store: h.store, handlers, retryByKind: { k: { baseMs: -1 } } })).toThrow(expect.objectContaining({ field: 'retryByKind["k"].baseMs' }));
    expect(() => createWorker({ store: h.store, handlers, retryByKind: { '': {} } })).toThrow(expect.objectContaining({ code: 'INVALID_KIND' }));
    expect(() => createWorker({ store: h.store, handlers, jitter: 'some' } as never)).toThrow(expect.objectContaining({ field: 'jitter' }));
    expect(() => createWorker({ store: h.store, handlers, random: 0.5 } as never)).toThrow(expect.objectContaining({ field: 'random' }));
  });
}

describe('retry policy on the in-memory store', () => retrySuite(memoryHarness));
describe('retry policy on PostgreSQL (pg)', () => retrySuite(pgHarness));

describe('Snooze', () => {
  it('refuses a bad time when constructed, so a handler throwing it fails the attempt with a clear error', () => {
    expect(() => new Snooze({ delayMs: -1 })).toThrow(expect.objectContaining({ code: 'INVALID_DELAY', field: 'delayMs' }));
    expect(() => new Snooze({ dueAt: new Date(Number.NaN) })).toThrow(expect.objectContaining({ code: 'INVALID_RUN_AT', field: 'dueAt' }));
    expect(() => new Snooze({} as never)).toThrow(expect.objectContaining({ code: 'INVALID_DELAY' }));
    expect(() => new Snooze({ delayMs: 1, dueAt: new Date() } as never)).toThrow(expect.objectContaining({ code: 'INVALID_DELAY' }));
    expect(new Snooze({ delayMs: 2_500 }).until).toEqual({ delayMs: 2_500 });
  });
});
