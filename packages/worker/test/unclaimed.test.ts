/**
 * Kinds nobody claims (option `unclaimedAfterMs`, issue #27) against real stores (memory, PostgreSQL
 * through pg and postgres.js): due tasks of a kind this worker does not handle are an
 * `unclaimedKinds` event and one warn line naming the kind, the count, how long, the worker's kinds
 * and the closest of them; the tasks are left alone; a kind another worker is claiming is not
 * reported; a failing read is an `error` event, never a rejection. The pacing of the watch (at most
 * one read per period, the first a period after start, a line per pair once then every 10 periods)
 * is checked with `ManualPacing`, step by step.
 */
import { overrideStore, StoreError, TaskState, TestClock } from '@postpone/core';
import { createMemoryStore } from '@postpone/memory';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createWorker, ManualPacing, TypedEmitter, UNCLAIMED_LOG_REPEAT_PERIODS, waitForEvent, type WorkerEvents } from '../src/index.js';
import { closestKind, UnclaimedWatch } from '../src/unclaimed-watch.js';
import { gate, type Harness, perTest, postgresJsHarness, STORE_HARNESSES, until } from './harness.js';

const WARN = 40;

/** pino lines, parsed, from a plain stream object (pino writes to it synchronously). */
function lines(): { all: Record<string, unknown>[]; stream: { write(text: string): void } } {
  const all: Record<string, unknown>[] = [];
  return { all, stream: { write: (text: string) => all.push(JSON.parse(text) as Record<string, unknown>) } };
}

const HARNESSES: [string, () => Promise<Harness<unknown>>][] = [...STORE_HARNESSES, ['postgres-js', postgresJsHarness as () => Promise<Harness<unknown>>]];

