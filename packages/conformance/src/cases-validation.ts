/**
 * Bad input gets a typed ValidationError with the right code and nothing is written; edge values
 * just inside the limits are accepted (docs/contract.md#input-errors).
 */
import {
  DEFAULT_MAX_PAYLOAD_BYTES,
  MAX_DELAY_MS,
  MAX_KIND_LENGTH,
  MAX_RUN_AT_MS,
  type ScheduleInput,
  type TaskId,
  type ValidationCode,
} from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { expectValidationError, mustGetTask, scheduleAndClaim, stateCounts } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

function cyclic(): unknown {
  const o: Record<string, unknown> = { a: 1 };
  o.self = o;
  return o;
}

const BAD_SCHEDULES: readonly [string, () => unknown, ValidationCode, string][] = [
  ['delayMs NaN', () => ({ kind: 'k', delayMs: Number.NaN }), 'INVALID_DELAY', 'delayMs'],
  ['delayMs -1', () => ({ kind: 'k', delayMs: -1 }), 'INVALID_DELAY', 'delayMs'],
  ['delayMs 1.5', () => ({ kind: 'k', delayMs: 1.5 }), 'INVALID_DELAY', 'delayMs'],
  ['delayMs Infinity', () => ({ kind: 'k', delayMs: Number.POSITIVE_INFINITY }), 'INVALID_DELAY', 'delayMs'],
  ['delayMs beyond MAX_DELAY_MS', () => ({ kind: 'k', delayMs: MAX_DELAY_MS + 1 }), 'INVALID_DELAY', 'delayMs'],
  ['delayMs as text', () => ({ kind: 'k', delayMs: '100' }), 'INVALID_DELAY', 'delayMs'],
  ['both delayMs and runAt', () => ({ kind: 'k', delayMs: 1, runAt: new Date() }), 'INVALID_DELAY', 'delayMs'],
  ['runAt Invalid Date', () => ({ kind: 'k', runAt: new Date(Number.NaN) }), 'INVALID_RUN_AT', 'runAt'],
  ['runAt as text', () => ({ kind: 'k', runAt: '2030-01-01T00:00:00Z' }), 'INVALID_RUN_AT', 'runAt'],
  ['runAt past year 9999', () => ({ kind: 'k', runAt: new Date(MAX_RUN_AT_MS + 1) }), 'INVALID_RUN_AT', 'runAt'],
  ['maxAttempts 0', () => ({ kind: 'k', maxAttempts: 0 }), 'INVALID_MAX_ATTEMPTS', 'maxAttempts'],
  ['maxAttempts 1.5', () => ({ kind: 'k', maxAttempts: 1.5 }), 'INVALID_MAX_ATTEMPTS', 'maxAttempts'],
  ['maxAttempts 2^31', () => ({ kind: 'k', maxAttempts: 2 ** 31 }), 'INVALID_MAX_ATTEMPTS', 'maxAttempts'],
  ['payload BigInt', () => ({ kind: 'k', payload: { n: 10n } }), 'INVALID_PAYLOAD', 'payload.n'],
  ['payload with a cycle', () => ({ kind: 'k', payload: cyclic() }), 'INVALID_PAYLOAD', 'payload.self'],
  ['payload with \\u0000', () => ({ kind: 'k', payload: { s: 'a\u0000b' } }), 'INVALID_PAYLOAD', 'payload.s'],
  ['payload NaN', () => ({ kind: 'k', payload: [1, Number.NaN] }), 'INVALID_PAYLOAD', 'payload[1]'],
  ['payload a function', () => ({ kind: 'k', payload: () => 1 }), 'INVALID_PAYLOAD', 'payload'],
  ['payload integer 2^53', () => ({ kind: 'k', payload: { orderId: 2 ** 53 } }), 'UNSAFE_INTEGER', 'payload.orderId'],
  ['payload integer below -(2^53 - 1)', () => ({ kind: 'k', payload: { items: [1, -(2 ** 60)] } }), 'UNSAFE_INTEGER', 'payload.items[1]'],
  ['payload too large', () => ({ kind: 'k', payload: 'x'.repeat(DEFAULT_MAX_PAYLOAD_BYTES) }), 'PAYLOAD_TOO_LARGE', 'payload'],
  ['empty kind', () => ({ kind: '' }), 'INVALID_KIND', 'kind'],
  ['kind of only spaces', () => ({ kind: '  ' }), 'INVALID_KIND', 'kind'],
  ['queue of only white space', () => ({ kind: 'k', queue: ' \u00a0' }), 'INVALID_QUEUE', 'queue'],
  ['201-character kind', () => ({ kind: 'k'.repeat(MAX_KIND_LENGTH + 1) }), 'INVALID_KIND', 'kind'],
  ['kind with a control character', () => ({ kind: 'a\nb' }), 'INVALID_KIND', 'kind'],
  ['missing kind', () => ({ delayMs: 1 }), 'INVALID_KIND', 'kind'],
];

