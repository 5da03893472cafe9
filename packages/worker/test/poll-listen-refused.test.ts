/**
 * A polling worker whose store refuses LISTEN for good (a ValidationError: e.g. `pooler:
 * 'transaction'` without `listenConnectionString`) reports it once and keeps claiming; it does not
 * ask again every LISTEN_RETRY_MS (issue 12, pgbouncer_transaction_mode).
 */
import { overrideStore, ValidationError } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { expect, it } from 'vitest';
import { createWorker } from '../src/index.js';
import { LISTEN_RETRY_MS } from '../src/discovery/poll.js';
import { until } from './harness.js';

it('poll: a refused LISTEN is reported once and never asked again; claims go on', async () => {
  const memory = createMemoryStore();
  let listenCalls = 0;
  const store = Object.assign(overrideStore(memory, {}), {
    listen: async () => {
      listenCalls += 1;
      throw new ValidationError('INVALID_OPTION', 'listenConnectionString', 'LISTEN does not work through a transaction pooler');
    },
  });
  const done: string[] = [];
  const errors: string[] = [];
  const worker = createWorker({ store, handlers: { t: async (task) => void done.push(task.id) }, discovery: 'poll', pollIntervalMs: 50 });
  worker.on('error', ({ operation }) => errors.push(operation));
  await worker.start();
  try {
    const first = await memory.schedule({ kind: 't' });
    await until(() => done.includes(first.id), 'the first task done');
    await new Promise((r) => setTimeout(r, LISTEN_RETRY_MS + 500));
    const second = await memory.schedule({ kind: 't' });
    await until(() => done.includes(second.id), 'the second task done');
    expect(listenCalls).toBe(1);
    expect(errors.filter((o) => o === 'listen')).toEqual(['listen']);
  } finally {
    await worker.stop({ timeoutMs: 2_000 });
  }
}, 20_000);
