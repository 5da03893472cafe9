/**
 * The trace context a task carries (core `TraceContext`): kept as given at schedule time, returned by
 * claim, getTask and listTasks on every attempt, absent when none was given, refused when malformed.
 */
import { TaskState, type TraceContext } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, expectValidationError, mustGetTask } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';

const TRACE: TraceContext = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7' };

export function traceContextCases(h: HarnessRef): void {
  describe('trace context', () => {
    it('travels with the task: claim, getTask and listTasks return it on every attempt', async () => {
      const { store, clock } = h();
      const { id } = await store.schedule({ kind: 'traced', traceContext: TRACE });
      expect((await mustGetTask(store, id)).traceContext).toEqual(TRACE);
      const first = await claimExactly(store, id);
      expect(first.traceContext).toEqual(TRACE);
      expect(await store.fail({ id, attempt: first.attempt, error: 'boom', backoffMs: 10 })).toMatchObject({ outcome: TaskState.SCHEDULED });
      clock.tick(10);
      const second = await claimExactly(store, id);
      expect(second.attempt).toBe(2);
      expect(second.traceContext).toEqual(TRACE);
      const page = await store.listTasks({ kinds: ['traced'] });
      expect(page.tasks.map((t) => t.traceContext)).toEqual([TRACE]);
    });

    it('is absent (no field) when none was given; null means none; an empty tracestate is dropped', async () => {
      const { store } = h();
      const [plain, nulled, bare] = await store.scheduleMany([
        { kind: 'plain' },
        { kind: 'nulled', traceContext: null },
        { kind: 'bare', traceContext: { traceparent: TRACE.traceparent, tracestate: '' } },
      ]);
      for (const scheduled of [plain, nulled]) expect(await mustGetTask(store, scheduled?.id as string)).not.toHaveProperty('traceContext');
      expect((await mustGetTask(store, bare?.id as string)).traceContext).toEqual({ traceparent: TRACE.traceparent });
      const claimed = await store.claim({ owner: 'w1', limit: 10, leaseMs: 1_000 });
      expect(claimed.map((t) => [t.kind, t.traceContext])).toEqual([
        ['plain', undefined],
        ['nulled', undefined],
        ['bare', { traceparent: TRACE.traceparent }],
      ]);
      expect(claimed[0]).not.toHaveProperty('traceContext');
    });

    it('is not copied by retry (the retry is scheduled by whoever retries it)', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'traced', traceContext: TRACE, maxAttempts: 1 });
      const claimed = await claimExactly(store, id);
      expect(await store.fail({ id, attempt: claimed.attempt, error: 'boom', backoffMs: 0 })).toMatchObject({ outcome: TaskState.DEAD });
      const retried = await store.retry({ id });
      expect(retried.outcome).toBe('RETRIED');
      expect(await mustGetTask(store, (retried as { id: string }).id)).not.toHaveProperty('traceContext');
      expect((await mustGetTask(store, id)).traceContext).toEqual(TRACE);
    });

    it('refuses a malformed trace context before writing anything', async () => {
      const { store } = h();
      const bad: [unknown, string][] = [
        ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'traceContext'],
        [{ traceparent: 'nope' }, 'traceContext.traceparent'],
        [{ traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' }, 'traceContext.traceparent'],
        [{ traceparent: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01' }, 'traceContext.traceparent'],
        [{ traceparent: TRACE.traceparent, tracestate: 'x'.repeat(513) }, 'traceContext.tracestate'],
        [{ traceparent: TRACE.traceparent, tracestate: 'a=\u0001' }, 'traceContext.tracestate'],
        [{ traceparent: TRACE.traceparent, baggage: 'k=v' }, 'traceContext.baggage'],
      ];
      for (const [traceContext, field] of bad) {
        await expectValidationError(() => store.schedule({ kind: 'k', traceContext } as never), 'INVALID_OPTION', field);
        await expectValidationError(() => store.scheduleMany([{ kind: 'ok' }, { kind: 'k', traceContext } as never]), 'INVALID_OPTION', `tasks[1].${field}`);
      }
      expect((await store.listTasks()).tasks).toEqual([]);
    });
  });
}
