/**
 * The worker's behaviour, run against one store (memory, pg). Every wait is on an event or a polled
 * condition with a deadline; no test sleeps and hopes.
 */
import { type ClaimedTask, TaskState } from '@postpone/core';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorker, type HandlerContext, ManualPacing, TaskAbortedError, waitForEvent, type Worker, type WorkerEventName, type WorkerEvents, type WorkerEventSource, type WorkerOptions } from '../src/index.js';
import { gate, type Harness, until } from './harness.js';

type Payloads = { book: { n: number } };
type Book = ClaimedTask<{ n: number }>;

function collect<E extends WorkerEventName>(worker: WorkerEventSource, event: E): WorkerEvents[E][] {
  const seen: WorkerEvents[E][] = [];
  worker.on(event, (e) => seen.push(e));
  return seen;
}

function whenAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
}

/**
 * @param defaults options every worker of the suite gets (e.g. hybrid discovery); a test's own options win
 */
export function workerSuite<Tx>(makeHarness: () => Promise<Harness<Tx>>, defaults: Partial<WorkerOptions<Tx, Payloads>> = {}): void {
  let h: Harness<Tx>;
  const workers: Worker<Tx>[] = [];

  function worker(options: Omit<WorkerOptions<Tx, Payloads>, 'store'> & Partial<Pick<WorkerOptions<Tx, Payloads>, 'store'>>): Worker<Tx> {
    const w = createWorker<Tx, Payloads>({ store: h.store, pollIntervalMs: 5, backoffBaseMs: 1, ...defaults, ...options });
    workers.push(w);
    return w;
  }

  beforeEach(async () => {
    h = await makeHarness();
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 0 })));
    await h.close();
  });

  describe('completing', () => {
    it('runs the handler by kind: result stored, its completion and same-transaction write committed with DONE', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 7 } });
      const w = worker({
        handlers: {
          book: async (task: Book, ctx) => {
            ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: ctx.attempt }));
            return { doubled: task.payload.n * 2, key: ctx.idempotencyKey, worker: ctx.workerId };
          },
        },
      });
      const completed = waitForEvent(w, 'completed');
      const claimed = await w.runOnce();
      expect(claimed.map((t) => [t.id, t.attempt])).toEqual([[id, 1]]);
      const [event] = await completed;
      expect(event?.outcome).toBe('DONE');
      expect(event?.result).toEqual({ doubled: 14, key: `task-${id}`, worker: w.id });
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DONE, attempt: 1, result: { doubled: 14, key: `task-${id}` } });
      expect(await h.store.getCompletion(id)).toMatchObject({ taskId: id, attempt: 1, worker: w.id });
      expect(await h.bookings()).toEqual([{ taskId: id, attempt: 1 }]);
      await w.idle();
      expect(w.inFlight).toBe(0);
    });

    it('keeps a result with an own "__proto__" key as written (DONE, not refused by the store)', async () => {
      // Found by a fresh user: such a result (an echoed HTTP body) lost the key, the store refused the
      // copy as "not a plain object", and the task died as "lease expired".
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 }, maxAttempts: 1 });
      const w = worker({ handlers: { book: async () => JSON.parse('{"__proto__":{"saved":1},"ok":true}') } });
      const completed = waitForEvent(w, 'completed');
      await w.runOnce();
      expect((await completed)[0]?.outcome).toBe('DONE');
      const task = await h.store.getTask(id);
      expect(task).toMatchObject({ state: TaskState.DONE, attempt: 1, failures: 0 });
      // jsonb orders keys its own way: compare the members, not the text.
      const result = task?.result as Record<string, unknown>;
      expect(Object.keys(result).sort()).toEqual(['__proto__', 'ok']);
      expect(JSON.stringify(Object.getOwnPropertyDescriptor(result, '__proto__')?.value)).toBe('{"saved":1}');
      expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    });

    it('stores undefined as a null result', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      const w = worker({ handlers: { book: async () => undefined } });
      const completed = waitForEvent(w, 'completed');
      await w.runOnce();
      expect((await completed)[0]?.outcome).toBe('DONE');
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DONE, result: null });
    });

    it('claims no more than its free concurrency', async () => {
      await h.store.scheduleMany(Array.from({ length: 5 }, (_, n) => ({ kind: 'book', payload: { n } })));
      const g = gate();
      const w = worker({ concurrency: 2, handlers: { book: async () => g.promise } });
      expect(await w.runOnce()).toHaveLength(2);
      expect(await w.runOnce()).toHaveLength(0);
      expect(w.inFlight).toBe(2);
      g.open();
      await w.idle();
      expect(await w.runOnce()).toHaveLength(2);
      await w.idle();
      expect(await w.runOnce()).toHaveLength(1);
      await w.idle();
      expect((await h.store.countByState()).DONE).toBe(5);
    });

    it('kindConcurrency caps the CLAIMED tasks of a kind across workers, whatever their concurrency', async () => {
      await h.store.scheduleMany(Array.from({ length: 5 }, (_, n) => ({ kind: 'book', payload: { n } })));
      const g = gate();
      const options = { concurrency: 5, kindConcurrency: { book: 2 }, handlers: { book: async () => g.promise } };
      const a = worker(options);
      const b = worker(options);
      expect(await a.runOnce()).toHaveLength(2);
      expect(await b.runOnce()).toHaveLength(0);
      expect(await a.runOnce()).toHaveLength(0);
      expect(a.inFlight + b.inFlight).toBe(2);
      expect((await h.store.countByState()).CLAIMED).toBe(2);
      g.open();
      await a.idle();
      expect(await b.runOnce()).toHaveLength(2);
      await b.idle();
      expect(await a.runOnce()).toHaveLength(1);
      await a.idle();
      expect((await h.store.countByState()).DONE).toBe(5);
    });

    it('a late complete is REJECTED_STALE and its same-transaction write never commits', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      const g = gate();
      const w = worker({
        leaseMs: 60_000,
        handlers: {
          book: async (task: Book, ctx) => {
            ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: ctx.attempt }));
            await g.promise;
            return 'late';
          },
        },
      });
      await w.runOnce();
      await h.expireLease(id);
      expect((await h.store.reclaimExpired()).map((t) => t.id)).toEqual([id]);
      const [current] = await h.store.claim({ owner: 'other-worker', limit: 1, leaseMs: 60_000 });
      expect(current?.attempt).toBe(2);
      const completed = waitForEvent(w, 'completed');
      const stale = waitForEvent(w, 'rejectedStale');
      g.open();
      expect((await completed)[0]?.outcome).toBe('REJECTED_STALE');
      expect((await stale)[0]?.operation).toBe('complete');
      expect(await h.bookings()).toEqual([]);
      expect(await h.store.getCompletion(id)).toBeNull();
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.CLAIMED, attempt: 2, leaseOwner: 'other-worker', result: null });
      // The current holder still completes, with its own write.
      const outcome = await h.store.complete({ id, attempt: 2, owner: 'other-worker', result: 'b', work: (tx) => h.writeBooking(tx, { taskId: id, attempt: 2 }) });
      expect(outcome).toBe('DONE');
      expect(await h.bookings()).toEqual([{ taskId: id, attempt: 2 }]);
    });
  });

  describe('failing', () => {
    it('retries after backoffBaseMs × 2^(attempt−1) and completes at attempt 3 with one completion', async () => {
      const w = worker({
        backoffBaseMs: 50,
        handlers: {
          book: async (task: Book, ctx) => {
            if (ctx.attempt < 3) throw new Error(`transient failure ${ctx.attempt}`);
            ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: ctx.attempt }));
            return ctx.attempt;
          },
        },
      });
      const claims = collect(w, 'claimed');
      const failures = collect(w, 'failed');
      const completed = waitForEvent(w, 'completed', { timeoutMs: 15_000 });
      w.start();
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      expect((await completed)[0]?.outcome).toBe('DONE');
      expect(failures.map((f) => [f.error, f.result.outcome])).toEqual([
        ['Error: transient failure 1', 'SCHEDULED'],
        ['Error: transient failure 2', 'SCHEDULED'],
      ]);
      expect(claims.map((c) => c.task.attempt)).toEqual([1, 2, 3]);
      const at = claims.map((c) => c.task.claimedAt.getTime());
      expect((at[1] ?? 0) - (at[0] ?? 0)).toBeGreaterThanOrEqual(50);
      expect((at[2] ?? 0) - (at[1] ?? 0)).toBeGreaterThanOrEqual(100);
      for (const c of claims) expect(c.task.claimedAt.getTime()).toBeGreaterThanOrEqual(c.task.dueAt.getTime());
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DONE, attempt: 3, result: 3 });
      expect(await h.store.getCompletion(id)).toMatchObject({ attempt: 3 });
      expect(await h.bookings()).toEqual([{ taskId: id, attempt: 3 }]);
    });

    it('moves a task out of attempts to DEAD with no completion', async () => {
      const w = worker({
        handlers: {
          book: async (task: Book, ctx) => {
            ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: ctx.attempt }));
            throw new Error('always fails');
          },
        },
      });
      const failures = collect(w, 'failed');
      const dead = waitForEvent(w, 'failed', { filter: (e) => e.result.outcome === 'DEAD' });
      w.start();
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 }, maxAttempts: 3 });
      await dead;
      expect(failures.map((f) => [f.task.attempt, f.result.outcome])).toEqual([
        [1, 'SCHEDULED'],
        [2, 'SCHEDULED'],
        [3, 'DEAD'],
      ]);
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DEAD, attempt: 3, lastError: 'Error: always fails' });
      expect(await h.store.getCompletion(id)).toBeNull();
      expect(await h.bookings()).toEqual([]);
    });

    it('claims only the kinds it has handlers for (default claimKinds: handlers): an unknown kind burns no attempt', async () => {
      const w = worker({ handlers: { book: async () => 'ok' } });
      const [other] = await h.store.scheduleMany([{ kind: 'no-such-kind', maxAttempts: 1 }]);
      const claimed = await w.runOnce();
      expect(claimed).toEqual([]);
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      expect((await w.runOnce()).map((t) => t.id)).toEqual([id]);
      expect(await h.store.getTask(other!.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0, failures: 0 });
      await w.stop();
    });

    it('records an unknown kind on the task (retried, then DEAD) and keeps running', async () => {
      const w = worker({ handlers: { book: async () => 'ok' }, claimKinds: 'any' });
      const claims = collect(w, 'claimed');
      const dead = waitForEvent(w, 'failed', { filter: (e) => e.result.outcome === 'DEAD', count: 2 });
      w.start();
      const [unknown, proto] = await h.store.scheduleMany([
        { kind: 'no-such-kind', maxAttempts: 2 },
        { kind: 'toString', maxAttempts: 1 },
      ]);
      await dead;
      expect(await h.store.getTask(unknown!.id)).toMatchObject({
        state: TaskState.DEAD,
        attempt: 2,
        lastError: 'UnknownKindError [UNKNOWN_KIND]: no handler registered for kind "no-such-kind"',
      });
      expect(await h.store.getTask(proto!.id)).toMatchObject({ state: TaskState.DEAD, lastError: expect.stringContaining('"toString"') });
      expect(claims.filter((c) => c.task.id === unknown!.id)).toHaveLength(2);
      // Still alive: the next task of a known kind completes.
      const completed = waitForEvent(w, 'completed');
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 2 } });
      expect((await completed)[0]?.task.id).toBe(id);
      expect(w.state).toBe('running');
    });

    it('records a thrown non-Error value clearly', async () => {
      const thrown: unknown[] = ['boom', undefined, null, { code: 42 }, 7];
      const w = worker({
        handlers: {
          book: async (task: Book) => {
            throw thrown[task.payload.n];
          },
        },
      });
      const scheduled = await h.store.scheduleMany(thrown.map((_, n) => ({ kind: 'book', payload: { n }, maxAttempts: 1 })));
      const failed = waitForEvent(w, 'failed', { count: thrown.length });
      await w.runOnce();
      await failed;
      const errors = await Promise.all(scheduled.map(async (s) => (await h.store.getTask(s.id))?.lastError));
      expect(errors).toEqual([
        'handler threw a non-Error value (string): "boom"',
        'handler threw a non-Error value (undefined): undefined',
        'handler threw a non-Error value (null): null',
        'handler threw a non-Error value (object): {"code":42}',
        'handler threw a non-Error value (number): 7',
      ]);
      expect((await h.store.countByState()).DEAD).toBe(thrown.length);
    });

    it('fails at once, with a description, when what the handler threw resists being turned into text', async () => {
      const revoked = Proxy.revocable({}, {});
      revoked.revoke();
      const causeThrows = new Error('outer');
      Object.defineProperty(causeThrows, 'cause', {
        get() {
          throw new Error('cause getter threw');
        },
      });
      const everyTrapThrows = new Proxy({}, { get: () => { throw 1; }, getPrototypeOf: () => { throw 2; }, ownKeys: () => { throw 3; } }); // prettier-ignore
      const thrown: unknown[] = [revoked.proxy, causeThrows, everyTrapThrows, { toString: () => { throw 4; }, toJSON: () => { throw 5; } }]; // prettier-ignore
      const w = worker({
        leaseMs: 60_000,
        handlers: {
          book: async (task: Book, ctx) => {
            // The last one is thrown by a same-transaction write instead of the handler.
            if (task.payload.n === thrown.length) return ctx.onCompleteTx(async () => { throw revoked.proxy; }); // prettier-ignore
            throw thrown[task.payload.n];
          },
        },
      });
      const scheduled = await h.store.scheduleMany([...thrown, 'write'].map((_, n) => ({ kind: 'book', payload: { n }, maxAttempts: 1 })));
      const failed = waitForEvent(w, 'failed', { count: thrown.length + 1, timeoutMs: 5_000 });
      await w.runOnce();
      expect((await failed).map((f) => f.result.outcome)).toEqual([...thrown, 'write'].map(() => 'DEAD'));
      const errors = await Promise.all(scheduled.map(async (s) => (await h.store.getTask(s.id))?.lastError));
      expect(errors).toEqual([
        'handler threw a non-Error value (object): [object, unreadable]',
        'Error: outer (cause: unreadable, its getter threw)',
        'handler threw a non-Error value (object): [object, unreadable]',
        'handler threw a non-Error value (object): [object Object]',
        'handler threw a non-Error value (object): [object, unreadable]',
      ]);
    });

    it('fails an attempt whose result is not JSON, without committing its writes', async () => {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const results: unknown[] = [Number.NaN, 10n, () => 1, new Map([[1, 2]]), cyclic, { text: 'a\u0000b' }];
      const w = worker({
        handlers: {
          book: async (task: Book, ctx) => {
            ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: ctx.attempt }));
            return results[task.payload.n];
          },
        },
      });
      const scheduled = await h.store.scheduleMany(results.map((_, n) => ({ kind: 'book', payload: { n }, maxAttempts: 1 })));
      const failed = waitForEvent(w, 'failed', { count: results.length });
      await w.runOnce();
      await failed;
      for (const s of scheduled) {
        const task = await h.store.getTask(s.id);
        expect(task?.state).toBe(TaskState.DEAD);
        expect(task?.lastError).toMatch(/^ValidationError \[INVALID_RESULT\]: result/);
        expect(await h.store.getCompletion(s.id)).toBeNull();
      }
      expect(await h.bookings()).toEqual([]);
    });

    it('fails the attempt when a same-transaction write throws (nothing commits)', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 }, maxAttempts: 1 });
      const w = worker({
        handlers: {
          book: async (task: Book, ctx) => {
            ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: 1 }));
            ctx.onCompleteTx(async () => {
              throw new Error('write refused');
            });
            return 'x';
          },
        },
      });
      const failed = waitForEvent(w, 'failed');
      await w.runOnce();
      expect((await failed)[0]?.error).toBe('Error: write refused');
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DEAD, lastError: 'Error: write refused' });
      expect(await h.store.getCompletion(id)).toBeNull();
      expect(await h.bookings()).toEqual([]);
    });
  });

  describe('lease and cancel', () => {
    it('renews the lease, and aborts the signal when the lease is lost; the late fail is rejected by the store', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      let reason: unknown;
      // Renewals go at the test's pace, so the worker's own next renewal cannot notice the expired
      // lease (and fail the attempt) before the test's reclaim: the race this test once lost under load.
      const pacing = new ManualPacing();
      const w = worker({
        leaseMs: 5_000,
        renewEveryMs: 30,
        pacing,
        handlers: {
          book: async (_task: Book, ctx) => {
            await whenAborted(ctx.signal);
            reason = ctx.signal.reason;
            throw ctx.signal.reason;
          },
        },
      });
      const renewed = waitForEvent(w, 'renewed');
      const lost = waitForEvent(w, 'leaseLost');
      const failed = waitForEvent(w, 'failed');
      await w.runOnce();
      // The handler's time limit is one sleep; the renewal the other.
      await until(() => pacing.pendingCount > 1, 'the renewal timer');
      pacing.advance(30);
      await renewed;
      await h.expireLease(id);
      expect((await h.store.reclaimExpired()).map((t) => t.id)).toEqual([id]);
      await until(() => pacing.pendingCount > 1, 'the next renewal timer');
      pacing.advance(30);
      expect((await lost)[0]?.reason).toBe('lease-lost');
      expect(reason).toBeInstanceOf(TaskAbortedError);
      expect((reason as TaskAbortedError).reason).toBe('lease-lost');
      const [fail] = await failed;
      expect(fail?.result.outcome).toBe('REJECTED_STALE');
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 1, lastError: 'lease expired' });
    });

    it('a cancelled running task whose handler throws its aborted signal ends CANCELLED without a failure, and nothing logs a lost lease (issue 27 item 10)', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 }, maxAttempts: 3 });
      const started = gate();
      const lines: { level: number; msg: string }[] = [];
      const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
      const w = worker({
        leaseMs: 5_000,
        renewEveryMs: 20,
        logger,
        handlers: {
          book: async (_task: Book, ctx) => {
            started.open();
            await whenAborted(ctx.signal);
            throw ctx.signal.reason;
          },
        },
      });
      const failed: WorkerEvents['failed'][] = [];
      w.on('failed', (e) => failed.push(e));
      const released = waitForEvent(w, 'released');
      await w.runOnce();
      await started.promise;
      expect(await h.store.cancel(id)).toBe('REQUESTED');
      expect((await released)[0]?.outcome).toBe('CANCELLED');
      await w.idle();
      expect(failed).toEqual([]);
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.CANCELLED, attempt: 1, failures: 0, lastError: null });
      expect(lines.filter((l) => /lease lost/i.test(l.msg))).toEqual([]);
      expect(lines.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual([]);
      expect(lines.map((l) => l.msg)).toContain('cancel requested; aborting the handler');
    });

    it('aborts the signal on a cancel request; the task ends CANCELLED with no completion', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      const started = gate();
      const w = worker({
        leaseMs: 5_000,
        renewEveryMs: 20,
        handlers: {
          book: async (task: Book, ctx) => {
            ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: ctx.attempt }));
            started.open();
            await whenAborted(ctx.signal);
            return 'finished anyway';
          },
        },
      });
      const lost = waitForEvent(w, 'leaseLost');
      const completed = waitForEvent(w, 'completed');
      await w.runOnce();
      await started.promise;
      expect(await h.store.cancel(id)).toBe('REQUESTED');
      expect((await lost)[0]?.reason).toBe('cancel-requested');
      expect((await completed)[0]?.outcome).toBe('CANCELLED_BEFORE_COMMIT');
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.CANCELLED });
      expect(await h.store.getCompletion(id)).toBeNull();
      expect(await h.bookings()).toEqual([]);
    });

    it('aborts a handler past handlerTimeoutMs and fails the attempt', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 }, maxAttempts: 1 });
      const w = worker({
        handlerTimeoutMs: 30,
        handlers: {
          book: async (_task: Book, ctx) => {
            await whenAborted(ctx.signal);
            throw ctx.signal.reason;
          },
        },
      });
      const failed = waitForEvent(w, 'failed');
      await w.runOnce();
      const [fail] = await failed;
      expect(fail?.error).toBe('TaskAbortedError [TASK_ABORTED]: the handler ran past handlerTimeoutMs (30 ms)');
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DEAD, lastError: fail?.error });
    });

    it('abandons a handler that ignores its aborted signal, records why, and frees the slot', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 }, maxAttempts: 1 });
      const w = worker({ concurrency: 1, handlerTimeoutMs: 20, abandonGraceMs: 20, handlers: { book: () => new Promise(() => {}) } });
      const abandoned = waitForEvent(w, 'abandoned');
      const failed = waitForEvent(w, 'failed');
      await w.runOnce();
      expect((await abandoned)[0]?.reason).toBe('timeout');
      expect((await failed)[0]?.error).toBe('handler did not settle within 20 ms after its signal aborted (timeout); abandoned');
      await w.idle();
      expect(w.inFlight).toBe(0);
      expect(w.freeSlots).toBe(1);
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DEAD });
    });
  });

  describe('several workers', () => {
    it('two workers racing over many tasks complete each task exactly once', async () => {
      const total = 120;
      const handlers = {
        book: async (task: Book, ctx: HandlerContext<Tx>) => {
          ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: ctx.attempt }));
          await new Promise((resolve) => setTimeout(resolve, task.payload.n % 3));
          return task.payload.n;
        },
      };
      const a = worker({ concurrency: 7, handlers });
      const b = worker({ concurrency: 5, handlers });
      const claims = [...[a, b].map((w) => collect(w, 'claimed'))];
      a.start();
      b.start();
      // Due over 1.2 s: hybrid workers share due time by slices of 64 ms (docs/contract.md#discovery-sharing),
      // so tasks all due at one instant could all fall to one worker; spread, both get a share.
      const scheduled = await h.store.scheduleMany(Array.from({ length: total }, (_, n) => ({ kind: 'book', payload: { n }, delayMs: n * 10 })));
      await until(async () => (await h.store.countByState()).DONE === total, `${total} tasks DONE`, 30_000);
      const claimedIds = claims.flat().map((c) => c.task.id);
      expect(claimedIds).toHaveLength(total);
      expect(new Set(claimedIds).size).toBe(total);
      expect(claims.every((list) => list.length > 0)).toBe(true);
      const bookings = await h.bookings();
      expect(bookings).toHaveLength(total);
      expect(new Set(bookings.map((x) => x.taskId))).toEqual(new Set(scheduled.map((s) => s.id)));
      expect(bookings.every((x) => x.attempt === 1)).toBe(true);
    });

    it('another worker reclaims the task of a holder that stopped renewing, and runs it at attempt 2', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      const frozen = gate();
      const book = async (task: Book, ctx: HandlerContext<Tx>) => {
        ctx.onCompleteTx((tx) => h.writeBooking(tx, { taskId: task.id, attempt: ctx.attempt }));
        if (ctx.attempt === 1) await frozen.promise;
        return ctx.workerId;
      };
      // A frozen holder: its pacing never moves, so it never renews (like a process stopped by SIGSTOP).
      const holder = worker({ id: 'holder', leaseMs: 300, pacing: new ManualPacing(), handlers: { book } });
      expect((await holder.runOnce()).map((t) => t.attempt)).toEqual([1]);
      const rescuer = worker({ id: 'rescuer', leaseMs: 30_000, reclaimEveryMs: 20, handlers: { book } });
      const reclaimed = waitForEvent(rescuer, 'reclaimed');
      const completed = waitForEvent(rescuer, 'completed');
      rescuer.start();
      expect((await reclaimed)[0]?.task).toEqual({ id, attempt: 1, outcome: 'SCHEDULED' });
      const [done] = await completed;
      expect([done?.outcome, done?.task.attempt]).toEqual(['DONE', 2]);
      expect(await h.store.getCompletion(id)).toMatchObject({ attempt: 2, worker: 'rescuer' });
      // The holder wakes up and reports: the store rejects it, nothing of attempt 1 commits.
      const stale = waitForEvent(holder, 'completed');
      frozen.open();
      expect((await stale)[0]?.outcome).toBe('REJECTED_STALE');
      expect(await h.bookings()).toEqual([{ taskId: id, attempt: 2 }]);
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DONE, attempt: 2, result: 'rescuer' });
    });
  });

  describe('graceful stop', () => {
    it('lets running handlers finish within the timeout', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      const g = gate();
      const w = worker({ handlers: { book: async () => g.promise.then(() => 'finished') } });
      await w.runOnce();
      const stopped = w.stop({ timeoutMs: 10_000 });
      expect(await w.runOnce()).toEqual([]);
      g.open();
      expect(await stopped).toEqual({ handedBack: 0, handBackFailed: 0 });
      expect(w.state).toBe('stopped');
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DONE, result: 'finished' });
    });

    it('hands unfinished tasks back so another worker claims them at once (attempt 2)', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      let reason: unknown;
      const a = worker({
        id: 'leaving',
        leaseMs: 60_000,
        handlers: {
          book: async (_task: Book, ctx) => {
            if (ctx.attempt === 1) {
              await whenAborted(ctx.signal);
              reason = ctx.signal.reason;
              throw ctx.signal.reason;
            }
            return 'second';
          },
        },
      });
      const released = waitForEvent(a, 'released');
      await a.runOnce();
      expect(await a.stop({ timeoutMs: 20 })).toEqual({ handedBack: 1, handBackFailed: 0 });
      expect((await released)[0]?.outcome).toBe('SCHEDULED');
      expect((reason as TaskAbortedError).reason).toBe('shutdown');
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 1, leaseOwner: null });
      const b = worker({ id: 'staying', handlers: { book: async () => 'second' } });
      const completed = waitForEvent(b, 'completed');
      expect((await b.runOnce()).map((t) => [t.id, t.attempt])).toEqual([[id, 2]]);
      expect((await completed)[0]?.outcome).toBe('DONE');
      expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.DONE, attempt: 2, result: 'second' });
      expect(() => a.start()).toThrow(/stopped/);
    });

    it('stops on a signal via installSignalHandlers', async () => {
      const w = worker({ handlers: { book: async () => 'x' } });
      w.start();
      const stopped = new Promise<unknown>((resolve) => {
        const remove = w.installSignalHandlers({ signals: ['SIGUSR2'], onStopped: (result, signal) => resolve([result, signal, remove()]) });
      });
      process.emit('SIGUSR2', 'SIGUSR2');
      expect(await stopped).toEqual([{ handedBack: 0, handBackFailed: 0 }, 'SIGUSR2', undefined]);
      expect(w.state).toBe('stopped');
      expect(process.listenerCount('SIGUSR2')).toBe(0);
    });
  });

  describe('observability', () => {
    it('emits typed events in order and survives a listener that throws', async () => {
      const { id } = await h.store.schedule({ kind: 'book', payload: { n: 1 } });
      const w = worker({ handlers: { book: async () => 'ok' } });
      const order: string[] = [];
      w.on('claimed', () => {
        order.push('claimed');
        throw new Error('listener bug');
      });
      w.on('completed', (e) => order.push(`completed:${e.outcome}:${e.task.id}`));
      const completed = waitForEvent(w, 'completed');
      await w.runOnce();
      await completed;
      expect(order).toEqual(['claimed', `completed:DONE:${id}`]);
    });
  });
}

