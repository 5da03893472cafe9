/**
 * A hung handler is not a poison task with the default options (issue 27 item 1): without
 * `handlerTimeoutMs`, a handler `new Promise(() => {})` used to hold its task until the worker
 * stopped, which handed it back without counting a failure, so a task with maxAttempts 2 was claimed
 * for ever (`attempt 4 of 2`) and never went DEAD. The default limit is now 900 000 ms (15 minutes):
 * the attempt fails at the limit (abandoned `abandonGraceMs` later when the handler ignores its
 * signal) and the task goes DEAD after maxAttempts. `handlerTimeoutMs: null` turns the limit off and
 * warns at start. The worker's monotonic time is a ManualPacing, so 15 minutes pass at once; the
 * store is the in-memory store and PostgreSQL (`pg`).
 */
import { TaskState } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createWorker, ManualPacing, NO_HANDLER_TIMEOUT_WARNING, type Worker, type WorkerEvents, WORKER_DEFAULTS } from '../src/index.js';
import { perTest, STORE_HARNESSES, until } from './harness.js';

describe.each(STORE_HARNESSES)('a handler that never settles, default options (%s)', (_name, makeHarness) => {
  const test = perTest();
  const started: Worker<unknown>[] = [];

  it('fails at the 15-minute default, abandoned 5 s later, and goes DEAD at attempt 2 of 2 (not handed back for ever)', async () => {
    const h = await test.open(makeHarness);
    const { id } = await h.store.schedule({ kind: 'hang', maxAttempts: 2 });
    const aborts: unknown[] = [];
    for (const attempt of [1, 2]) {
      const pacing = new ManualPacing();
      // Only backoffBaseMs is set (so the retry is due at once); handlerTimeoutMs is the default.
      const w = createWorker<any>({
        store: h.store,
        id: `w${attempt}`,
        pacing,
        backoffBaseMs: 0,
        handlers: {
          hang: (_task, ctx) => {
            ctx.signal.addEventListener('abort', () => aborts.push(ctx.signal.reason), { once: true });
            return new Promise(() => {});
          },
        },
      });
      started.push(test.track(w));
      const failed: WorkerEvents['failed'][] = [];
      const abandoned: WorkerEvents['abandoned'][] = [];
      w.on('failed', (e) => failed.push(e));
      w.on('abandoned', (e) => abandoned.push(e));
      expect((await w.runOnce()).map((t) => [t.id, t.attempt])).toEqual([[id, attempt]]);
      await until(() => pacing.pendingCount > 0, 'the attempt timers');

      pacing.advance(899_999);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(aborts).toHaveLength(attempt - 1);
      pacing.advance(1);
      await until(() => aborts.length === attempt, 'the handler signal to abort at 900 000 ms');
      expect(aborts.at(-1)).toMatchObject({ code: 'TASK_ABORTED', reason: 'timeout', message: 'the handler ran past handlerTimeoutMs (900000 ms)' });
      // The handler ignores its signal: abandoned after abandonGraceMs (5 000), its attempt failed.
      await until(() => {
        pacing.advance(1_000);
        return failed.length === 1;
      }, 'the abandoned attempt to be failed');
      expect(abandoned.map((e) => e.reason)).toEqual(['timeout']);
      expect(failed[0]?.error).toBe('handler did not settle within 5000 ms after its signal aborted (timeout); abandoned');
      expect(failed[0]?.result.outcome).toBe(attempt === 1 ? 'SCHEDULED' : 'DEAD');
      expect(await w.stop({ timeoutMs: 0 })).toEqual({ handedBack: 0, handBackFailed: 0 });
      expect(await h.store.getTask(id)).toMatchObject({ state: attempt === 1 ? TaskState.SCHEDULED : TaskState.DEAD, attempt, failures: attempt });
    }
    expect(await h.store.getTask(id)).toMatchObject({
      state: TaskState.DEAD,
      attempt: 2,
      failures: 2,
      maxAttempts: 2,
      lastError: 'handler did not settle within 5000 ms after its signal aborted (timeout); abandoned',
    });
    expect(WORKER_DEFAULTS.handlerTimeoutMs).toBe(900_000);
    expect(started.map((w) => w.options.handlerTimeoutMs)).toEqual([900_000, 900_000]);
  });
});

