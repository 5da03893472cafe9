/**
 * Moving a W3C trace context between OpenTelemetry's active context and a task (core `TraceContext`).
 * Written and read here by hand (W3C Trace Context Level 1, §3.2 and §3.3) rather than through the
 * global propagator, so it works whether or not the application registered one.
 */
import { context, createTraceState, isSpanContextValid, type Context, type SpanContext, trace } from '@opentelemetry/api';
import { overrideStore, type ScheduleInput, type Store, type TraceContext } from '@postpone/core';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The trace context of the span active in `ctx` (default: the active context), to pass to
 * `store.schedule({ ..., traceContext })`; null when no valid span is active (e.g. no tracing SDK).
 */
export function activeTraceContext(ctx: Context = context.active()): TraceContext | null {
  const span = trace.getSpanContext(ctx);
  if (span === undefined || !isSpanContextValid(span)) return null;
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  const tracestate = span.traceState?.serialize() ?? '';
  return { traceparent: `00-${span.traceId}-${span.spanId}-${flags}`, ...(tracestate === '' ? {} : { tracestate }) };
}

/**
 * `input` with the active trace context (see {@link activeTraceContext}), unless it has one already:
 * `store.schedule(withTraceContext({ kind: 'send-reminder', payload, delayMs: 60_000 }))`.
 */
export function withTraceContext<P>(input: ScheduleInput<P>): ScheduleInput<P> {
  // Anything but a plain input is left to the store's validation to refuse.
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  if (input.traceContext !== undefined && input.traceContext !== null) return input;
  const traceContext = activeTraceContext();
  return traceContext === null ? input : { ...input, traceContext };
}

/**
 * `store` whose `schedule` and `scheduleMany` add the active trace context to every input that has
 * none ({@link withTraceContext}); every other method is the store's own (core `overrideStore`).
 * Schedule through it from traced code, and the worker's attempt spans link back to your spans.
 */
export function traceSchedules<S extends Store<Tx>, Tx = unknown>(store: S): S {
  return overrideStore<S, Tx>(store, {
    schedule: (input, options) => store.schedule(withTraceContext(input), options),
    scheduleMany: (inputs, options) => store.scheduleMany(Array.isArray(inputs) ? inputs.map((input) => withTraceContext(input)) : inputs, options),
  });
}

/** The remote span context a task's trace context names, or null when absent or unreadable. */
export function spanContextOf(traceContext: TraceContext | undefined): SpanContext | null {
  const match = traceContext === undefined ? null : TRACEPARENT.exec(traceContext.traceparent);
  if (!match || traceContext === undefined) return null;
  const spanContext: SpanContext = {
    traceId: match[1] as string,
    spanId: match[2] as string,
    traceFlags: Number.parseInt(match[3] as string, 16),
    isRemote: true,
    ...(traceContext.tracestate ? { traceState: createTraceState(traceContext.tracestate) } : {}),
  };
  return isSpanContextValid(spanContext) ? spanContext : null;
}
