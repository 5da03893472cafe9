/**
 * Bad input gets a typed error and loses nothing (docs/contract.md#input-errors), on both drivers: every case asserts
 * the error class and code, and that the task table is still empty.
 */
import {
  ConnectionError,
  MAX_DELAY_MS,
  type PostponeError,
  type ScheduleInput,
  StoreClosedError,
  TestClock,
  ValidationError,
  type ValidationCode,
} from '@postpone/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { captureError } from '@postpone/conformance';
import type { PostgresStore } from '../src/index.js';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

const admin = Admin.create('validation');
afterAll(() => admin.drop());


function cyclic(): unknown {
  const a: Record<string, unknown> = { name: 'a' };
  a.self = a;
  return a;
}

const BAD_SCHEDULES: readonly [string, Record<string, unknown>, ValidationCode, string][] = [
  ['NaN delay', { kind: 'k', delayMs: Number.NaN }, 'INVALID_DELAY', 'delayMs'],
  ['Infinity delay', { kind: 'k', delayMs: Number.POSITIVE_INFINITY }, 'INVALID_DELAY', 'delayMs'],
  ['negative delay', { kind: 'k', delayMs: -1 }, 'INVALID_DELAY', 'delayMs'],
  ['fractional delay', { kind: 'k', delayMs: 1.5 }, 'INVALID_DELAY', 'delayMs'],
  ['delay over MAX_DELAY_MS', { kind: 'k', delayMs: MAX_DELAY_MS + 1 }, 'INVALID_DELAY', 'delayMs'],
  ['delay as text', { kind: 'k', delayMs: '100' }, 'INVALID_DELAY', 'delayMs'],
  ['Invalid Date runAt', { kind: 'k', runAt: new Date(Number.NaN) }, 'INVALID_RUN_AT', 'runAt'],
  ['runAt not a Date', { kind: 'k', runAt: '2030-01-01T00:00:00Z' }, 'INVALID_RUN_AT', 'runAt'],
  ['maxAttempts 0', { kind: 'k', maxAttempts: 0 }, 'INVALID_MAX_ATTEMPTS', 'maxAttempts'],
  ['maxAttempts 1.5', { kind: 'k', maxAttempts: 1.5 }, 'INVALID_MAX_ATTEMPTS', 'maxAttempts'],
  ['maxAttempts NaN', { kind: 'k', maxAttempts: Number.NaN }, 'INVALID_MAX_ATTEMPTS', 'maxAttempts'],
  ['BigInt payload', { kind: 'k', payload: { n: 1n } }, 'INVALID_PAYLOAD', 'payload.n'],
  ['function payload', { kind: 'k', payload: () => 1 }, 'INVALID_PAYLOAD', 'payload'],
  ['cyclic payload', { kind: 'k', payload: cyclic() }, 'INVALID_PAYLOAD', 'payload.self'],
  ['NaN in payload', { kind: 'k', payload: [1, Number.NaN] }, 'INVALID_PAYLOAD', 'payload[1]'],
  ['\\u0000 in payload', { kind: 'k', payload: { text: 'a\u0000b' } }, 'INVALID_PAYLOAD', 'payload.text'],
  ['payload over maxPayloadBytes', { kind: 'k', payload: 'x'.repeat(1_000) }, 'PAYLOAD_TOO_LARGE', 'payload'],
  ['empty kind', { kind: '' }, 'INVALID_KIND', 'kind'],
  ['over-long kind', { kind: 'k'.repeat(201) }, 'INVALID_KIND', 'kind'],
  ['kind not a string', { kind: 7 }, 'INVALID_KIND', 'kind'],
];

const BAD_IDS: readonly unknown[] = ['abc', '-1', '0', 1.5, '99999999999999999999', '', ' 1', null];