describe('handlerTimeoutMs: null', () => {
  it('turns the limit off, logs a warning at start and emits one process warning', async () => {
    const store = createMemoryStore();
    const lines: { level: number; msg: string; handlerTimeoutMs?: unknown }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const limited = createWorker({ store, logger, pacing: new ManualPacing(), handlers: { ping: async () => 'pong' } });
      limited.start();
      await limited.stop({ timeoutMs: 0 });
      expect(lines.filter((l) => l.msg.includes('handlerTimeoutMs'))).toEqual([]);

      const unlimited = createWorker({ store, logger, pacing: new ManualPacing(), handlerTimeoutMs: null, handlers: { ping: async () => 'pong' } });
      expect(unlimited.options.handlerTimeoutMs).toBeNull();
      unlimited.start();
      await unlimited.stop({ timeoutMs: 0 });
      const again = createWorker({ store, logger, pacing: new ManualPacing(), handlerTimeoutMs: null, handlers: { ping: async () => 'pong' } });
      again.start();
      await again.stop({ timeoutMs: 0 });
      await until(() => warnings.length > 0, 'the process warning');
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off('warning', onWarning);
    }
    const warned = lines.filter((l) => l.msg.startsWith('handlerTimeoutMs is null'));
    expect(warned).toHaveLength(2);
    expect(warned[0]).toMatchObject({ level: 40, handlerTimeoutMs: null });
    expect(warnings.map((w) => [w.name, (w as Error & { code?: string }).code])).toEqual([['PostponeWarning', NO_HANDLER_TIMEOUT_WARNING]]);
    expect(warnings[0]?.message).toBe('handlerTimeoutMs is null: a handler that never settles is never failed; its task is handed back at every stop and never goes DEAD');
  });

  it('0 is refused with a hint to use null', () => {
    expect(() => createWorker({ store: createMemoryStore(), handlers: { ping: async () => 'pong' }, handlerTimeoutMs: 0 })).toThrow(
      'handlerTimeoutMs: must be whole milliseconds 1..2147483647, or null to run handlers without a time limit, got 0',
    );
  });
});

describe('the handler signal is made when the handler reads it (issue 24: no AbortController per attempt)', () => {
  it('a handler that reads ctx.signal only after the timeout sees it aborted with the timeout reason; one that reads it before sees the same', async () => {
    const store = createMemoryStore();
    const pacing = new ManualPacing();
    const late = await store.schedule({ kind: 'late', maxAttempts: 1 });
    const early = await store.schedule({ kind: 'early', maxAttempts: 1 });
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: Record<string, { aborted: boolean; reason: unknown; same: boolean }> = {};
    const w = createWorker<any>({
      store,
      pacing,
      handlerTimeoutMs: 1_000,
      abandonGraceMs: 60_000,
      handlers: {
        // Never touches ctx before the timeout has aborted it.
        late: async (_task, ctx) => {
          await released;
          const first = ctx.signal;
          const again = ctx.signal;
          seen.late = { aborted: first.aborted, reason: first.reason, same: first === again };
        },
        early: async (_task, ctx) => {
          const signal = ctx.signal;
          await released;
          seen.early = { aborted: signal.aborted, reason: signal.reason, same: signal === ctx.signal };
        },
      },
    });
    const failed: WorkerEvents['failed'][] = [];
    w.on('failed', (e) => failed.push(e));
    expect((await w.runOnce()).map((t) => t.id).sort()).toEqual([late.id, early.id].sort());
    await until(() => pacing.pendingCount > 0, 'the attempt timers');
    pacing.advance(1_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await until(() => failed.length === 2, 'both attempts failed by the timeout');
    for (const kind of ['late', 'early']) {
      expect(seen[kind]).toMatchObject({ aborted: true, same: true, reason: { code: 'TASK_ABORTED', reason: 'timeout' } });
    }
    expect(failed.map((e) => e.error).sort()).toEqual([
      'TaskAbortedError [TASK_ABORTED]: the handler ran past handlerTimeoutMs (1000 ms)',
      'TaskAbortedError [TASK_ABORTED]: the handler ran past handlerTimeoutMs (1000 ms)',
    ]);
    await w.stop({ timeoutMs: 0 });
  });
});