const MALFORMED_IDS: readonly unknown[] = ['abc', '0', '-1', 1.5, '', '1.5', ' 1', '9223372036854775808'];

export function validationCases(h: HarnessRef): void {
  describe('input validation', () => {
    it.each(BAD_SCHEDULES)('schedule refuses %s and inserts nothing', async (_label, input, code, field) => {
      const { store } = h();
      await expectValidationError(() => store.schedule(input() as ScheduleInput), code, field);
      await expectValidationError(() => store.scheduleMany([{ kind: 'ok' }, input() as ScheduleInput]), code, `tasks[1].${field}`);
      expect(await store.countByState()).toEqual(stateCounts());
    });

    it('accepts the edge values', async () => {
      const { store, clock } = h();
      const now = clock.now();
      const cases: [ScheduleInput, number][] = [
        [{ kind: 'k', delayMs: 0 }, now],
        [{ kind: 'k', delayMs: 2 ** 31 }, now + 2 ** 31],
        [{ kind: 'k', delayMs: MAX_DELAY_MS }, now + MAX_DELAY_MS],
        [{ kind: 'k'.repeat(MAX_KIND_LENGTH), maxAttempts: 1 }, now],
        [{ kind: 'k', maxAttempts: 2 ** 31 - 1 }, now],
        [{ kind: 'k', runAt: new Date(now + MAX_DELAY_MS) }, now + MAX_DELAY_MS],
      ];
      for (const [input, dueMs] of cases) {
        const { id, dueAt } = await store.schedule(input);
        expect(dueAt.getTime()).toBe(dueMs);
        const task = await mustGetTask(store, id);
        expect(task).toMatchObject({ kind: input.kind, dueAt: new Date(dueMs), maxAttempts: input.maxAttempts ?? task.maxAttempts });
      }
      expect(await store.countByState()).toEqual(stateCounts({ SCHEDULED: cases.length }));
    });

    it('refuses a runAt more than 100 years after the store\'s now, the cap delayMs has, and inserts nothing', async () => {
      const { store, clock } = h();
      const tooLate = new Date(clock.now() + MAX_DELAY_MS + 1);
      const error = await expectValidationError(() => store.schedule({ kind: 'k', runAt: tooLate }), 'INVALID_RUN_AT', 'runAt');
      expect(error.message).toContain(`must be at most ${MAX_DELAY_MS} ms (100 years) after now (${new Date(clock.now()).toISOString()})`);
      await expectValidationError(() => store.scheduleMany([{ kind: 'ok' }, { kind: 'k', runAt: new Date(MAX_RUN_AT_MS) }]), 'INVALID_RUN_AT', 'tasks[1].runAt');
      expect(await store.countByState()).toEqual(stateCounts());
    });

    it('accepts a payload of exactly the size limit', async () => {
      const { store } = h();
      const payload = 'x'.repeat(DEFAULT_MAX_PAYLOAD_BYTES - 2); // plus two quotes = the limit
      const { id } = await store.schedule({ kind: 'k', payload, delayMs: 60_000 });
      expect((await mustGetTask(store, id)).payload).toBe(payload);
    });

    it('keeps integers up to ±(2^53 − 1) exact; refuses a larger one in a result and leaves the attempt CLAIMED', async () => {
      const { store } = h();
      const payload = { max: Number.MAX_SAFE_INTEGER, min: -Number.MAX_SAFE_INTEGER, orderId: '9007199254740993' };
      const { id } = await store.schedule({ kind: 'k', payload, delayMs: 60_000 });
      expect((await mustGetTask(store, id)).payload).toEqual(payload);
      const c = await scheduleAndClaim(store);
      const before = await mustGetTask(store, c.id);
      await expectValidationError(() => store.complete({ id: c.id, attempt: c.attempt, owner: 'w1', result: { total: 2 ** 53 } }), 'UNSAFE_INTEGER', 'result.total');
      await expectValidationError(
        () => store.completeMany([{ id: c.id, attempt: c.attempt, owner: 'w1', result: { total: -(2 ** 53) } }]),
        'UNSAFE_INTEGER',
        'items[0].result.total',
      );
      expect(await mustGetTask(store, c.id)).toEqual(before);
      expect(await store.getCompletion(c.id)).toBeNull();
    });

    it.each(MALFORMED_IDS)('refuses the malformed id %j in every call that takes one', async (badId) => {
      const { store } = h();
      const id = badId as TaskId;
      await expectValidationError(() => store.cancel(id), 'INVALID_TASK_ID');
      await expectValidationError(() => store.getTask(id), 'INVALID_TASK_ID');
      await expectValidationError(() => store.getCompletion(id), 'INVALID_TASK_ID');
      await expectValidationError(() => store.extend({ id, attempt: 1, leaseMs: 1_000 }), 'INVALID_TASK_ID');
      await expectValidationError(() => store.complete({ id, attempt: 1, owner: 'w1' }), 'INVALID_TASK_ID');
      await expectValidationError(() => store.fail({ id, attempt: 1, error: 'x', backoffMs: 0 }), 'INVALID_TASK_ID');
      await expectValidationError(() => store.release({ id, attempt: 1 }), 'INVALID_TASK_ID');
    });

    it('refuses bad worker parameters and changes nothing', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      await store.schedule({ kind: 'waiting' });
      const before = await mustGetTask(store, c.id);
      const counts = await store.countByState();
      await expectValidationError(() => store.claim({ owner: 'w1', limit: 0, leaseMs: 1_000 }), 'INVALID_OPTION');
      await expectValidationError(() => store.claim({ owner: 'w1', limit: 1.5, leaseMs: 1_000 }), 'INVALID_OPTION');
      await expectValidationError(() => store.claim({ owner: 'w1', limit: 1, leaseMs: 0 }), 'INVALID_OPTION');
      await expectValidationError(() => store.claim({ owner: 'w1', limit: 1, leaseMs: Number.NaN }), 'INVALID_OPTION');
      await expectValidationError(() => store.extend({ id: c.id, attempt: 0, leaseMs: 1_000 }), 'INVALID_OPTION');
      await expectValidationError(() => store.extend({ id: c.id, attempt: 1, leaseMs: -5 }), 'INVALID_OPTION');
      await expectValidationError(() => store.complete({ id: c.id, attempt: 1.5, owner: 'w1' }), 'INVALID_OPTION');
      await expectValidationError(() => store.complete({ id: c.id, attempt: 1, owner: 'w1', result: { n: 1n } }), 'INVALID_RESULT');
      await expectValidationError(() => store.fail({ id: c.id, attempt: -1, error: 'x', backoffMs: 0 }), 'INVALID_OPTION');
      await expectValidationError(() => store.fail({ id: c.id, attempt: 1, error: 'x', backoffMs: -1 }), 'INVALID_OPTION');
      await expectValidationError(() => store.release({ id: c.id, attempt: 0 }), 'INVALID_OPTION');
      await expectValidationError(() => store.peekDue({ withinMs: -1 }), 'INVALID_OPTION');
      expect(await mustGetTask(store, c.id)).toEqual(before);
      expect(await store.getCompletion(c.id)).toBeNull();
      expect(await store.countByState()).toEqual(counts);
    });

    it('refuses an unknown field or a non-object in every worker call, and changes nothing', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      await store.schedule({ kind: 'waiting' });
      const before = await mustGetTask(store, c.id);
      const counts = await store.countByState();
      // A misspelt filter must not widen a claim: `queues` is not `queue` (found by a user: it claimed from 'default').
      const calls: [string, () => unknown][] = [
        ['queues', () => store.claim({ owner: 'w1', limit: 5, leaseMs: 1_000, queues: ['reports'] } as never)],
        ['withinMS', () => store.peekDue({ withinMs: 0, withinMS: 5 } as never)],
        ['limt', () => store.reclaimExpired({ limt: 5 } as never)],
        ['lease', () => store.extend({ id: c.id, attempt: 1, leaseMs: 1_000, lease: 1 } as never)],
        ['reslt', () => store.complete({ id: c.id, attempt: 1, owner: 'w1', reslt: 1 } as never)],
        ['retry', () => store.fail({ id: c.id, attempt: 1, error: 'x', backoffMs: 0, retry: false } as never)],
        ['owner', () => store.release({ id: c.id, attempt: 1, owner: 'w1' } as never)],
      ];
      for (const [field, call] of calls) await expectValidationError(call, 'INVALID_OPTION', field);
      for (const call of [() => store.claim(undefined as never), () => store.extend(null as never), () => store.complete([] as never), () => store.fail('x' as never)]) {
        await expectValidationError(call, 'INVALID_OPTION', 'params');
      }
      expect(await mustGetTask(store, c.id)).toEqual(before);
      expect(await store.getCompletion(c.id)).toBeNull();
      expect(await store.countByState()).toEqual(counts);
    });
  });
}
