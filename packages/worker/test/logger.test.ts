import { createMemoryStore } from '@postpone/memory';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createWorker, waitForEvent } from '../src/index.js';

function capture(): { lines: Record<string, unknown>[]; stream: { write(line: string): void } } {
  const lines: Record<string, unknown>[] = [];
  return { lines, stream: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) } };
}

describe('worker logging', () => {
  it('logs through a user pino logger, bound to the worker and the task', async () => {
    const { lines, stream } = capture();
    const store = createMemoryStore();
    const worker = createWorker({
      store,
      id: 'w-log',
      logger: pino({ level: 'debug' }, stream),
      handlers: {
        shaky: async (_task, ctx) => {
          ctx.logger.info({ step: 'inside' }, 'handler says hello');
          throw new Error('shaky failed');
        },
      },
    });
    const { id } = await store.schedule({ kind: 'shaky', maxAttempts: 1 });
    const failed = waitForEvent(worker, 'failed');
    await worker.runOnce();
    await failed;
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'handler says hello', workerId: 'w-log', taskId: id, kind: 'shaky', attempt: 1, step: 'inside' }));
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'task is DEAD: the attempt failed and no attempts are left', level: 40, workerId: 'w-log', taskId: id, next: 'DEAD', failures: 1, error: 'Error: shaky failed' }));
    await worker.stop({ timeoutMs: 0 });
  });

  it('is silent by default and takes a level for its own logger', () => {
    const store = createMemoryStore();
    expect(createWorker({ store, handlers: { a: async () => 1 } }).logger.level).toBe('silent');
    expect(createWorker({ store, handlers: { a: async () => 1 }, logLevel: 'warn' }).logger.level).toBe('warn');
    const { stream } = capture();
    const user = pino({ level: 'info' }, stream);
    expect(createWorker({ store, handlers: { a: async () => 1 }, logger: user, logLevel: 'error' }).logger.level).toBe('error');
    expect(user.level).toBe('info');
  });
});
