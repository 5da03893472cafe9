/**
 * Compile-time checks of typed scheduling: `tsc` (this package's typecheck) fails if any
 * `@ts-expect-error` below stops being an error, i.e. if a wrong payload or an unknown kind compiled.
 * The one runtime case proves the typed call schedules a real task (in-memory store).
 */
import { createMemoryStore, type MemoryTx } from '@postpone/memory';
import type { PgTx } from '@postpone/postgres/pg';
import type { SqlExecutor } from '@postpone/postgres';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createScheduler, type HandlerMap, type TypedScheduleInput } from '../src/index.js';
import { createScheduler as fromSubpath } from '../src/scheduler.js';

type Payloads = {
  'close-reservation': { reservationId: number };
  'send-reminder': { email: string; minutesBefore: number };
  /** A kind whose payload may be left out (null is its default). */
  tick: null;
};

// The same map types the worker's handlers: both sides agree on every kind's payload.
const handlers: HandlerMap<MemoryTx, Payloads> = {
  'close-reservation': async (task) => task.payload.reservationId,
  'send-reminder': async (task) => task.payload.email,
  tick: async () => null,
};

describe('typed scheduling', () => {
  it('a wrong payload or an unknown kind does not compile', async () => {
    const scheduler = createScheduler<Payloads>(createMemoryStore());
    const typeErrors = async () => {
      // @ts-expect-error reservationId must be a number
      await scheduler.schedule({ kind: 'close-reservation', payload: { reservationId: '42' } });
      // @ts-expect-error the payload of close-reservation is required
      await scheduler.schedule({ kind: 'close-reservation', delayMs: 1_000 });
      // @ts-expect-error send-reminder has no reservationId (and misses email, minutesBefore)
      await scheduler.schedule({ kind: 'send-reminder', payload: { reservationId: 42 } });
      // @ts-expect-error no handler for kind 'close-reservaton'
      await scheduler.schedule({ kind: 'close-reservaton', payload: { reservationId: 42 } });
      // @ts-expect-error each element of scheduleMany is checked against its own kind
      await scheduler.scheduleMany([{ kind: 'tick' }, { kind: 'send-reminder', payload: { reservationId: 1 } }]);
      // @ts-expect-error a field the store does not take
      await scheduler.schedule({ kind: 'tick', dueAt: new Date() });
    };
    expectTypeOf(typeErrors).toBeFunction();
  });

  it('types tx by the store it is given', () => {
    expectTypeOf(createScheduler<Payloads, PgTx | SqlExecutor>).parameter(0).toHaveProperty('schedule');
    type Options = Parameters<ReturnType<typeof createScheduler<Payloads, MemoryTx>>['schedule']>[1];
    expectTypeOf<NonNullable<Options>['tx']>().toEqualTypeOf<MemoryTx | undefined>();
    expectTypeOf<TypedScheduleInput<Payloads, 'tick'>['payload']>().toEqualTypeOf<null | undefined>();
    expectTypeOf(fromSubpath).toEqualTypeOf(createScheduler);
    expectTypeOf(handlers['tick']).parameter(0).toHaveProperty('payload').toEqualTypeOf<null>();
  });

  it('the typed call schedules a real task, inside a transaction too, and cancels it', async () => {
    const store = createMemoryStore();
    const scheduler = createScheduler<Payloads, MemoryTx>(store);
    const { id } = await scheduler.schedule({ kind: 'close-reservation', payload: { reservationId: 42 }, delayMs: 1_800_000, key: 'reservation-42' });
    expect(await store.getTask(id)).toMatchObject({ kind: 'close-reservation', payload: { reservationId: 42 }, key: 'reservation-42', state: 'SCHEDULED' });
    const [tick, reminder] = await scheduler.scheduleMany([{ kind: 'tick' }, { kind: 'send-reminder', payload: { email: 'a@example.com', minutesBefore: 15 } }]);
    expect((await store.getTask(tick?.id as string))?.payload).toBeNull();
    expect((await store.getTask(reminder?.id as string))?.payload).toEqual({ email: 'a@example.com', minutesBefore: 15 });
    const inTx = await store.transaction(async (tx) => {
      tx.insert('reservation', '43', { status: 'pending' });
      expect(await scheduler.cancel(id, { tx })).toBe('CANCELLED');
      return await scheduler.schedule({ kind: 'close-reservation', payload: { reservationId: 43 } }, { tx });
    });
    expect((await store.getTask(id))?.state).toBe('CANCELLED');
    expect(await store.getTask(inTx.id)).toMatchObject({ payload: { reservationId: 43 }, state: 'SCHEDULED' });
    expect(store.table('reservation').get('43')).toEqual({ status: 'pending' });
    expect((await store.countByState()).SCHEDULED).toBe(3);
  });
});