describe.each(HARNESSES)('kinds nobody claims (%s store)', (_name, makeHarness) => {
  const t = perTest();

  it('reports a kind this worker does not handle, with the closest handled kind, and leaves its tasks alone; a kind being claimed elsewhere is not reported', async () => {
    const h = await t.open(makeHarness);
    const typo = await Promise.all([1, 2, 3].map(() => h.store.schedule({ kind: 'close-reservaton', payload: null })));
    // Another worker claims `busy-kind` (one task held by its gated handler, one waiting behind it).
    await h.store.schedule({ kind: 'busy-kind' });
    await h.store.schedule({ kind: 'busy-kind' });
    const hold = gate();
    const other = t.track(createWorker({ store: h.store, id: 'other', concurrency: 1, pollIntervalMs: 10, unclaimedAfterMs: null, handlers: { 'busy-kind': async () => { await hold.promise; return null; } } }));
    const claimed = waitForEvent(other, 'claimed');
    other.start();
    await claimed;

    const log = lines();
    const worker = t.track(
      createWorker({
        store: h.store,
        id: 'ab',
        pollIntervalMs: 10,
        reclaimEveryMs: 20,
        unclaimedAfterMs: 200,
        logger: pino({ level: 'info' }, log.stream),
        handlers: { 'close-reservation': async () => null, 'send-receipt': async () => null },
      }),
    );
    const events = waitForEvent(worker, 'unclaimedKinds', { count: 2 });
    worker.start();
    const [first, second] = (await events) as [WorkerEvents['unclaimedKinds'], WorkerEvents['unclaimedKinds']];

    expect(first.queue).toBe('default');
    expect(first.handledKinds).toEqual(['close-reservation', 'send-receipt']);
    expect(first.kinds).toEqual([
      { queue: 'default', kind: 'close-reservaton', due: 3, oldestDueAt: expect.any(Date), overdueMs: expect.any(Number), closestHandledKind: 'close-reservation' },
    ]);
    expect(first.kinds[0]!.overdueMs).toBeGreaterThanOrEqual(200);
    expect(second.kinds.map((k) => k.kind)).toEqual(['close-reservaton']);

    const warned = log.all.filter((l) => l.level === WARN && l.kind === 'close-reservaton');
    expect(warned[0]).toMatchObject({ workerId: 'ab', queue: 'default', due: 3, handledKinds: ['close-reservation', 'send-receipt'], closestHandledKind: 'close-reservation' });
    expect(String(warned[0]!.msg)).toMatch(/^3 tasks of kind "close-reservaton" \(queue "default"\) due for \d+ s with nobody claiming them; this worker handles close-reservation, send-receipt \(did you mean "close-reservation"\?\)$/);
    expect(log.all.some((l) => l.kind === 'busy-kind')).toBe(false);

    for (const { id } of typo) expect(await h.store.getTask(id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
    hold.open();
  });

  it('a paused queue or kind is not reported: nobody claims it on purpose (docs/contract.md#pause-and-resume)', async () => {
    const h = await t.open(makeHarness);
    await h.store.schedule({ kind: 'typo-kind', payload: null });
    await h.store.schedule({ kind: 'paused-kind', payload: null });
    await h.store.schedule({ kind: 'mail', queue: 'paused-queue', payload: null });
    expect(await h.store.pause({ kind: 'paused-kind' })).toBe(true);
    expect(await h.store.pause({ queue: 'paused-queue' })).toBe(true);
    const worker = t.track(
      createWorker({ store: h.store, pollIntervalMs: 10, reclaimEveryMs: 20, unclaimedAfterMs: 200, logger: pino({ level: 'silent' }), handlers: { job: async () => null } }),
    );
    const event = waitForEvent(worker, 'unclaimedKinds');
    worker.start();
    const [first] = (await event) as [WorkerEvents['unclaimedKinds']];
    expect(first.kinds.map((k) => `${k.queue}/${k.kind}`)).toEqual(['default/typo-kind']);
  });

  it('a failing read is an error event (operation unclaimedKinds), never a rejection; the worker keeps working', async () => {
    const h = await t.open(makeHarness);
    let reads = 0;
    const store = overrideStore(h.store, {
      unclaimedKinds: async () => {
        reads += 1;
        throw new StoreError('unclaimedKinds refused by the test', undefined);
      },
    });
    const worker = t.track(createWorker({ store, pollIntervalMs: 10, reclaimEveryMs: 10, unclaimedAfterMs: 30, handlers: { a: async () => 'ok' } }));
    const errors = waitForEvent(worker, 'error', { filter: (e) => e.operation === 'unclaimedKinds', count: 2 });
    worker.start();
    await errors;
    const { id } = await h.store.schedule({ kind: 'a' });
    await until(async () => (await h.store.getTask(id))?.state === TaskState.DONE, 'the task to be DONE');
    expect(reads).toBeGreaterThanOrEqual(2);
  });

  it('unclaimedAfterMs: null never reads', async () => {
    const h = await t.open(makeHarness);
    let reads = 0;
    let sweeps = 0;
    const store = overrideStore(h.store, {
      unclaimedKinds: async (params) => {
        reads += 1;
        return h.store.unclaimedKinds(params);
      },
      reclaimExpired: async (params) => {
        sweeps += 1;
        return h.store.reclaimExpired(params);
      },
    });
    await h.store.schedule({ kind: 'nobody' });
    const worker = t.track(createWorker({ store, pollIntervalMs: 10, reclaimEveryMs: 5, unclaimedAfterMs: null, handlers: { a: async () => null } }));
    worker.start();
    await until(() => sweeps >= 20, '20 reclaim sweeps');
    expect(reads).toBe(0);
  });
});

describe('the watch, step by step (ManualPacing, memory store with a TestClock)', () => {
  it('reads at most once per period, the first a period after start; logs a pair once, again after 10 periods, and anew after it was gone', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const pacing = new ManualPacing();
    const log = lines();
    const events = new TypedEmitter(() => {});
    const seen: WorkerEvents['unclaimedKinds'][] = [];
    events.on('unclaimedKinds', (e) => seen.push(e));
    let reads = 0;
    const counted = overrideStore(store, {
      unclaimedKinds: (params) => {
        reads += 1;
        return store.unclaimedKinds(params);
      },
    });
    const watch = new UnclaimedWatch({ store: counted, afterMs: 1_000, queue: 'default', kinds: ['a'], pacing, events, logger: pino({ level: 'info' }, log.stream) });
    const step = async (ms: number) => {
      pacing.advance(ms);
      clock.tick(ms);
      watch.poke();
      watch.poke(); // a second poke in the same instant starts nothing
      await watch.settled();
    };
    const { id } = await store.schedule({ kind: 'b' });
    await store.schedule({ kind: 'c', queue: 'elsewhere' });
    watch.start();
    await step(999);
    expect(reads).toBe(0);
    await step(1);
    expect(reads).toBe(1);
    expect(seen.at(-1)?.kinds.map((k) => `${k.queue}/${k.kind}`)).toEqual(['default/b', 'elsewhere/c']);
    const warned = () => log.all.filter((l) => l.level === WARN).map((l) => l.kind);
    expect(warned()).toEqual(['b', 'c']);
    expect(String(log.all.find((l) => l.kind === 'c')?.msg)).toMatch(/this worker claims queue "default" only$/);

    for (let period = 1; period < UNCLAIMED_LOG_REPEAT_PERIODS; period++) await step(1_000);
    expect(reads).toBe(UNCLAIMED_LOG_REPEAT_PERIODS);
    expect(seen).toHaveLength(UNCLAIMED_LOG_REPEAT_PERIODS);
    expect(warned()).toEqual(['b', 'c']);
    await step(1_000);
    expect(warned()).toEqual(['b', 'c', 'b', 'c']);

    // b is claimed (someone handles it now): not reported; once it waits again, it is new again.
    const [task] = await store.claim({ owner: 'x', limit: 1, leaseMs: 60_000, kinds: ['b'] });
    await step(1_000);
    expect(seen.at(-1)?.kinds.map((k) => k.kind)).toEqual(['c']);
    expect(await store.release({ id, attempt: task!.attempt })).toBeTruthy();
    clock.tick(1_000);
    await step(1_000);
    expect(warned()).toEqual(['b', 'c', 'b', 'c', 'b']);
  });

  it('closestKind: the nearest handled kind within 3 edits, shorter than the kind; else null', () => {
    expect(closestKind('close-reservaton', ['send-receipt', 'close-reservation'])).toBe('close-reservation');
    expect(closestKind('sendreceipt', ['send-receipt', 'send-receipts'])).toBe('send-receipt');
    expect(closestKind('payout', ['send-receipt'])).toBeNull();
    expect(closestKind('ab', ['b'])).toBe('b');
    expect(closestKind('a', ['b'])).toBeNull();
    expect(closestKind('a', [])).toBeNull();
  });
});
