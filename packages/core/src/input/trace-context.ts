/**
 * The W3C trace context a task carries from the code that scheduled it to the worker that runs it,
 * so the worker's span of each attempt can link to the span that scheduled the task. Core only
 * stores and checks the text; `@postpone/worker` reads it from and turns it into OpenTelemetry spans.
 */
import { ValidationError } from '../errors/errors.js';

/**
 * The two W3C Trace Context headers (W3C Trace Context Level 1, §3.2 `traceparent`, §3.3 `tracestate`).
 * Optional on a task: stores keep it as given and return it on claim and getTask; absent when none was given.
 */
export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>`, lowercase (§3.2.2). */
  readonly traceparent: string;
  /** Vendor entries, e.g. `congo=t61rcWkgMzE`; at most {@link MAX_TRACESTATE_LENGTH} characters (§3.3.1). */
  readonly tracestate?: string;
}

/** Longest accepted `tracestate`: W3C Trace Context §3.3.1.5 asks vendors to propagate at least 512 characters. */
export const MAX_TRACESTATE_LENGTH = 512;

/** Version 00 of `traceparent` (§3.2.2); all-zero trace and span ids are invalid (§3.2.2.3, §3.2.2.4). */
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** Printable ASCII (§3.3.1.3 allows no other characters in list members). */
const PRINTABLE = /^[\u0020-\u007e]*$/;

/**
 * Checks a trace context given to schedule.
 * @returns a copy holding only `traceparent` and, when non-empty, `tracestate`
 * @throws ValidationError INVALID_OPTION naming `<field>.traceparent`, `<field>.tracestate` or an unknown field
 */
export function validateTraceContext(value: unknown, field = 'traceContext'): TraceContext {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError('INVALID_OPTION', field, 'must be an object { traceparent, tracestate? }');
  }
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) {
    if (key !== 'traceparent' && key !== 'tracestate') throw new ValidationError('INVALID_OPTION', `${field}.${key}`, 'is not a trace context field (expected traceparent, tracestate)');
  }
  if (typeof v.traceparent !== 'string' || !TRACEPARENT.test(v.traceparent)) {
    throw new ValidationError('INVALID_OPTION', `${field}.traceparent`, 'must be a W3C traceparent such as 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
  }
  if (v.tracestate === undefined || v.tracestate === '') return { traceparent: v.traceparent };
  if (typeof v.tracestate !== 'string' || v.tracestate.length > MAX_TRACESTATE_LENGTH || !PRINTABLE.test(v.tracestate)) {
    throw new ValidationError('INVALID_OPTION', `${field}.tracestate`, `must be printable ASCII text of at most ${MAX_TRACESTATE_LENGTH} characters`);
  }
  return { traceparent: v.traceparent, tracestate: v.tracestate };
}
