/** Compile-time checks of the typed handler registry (vitest `expectTypeOf`; tsc runs them in typecheck). */
import type { ClaimedTask } from '@postpone/core';
import { createMemoryStore, type MemoryTx } from '@postpone/memory';
import type { PgTx } from '@postpone/postgres/pg';
import { describe, expectTypeOf, it } from 'vitest';
import { createWorker, type HandlerContext, type HandlerMap } from '../src/index.js';

type Payloads = { 'expire-reservation': { reservationId: number }; 'send-reminder': { email: string; minutesBefore: number } };

describe('typed handler registry', () => {
  it('types each handler by the payload of its kind and ctx.onCompleteTx by the store', () => {
    const worker = createWorker<MemoryTx, Payloads>({
      store: createMemoryStore(),
      handlers: {
        'expire-reservation': async (task, ctx) => {
          expectTypeOf(task.payload).toEqualTypeOf<{ reservationId: number }>();
          expectTypeOf(ctx).toEqualTypeOf<HandlerContext<MemoryTx>>();
          ctx.onCompleteTx(async (tx) => expectTypeOf(tx).toEqualTypeOf<MemoryTx>());
          return null;
        },
        'send-reminder': async (task) => {
          expectTypeOf(task.payload.minutesBefore).toEqualTypeOf<number>();
          return { sentTo: task.payload.email };
        },
      },
    });
    expectTypeOf(worker.runOnce).returns.resolves.toEqualTypeOf<ClaimedTask[]>();
  });

  it('rejects a registry that misses a kind or mistypes a payload', () => {
    // @ts-expect-error 'send-reminder' is missing
    const missing: HandlerMap<PgTx, Payloads> = { 'expire-reservation': async () => null };
    const mistyped: HandlerMap<PgTx, Payloads> = {
      'expire-reservation': async () => null,
      // @ts-expect-error the payload of send-reminder has no reservationId
      'send-reminder': async (task: ClaimedTask<{ reservationId: number }>) => task.payload.reservationId,
    };
    expectTypeOf(missing).not.toBeAny();
    expectTypeOf(mistyped).not.toBeAny();
  });
});