describe.each(DRIVERS)('bad input (%s)', (driver) => {
  const kit = makeKit(driver);
  const clock = new TestClock();
  let store: PostgresStore<any>;

  beforeAll(async () => {
    store = kit.store({ schema: admin.schema, clock, maxPayloadBytes: 512 });
    await store.migrate();
  });
  afterEach(() => admin.truncate());
  afterAll(async () => {
    await store.close();
    await kit.close();
  });

  it.each(BAD_SCHEDULES)('schedule: %s → ValidationError, nothing inserted', async (_label, input, code, field) => {
    const error = await captureError(() => store.schedule(input as unknown as ScheduleInput));
    expect(ValidationError.isInstance(error), String(error)).toBe(true);
    expect((error as ValidationError).code).toBe(code);
    expect((error as ValidationError).field).toBe(field);
    expect(await admin.count()).toBe(0);
  });

  it.each(BAD_SCHEDULES)('scheduleMany with one bad task (%s) inserts nothing', async (_label, input, code, field) => {
    const tasks = [{ kind: 'ok' }, { kind: 'ok', delayMs: 5 }, input, { kind: 'ok' }] as unknown as ScheduleInput[];
    const error = await captureError(() => store.scheduleMany(tasks));
    expect(ValidationError.isInstance(error), String(error)).toBe(true);
    expect((error as ValidationError).code).toBe(code);
    expect((error as ValidationError).field).toBe(`tasks[2].${field}`);
    expect(await admin.count()).toBe(0);
  });

  it('delays of 2^31 ms and 2^31−1+1000 ms are valid: stored, due far in the future', async () => {
    const delays = [2 ** 31, 2 ** 31 - 1 + 1_000, MAX_DELAY_MS];
    const scheduled = await store.scheduleMany(delays.map((delayMs) => ({ kind: 'far', delayMs })));
    expect(scheduled.map((s) => s.dueAt.getTime())).toEqual(delays.map((d) => clock.now() + d));
    for (const [i, s] of scheduled.entries()) {
      expect((await store.getTask(s.id))?.dueAt.getTime()).toBe(clock.now() + (delays[i] as number));
    }
    expect(await store.claim({ owner: 'w', limit: 10, leaseMs: 1_000 })).toEqual([]);
    expect(await admin.count()).toBe(3);
  });

  it.each(BAD_IDS)('malformed id %j → INVALID_TASK_ID for cancel, getTask, getCompletion, extend, complete, fail, release', async (id) => {
    await store.schedule({ kind: 'k' });
    const calls: (() => unknown)[] = [
      () => store.cancel(id as string),
      () => store.getTask(id as string),
      () => store.getCompletion(id as string),
      () => store.extend({ id: id as string, attempt: 1, leaseMs: 1_000 }),
      () => store.complete({ id: id as string, attempt: 1, owner: 'w' }),
      () => store.fail({ id: id as string, attempt: 1, error: 'e', backoffMs: 0 }),
      () => store.release({ id: id as string, attempt: 1 }),
    ];
    for (const call of calls) {
      const error = await captureError(call);
      expect(ValidationError.isInstance(error), String(error)).toBe(true);
      expect((error as ValidationError).code).toBe('INVALID_TASK_ID');
    }
    expect(await store.countByState()).toMatchObject({ SCHEDULED: 1, CANCELLED: 0 });
  });

  it.each([
    ['limit 0', { owner: 'w', limit: 0, leaseMs: 1_000 }, 'limit'],
    ['limit 10001', { owner: 'w', limit: 10_001, leaseMs: 1_000 }, 'limit'],
    ['limit 1.5', { owner: 'w', limit: 1.5, leaseMs: 1_000 }, 'limit'],
    ['leaseMs 0', { owner: 'w', limit: 1, leaseMs: 0 }, 'leaseMs'],
    ['leaseMs NaN', { owner: 'w', limit: 1, leaseMs: Number.NaN }, 'leaseMs'],
    ['empty owner', { owner: '', limit: 1, leaseMs: 1_000 }, 'owner'],
  ])('claim with %s → INVALID_OPTION, nothing claimed', async (_label, params, field) => {
    await store.schedule({ kind: 'k' });
    const error = await captureError(() => store.claim(params));
    expect(ValidationError.isInstance(error), String(error)).toBe(true);
    expect((error as ValidationError).code).toBe('INVALID_OPTION');
    expect((error as ValidationError).field).toBe(field);
    expect(await store.countByState()).toMatchObject({ SCHEDULED: 1, CLAIMED: 0 });
  });

  it('complete with a result that is not JSON → INVALID_RESULT, the task stays CLAIMED', async () => {
    const { id } = await store.schedule({ kind: 'k' });
    const [claimed] = await store.claim({ owner: 'w', limit: 1, leaseMs: 1_000 });
    const error = await captureError(() => store.complete({ id, attempt: claimed?.attempt ?? 0, owner: 'w', result: { n: 1n } }));
    expect((error as ValidationError).code).toBe('INVALID_RESULT');
    expect((await store.getTask(id))?.state).toBe('CLAIMED');
    expect(await store.getCompletion(id)).toBeNull();
  });

  it('fail with negative backoff → INVALID_OPTION; the task stays CLAIMED', async () => {
    const { id } = await store.schedule({ kind: 'k' });
    await store.claim({ owner: 'w', limit: 1, leaseMs: 1_000 });
    const error = await captureError(() => store.fail({ id, attempt: 1, error: 'e', backoffMs: -5 }));
    expect((error as ValidationError).code).toBe('INVALID_OPTION');
    expect((error as ValidationError).field).toBe('backoffMs');
    expect((await store.getTask(id))?.state).toBe('CLAIMED');
  });

  it('fail keeps at most 2000 characters of error text, \\u0000 replaced', async () => {
    const { id } = await store.schedule({ kind: 'k' });
    await store.claim({ owner: 'w', limit: 1, leaseMs: 1_000 });
    await store.fail({ id, attempt: 1, error: `a\u0000${'e'.repeat(3_000)}`, backoffMs: 0 });
    const task = await store.getTask(id);
    expect(task?.lastError).toHaveLength(2_000);
    expect(task?.lastError?.slice(0, 3)).toBe('a\uFFFDe');
  });

  it('a closed store throws StoreClosedError from every method; close is idempotent; nothing is written', async () => {
    const closing = kit.store({ schema: admin.schema, clock });
    const { id } = await closing.schedule({ kind: 'k' });
    await closing.close();
    await closing.close();
    const calls: (() => unknown)[] = [
      () => closing.migrate(),
      () => closing.schedule({ kind: 'k' }),
      () => closing.scheduleMany([{ kind: 'k' }]),
      () => closing.cancel(id),
      () => closing.claim({ owner: 'w', limit: 1, leaseMs: 1_000 }),
      () => closing.extend({ id, attempt: 1, leaseMs: 1_000 }),
      () => closing.complete({ id, attempt: 1, owner: 'w' }),
      () => closing.fail({ id, attempt: 1, error: 'e', backoffMs: 0 }),
      () => closing.release({ id, attempt: 1 }),
      () => closing.reclaimExpired(),
      () => closing.peekDue({ withinMs: 0 }),
      () => closing.getTask(id),
      () => closing.getCompletion(id),
      () => closing.countByState(),
      () => closing.now(),
      () => closing.listen(() => {}),
    ];
    for (const call of calls) {
      const error = await captureError(call);
      expect(error).toBeInstanceOf(StoreClosedError);
      expect((error as PostponeError).code).toBe('STORE_CLOSED');
    }
    expect(await admin.count()).toBe(1);
    // The pool given to the store is the owner's: it still works.
    expect((await store.countByState()).SCHEDULED).toBe(1);
  });

  it('a store pointed at a port with nothing listening → ConnectionError REFUSED, nothing written', async () => {
    const { freePort } = await import('@postpone/embedded');
    const url = new URL(kit.url);
    url.port = String(await freePort());
    const deadKit = makeKit(driver, url.toString());
    const dead = deadKit.store({ schema: admin.schema });
    try {
      const error = await captureError(() => dead.schedule({ kind: 'k' }));
      expect(error).toBeInstanceOf(ConnectionError);
      expect((error as ConnectionError).code).toBe('CONNECTION_FAILED');
      expect((error as ConnectionError).reason).toBe('REFUSED');
      expect(await captureError(() => dead.claim({ owner: 'w', limit: 1, leaseMs: 1_000 }))).toMatchObject({ reason: 'REFUSED' });
      expect(await captureError(() => dead.listen(() => {}))).toMatchObject({ reason: 'REFUSED' });
    } finally {
      await dead.close();
      await deadKit.close();
    }
    expect(await admin.count()).toBe(0);
  });
});
