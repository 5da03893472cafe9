/**
 * The W3C trace context (Trace Context Level 1, §3.2 traceparent, §3.3 tracestate) carried from a
 * schedule to the attempt, without an SDK: written from the active span, read back into a remote
 * span context, and left out when no span is active.
 */
import { context, createTraceState, ROOT_CONTEXT, type SpanContext, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { createMemoryStore } from '@postpone/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activeTraceContext, spanContextOf, traceSchedules, withTraceContext } from '../../src/telemetry/index.js';

const scheduledBy: SpanContext = {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  traceFlags: TraceFlags.SAMPLED,
  traceState: createTraceState('vendor=abc'),
};

describe('trace context', () => {
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => {
    context.disable();
  });

  it('writes the active span as traceparent and tracestate, and reads it back as a remote span context', () => {
    const written = activeTraceContext(trace.setSpanContext(ROOT_CONTEXT, scheduledBy));
    expect(written).toEqual({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'vendor=abc' });
    const read = spanContextOf(written ?? undefined);
    expect(read).toMatchObject({ traceId: scheduledBy.traceId, spanId: scheduledBy.spanId, traceFlags: 1, isRemote: true });
    expect(read?.traceState?.serialize()).toBe('vendor=abc');
  });

  it('reads nothing from a malformed or all-zero traceparent', () => {
    expect(spanContextOf({ traceparent: '00-xyz-00f067aa0ba902b7-01' })).toBeNull();
    expect(spanContextOf({ traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` })).toBeNull();
    expect(spanContextOf(undefined)).toBeNull();
  });

  it('adds the active context to schedules, and nothing without an active span', async () => {
    const input = { kind: 'ping', payload: null };
    expect(withTraceContext(input)).toBe(input);
    const store = traceSchedules(createMemoryStore());
    const { id } = await context.with(trace.setSpanContext(ROOT_CONTEXT, scheduledBy), () => store.schedule(input));
    expect((await store.getTask(id))?.traceContext?.traceparent).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    const { id: plain } = await store.schedule(input);
    expect((await store.getTask(plain))?.traceContext ?? null).toBeNull();
  });
});
