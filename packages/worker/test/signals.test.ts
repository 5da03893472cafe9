/**
 * One Ctrl-C under `tsx` is two signals (issue 27 item 3): the terminal sends SIGINT to the whole
 * process group and tsx forwards its own copy to the child, a few ms apart. The worker's rule "a
 * second signal hands running tasks back at once" fired on that duplicate. Now a signal within
 * `sameSignalWindowMs` (default 1 000) of the first is the same signal. A real child process
 * (`fixtures/signal-child.mjs`, the built package on PostgreSQL) receives the signals.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TaskState } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import { withTimeout } from '@postpone/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from '@postpone/memory';
import { createWorker, SAME_SIGNAL_WINDOW_MS } from '../src/index.js';

const CHILD = fileURLToPath(new URL('./fixtures/signal-child.mjs', import.meta.url));

interface Child {
  readonly child: ChildProcess;
  /** Resolves with stdout once a line starting with `prefix` was printed. */
  line(prefix: string): Promise<string>;
  readonly exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function startChild(config: Record<string, unknown>): Child {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiting: { prefix: string; resolve: (line: string) => void }[] = [];
  const check = () => {
    for (const w of [...waiting]) {
      const found = stdout.split('\n').find((l) => l.startsWith(w.prefix));
      if (found !== undefined) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(found);
      }
    }
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    check();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return {
    child,
    exited,
    line: (prefix) =>
      new Promise((resolve) => {
        waiting.push({ prefix, resolve });
        check();
      }),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('signals: one Ctrl-C delivered twice is one signal', () => {
  const url = testDatabaseUrl();
  const schemas: string[] = [];
  const children: ChildProcess[] = [];

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    for (const schema of schemas) await dropSchema(url, schema);
  });

  async function run(taskMs: number, gapMs: number): Promise<{ stopped: unknown; task: unknown; stdout: string }> {
    const schema = uniqueSchemaName('worker_signal');
    schemas.push(schema);
    const store = createPgStore({ connectionString: url, schema });
    try {
      await store.migrate();
      const { id } = await store.schedule({ kind: 'job', payload: { ms: taskMs }, maxAttempts: 3 });
      const c = startChild({ url, schema });
      children.push(c.child);
      await withTimeout(c.line(`started ${id}`), 30_000, 'the handler to start');
      c.child.kill('SIGINT');
      await sleep(gapMs);
      c.child.kill('SIGINT');
      const stoppedLine = await withTimeout(c.line('stopped '), 30_000, 'the worker to stop');
      const exit = await withTimeout(c.exited, 30_000, 'the child to exit');
      expect(exit.code).toBe(0);
      return { stopped: JSON.parse(stoppedLine.slice('stopped '.length)), task: await store.getTask(id), stdout: exit.stdout };
    } finally {
      await store.close();
    }
  }

  it('two SIGINTs 40 ms apart: the running task finishes (DONE), nothing is handed back', async () => {
    const { stopped, task, stdout } = await run(1_000, 40);
    expect(stopped).toEqual({ handedBack: 0, handBackFailed: 0 });
    expect(task).toMatchObject({ state: TaskState.DONE, attempt: 1, failures: 0, result: 'finished', lastError: null });
    expect(stdout).toContain('signal again within sameSignalWindowMs: taken as the same signal');
    expect(stdout).not.toContain('second signal: handing running tasks back now');
  });

  it('two SIGINTs 1.5 s apart: the second hands the running task back at once', async () => {
    const { stopped, task, stdout } = await run(20_000, 1_500);
    expect(stopped).toEqual({ handedBack: 1, handBackFailed: 0 });
    expect(task).toMatchObject({ state: TaskState.SCHEDULED, attempt: 1, failures: 0, leaseOwner: null });
    expect(stdout).toContain('second signal: handing running tasks back now');
  });

  it('sameSignalWindowMs defaults to 1 000 and is validated', () => {
    expect(SAME_SIGNAL_WINDOW_MS).toBe(1_000);
    const worker = createWorker({ store: createMemoryStore(), handlers: { ping: async () => 'pong' } });
    expect(() => worker.installSignalHandlers({ signals: ['SIGUSR2'], sameSignalWindowMs: -1 })).toThrow('sameSignalWindowMs: must be');
    expect(process.listenerCount('SIGUSR2')).toBe(0);
  });

  it('refuses signals a process cannot catch, unknown names and an empty list, installing nothing (found by a new user: SIGKILL threw a raw EINVAL, [] and SIGFOO were accepted)', () => {
    const worker = createWorker({ store: createMemoryStore(), handlers: { ping: async () => 'pong' } });
    const before = process.listenerCount('SIGTERM');
    for (const [signals, field] of [
      [['SIGKILL'], 'signals[0]'],
      [['SIGTERM', 'SIGSTOP'], 'signals[1]'],
      [['SIGFOO'], 'signals[0]'],
      [[], 'signals'],
      ['SIGTERM', 'signals'],
    ] as const) {
      let caught: unknown;
      try {
        worker.installSignalHandlers({ signals: signals as never });
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(signals)).toMatchObject({ name: 'ValidationError', code: 'INVALID_OPTION', field });
    }
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});
