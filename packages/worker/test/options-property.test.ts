/**
 * The whole option space: whatever createWorker accepts must work. A worker built from accepted
 * options is started against a real (in-memory) store, and none of the store calls its loop and
 * discovery make may be refused as invalid input (the kind of fault where `hybrid: { tickMs: 1000,
 * levels: 5, slotsPerLevel: 256 }` passed validation and then every wheel load failed). A prune
 * schedule, when accepted, must give prunes the store accepts too.
 */
import { overrideStore, ValidationError } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWorker, type WorkerOptions } from '../src/index.js';
import { until } from './harness.js';

/** Mostly ordinary values, sometimes the edges the validators and the wheel care about. */
const edges = fc.oneof(
  fc.constantFrom(0, 2_147_483_647, 2_147_483_648, 3_155_760_000_000, 3_155_760_000_001),
  fc.integer({ min: 0, max: 2 ** 40 }),
);
const within = (min: number, max: number) => fc.oneof({ arbitrary: fc.integer({ min, max }), weight: 12 }, { arbitrary: edges, weight: 1 });
const ms = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 5_000 }), weight: 8 },
  { arbitrary: fc.constantFrom(0, 2_147_483_647, 2_147_483_648, 3_155_760_000_000, 3_155_760_000_001), weight: 1 },
  { arbitrary: fc.integer({ min: 0, max: 2 ** 40 }), weight: 1 },
);
const count = fc.oneof({ arbitrary: fc.integer({ min: 1, max: 70 }), weight: 8 }, { arbitrary: fc.constantFrom(0, 4_096, 10_000, 10_001), weight: 1 });
const powerOfTwo = fc.oneof({ arbitrary: fc.integer({ min: 1, max: 12 }).map((n) => 2 ** n), weight: 8 }, { arbitrary: count, weight: 1 });

const options = fc.record(
  {
    concurrency: count,
    leaseMs: within(1_000, 60_000),
    renewEveryMs: within(1, 1_000),
    discovery: fc.constantFrom('poll', 'hybrid'),
    pollIntervalMs: ms,
    reclaimEveryMs: ms,
    backoffBaseMs: ms,
    maxBackoffMs: ms,
    handlerTimeoutMs: ms,
    abandonGraceMs: ms,
    completeBatchSize: count,
    completeBatchDelayMs: within(0, 100),
    prune: fc.record({ olderThanMs: ms, everyMs: ms, batchSize: count }, { requiredKeys: [] }),
    hybrid: fc.record(
      {
        fallbackPollMs: ms,
        tickMs: fc.oneof(fc.integer({ min: 1, max: 1_000 }), ms),
        levels: fc.integer({ min: 0, max: 7 }),
        slotsPerLevel: powerOfTwo,
        loadLimit: count,
        pauseThresholdMs: ms,
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: [] },
);

describe('worker options, the whole space', () => {
  it('refuses the reported wheel that could never load', () => {
    const store = createMemoryStore();
    const make = () => createWorker({ store, handlers: { ping: async () => 'pong' }, discovery: 'hybrid', hybrid: { tickMs: 1_000, levels: 5, slotsPerLevel: 256 } });
    expect(make).toThrow(ValidationError);
    expect(make).toThrow(/hybrid\.levels: .*100 years/);
  });

  it('every accepted set of options gives a worker whose claims and loads the store accepts', async () => {
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(options, async (chosen) => {
        const base = createMemoryStore();
        const refused: unknown[] = [];
        const calls = { claim: 0, peekDue: 0, reclaimExpired: 0, prune: 0 };
        const watch =
          <A, R>(name: keyof typeof calls, call: (params: A) => Promise<R>) =>
          async (params: A): Promise<R> => {
            calls[name] += 1;
            try {
              return await call(params);
            } catch (error) {
              refused.push(error);
              throw error;
            }
          };
        const store = overrideStore(base, {
          claim: watch('claim', (p) => base.claim(p)),
          peekDue: watch('peekDue', (p) => base.peekDue(p)),
          reclaimExpired: watch('reclaimExpired', (p?: Parameters<typeof base.reclaimExpired>[0]) => base.reclaimExpired(p)),
          prune: watch('prune', (p: Parameters<typeof base.prune>[0]) => base.prune(p)),
        });
        let worker: ReturnType<typeof createWorker> | undefined;
        try {
          worker = createWorker({ store, handlers: { ping: async () => 'pong' }, ...chosen } as WorkerOptions<unknown>);
        } catch (error) {
          if (!ValidationError.isInstance(error) || error.code !== 'INVALID_OPTION') throw error;
          return;
        }
        accepted += 1;
        // A task due now: a hybrid worker claims only when a timer fires (its first load lists everything).
        await base.schedule({ kind: 'ping' });
        worker.start();
        try {
          await until(
            () => calls.claim > 0 && (worker.options.discovery === 'poll' || calls.peekDue > 0) && (worker.options.prune === null || calls.prune > 0),
            'the first claim, load and prune',
            5_000,
          );
        } finally {
          await worker.stop({ timeoutMs: 0 });
        }
        expect(refused).toEqual([]);
      }),
      // A fixed seed: the share of accepted option sets depends on the draw, and the bound below is
      // about the generator, not about luck (a draw of 30 accepted failed once under load).
      { numRuns: 500, seed: 20261202 },
    );
    // The generator must reach the accepted space, or the property says nothing.
    expect(accepted).toBeGreaterThan(30);
  });
});
