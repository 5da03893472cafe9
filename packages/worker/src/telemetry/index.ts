/**
 * @postpone/worker — the worker's metrics and traces through `@opentelemetry/api` only (no-ops
 * until the application installs an SDK), and the W3C trace context carried from a schedule to the
 * attempt spans that run it. Names, units and attributes: the worker's README ("Metrics and traces").
 */
export {
  ATTRIBUTES,
  AttemptTelemetry,
  DUE_WAITING_MIN_INTERVAL_MS,
  INSTRUMENTATION_SCOPE,
  METRICS,
  WorkerTelemetry,
  type AttemptOutcome,
  type TelemetryDeps,
  type TelemetryEvents,
  type TelemetryEventSource,
} from './telemetry.js';
export { activeTraceContext, spanContextOf, traceSchedules, withTraceContext } from './trace-context.js';
