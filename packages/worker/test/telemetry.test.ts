/**
 * Metrics and traces, read through the OpenTelemetry SDK's in-memory exporters installed as the
 * global providers (as an application would): a real worker on the in-memory store and on PostgreSQL.
 * Series are told apart by the worker id (counters, histograms) or by kind (the gauge), since the
 * providers are shared by every test of this file.
 */
import { context, metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { type DataPoint, type Histogram, MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { overrideStore, type Store } from '@postpone/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activeTraceContext, createWorker, METRICS, traceSchedules, waitForEvent } from '../src/index.js';
import { gate, type Harness, perTest, STORE_HARNESSES, until } from './harness.js';

/** A reader the test collects from on demand. */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const reader = new TestReader();
const meterProvider = new MeterProvider({ readers: [reader] });
const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const contextManager = new AsyncLocalStorageContextManager();
const tracer = () => trace.getTracer('telemetry-test');

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  metrics.setGlobalMeterProvider(meterProvider);
  trace.setGlobalTracerProvider(tracerProvider);
});

afterAll(async () => {
  await meterProvider.shutdown();
  await tracerProvider.shutdown();
  metrics.disable();
  trace.disable();
  context.disable();
});

async function collect(): Promise<MetricData[]> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  return resourceMetrics.scopeMetrics.filter((s) => s.scope.name === '@postpone/worker').flatMap((s) => s.metrics);
}

function metric(all: MetricData[], name: string): MetricData {
  const found = all.find((m) => m.descriptor.name === name);
  if (found === undefined) throw new Error(`no metric ${name}; have ${all.map((m) => m.descriptor.name).join(', ')}`);
  return found;
}

/** Data points of `name` whose attributes include `match`, as [attributes, value] (none when the SDK has no point of it yet). */
function points(all: MetricData[], name: string, match: Record<string, string>): [Record<string, unknown>, unknown][] {
  return ((all.find((m) => m.descriptor.name === name)?.dataPoints ?? []) as DataPoint<unknown>[])
    .filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v))
    .map((p) => [p.attributes, p.value]);
}

function sum(all: MetricData[], name: string, match: Record<string, string>): number {
  return points(all, name, match).reduce((total, [, value]) => total + (value as number), 0);
}

function attemptSpans(workerId: string): ReadableSpan[] {
  return spans.getFinishedSpans().filter((s) => s.attributes['postpone.worker.id'] === workerId);
}

describe.each(STORE_HARNESSES)('metrics and traces (%s store)', (name, makeHarness) => {
  let h: Harness<unknown>;
  const t = perTest();

  it('counts 3 done + 1 dead, records lateness and handler duration, and spans each attempt linked to the scheduling span', async () => {
    h = await t.open(makeHarness);
    const workerId = `otel-${name}-1`;
    const store = traceSchedules(h.store);
    // Schedule inside a span: the store through traceSchedules captures its trace context.
    const scheduling = tracer().startSpan('checkout');
    const ids = await context.with(trace.setSpan(context.active(), scheduling), async () => [
      ...(await store.scheduleMany([{ kind: 'ok' }, { kind: 'ok' }, { kind: 'ok' }])).map((t) => t.id),
      (await store.schedule({ kind: 'boom', maxAttempts: 1 })).id,
    ]);
    scheduling.end();
    const schedulingTraceId = scheduling.spanContext().traceId;
    expect((await h.store.getTask(ids[0] as string))?.traceContext?.traceparent).toBe(`00-${schedulingTraceId}-${scheduling.spanContext().spanId}-01`);

    const childTraceIds: string[] = [];
    const worker = createWorker({
      store: h.store,
      id: workerId,
      pollIntervalMs: 5,
      handlers: {
        ok: async () => {
          // The attempt span is active in the handler: what it schedules links to the attempt.
          childTraceIds.push(activeTraceContext()?.traceparent.split('-')[1] ?? 'none');
          return 'fine';
        },
        boom: async () => {
          throw new Error('kaboom');
        },
      },
    });
    t.track(worker);
    const done = waitForEvent(worker, 'completed', { count: 3 });
    const dead = waitForEvent(worker, 'failed');
    worker.start();
    await Promise.all([done, dead]);
    await worker.stop();

    const all = await collect();
    const mine = { 'postpone.worker.id': workerId };
    for (const counter of [METRICS.claimed, METRICS.completed, METRICS.failed, METRICS.dead]) {
      expect(metric(all, counter).descriptor).toMatchObject({ unit: '{task}' });
    }
    expect(sum(all, METRICS.claimed, { ...mine, 'postpone.task.kind': 'ok' })).toBe(3);
    expect(sum(all, METRICS.claimed, { ...mine, 'postpone.task.kind': 'boom' })).toBe(1);
    expect(sum(all, METRICS.completed, mine)).toBe(3);
    expect(sum(all, METRICS.failed, mine)).toBe(1);
    expect(sum(all, METRICS.dead, mine)).toBe(1);
    expect(points(all, METRICS.dead, mine).map(([a]) => a)).toEqual([{ 'postpone.task.kind': 'boom', 'postpone.worker.id': workerId }]);
    expect(points(all, METRICS.rejectedStale, mine)).toEqual([]);
    // No task ids on metrics.
    for (const m of all) for (const p of m.dataPoints) expect(Object.keys(p.attributes)).not.toContain('postpone.task.id');

    const lateness = metric(all, METRICS.lateness);
    expect(lateness.descriptor).toMatchObject({ unit: 'ms' });
    const latenessPoints = points(all, METRICS.lateness, mine).map(([, v]) => v as Histogram);
    expect(latenessPoints.reduce((n, v) => n + v.count, 0)).toBe(4);
    for (const v of latenessPoints) expect(v.min).toBeGreaterThanOrEqual(0);
    const duration = metric(all, METRICS.handlerDuration);
    expect(duration.descriptor).toMatchObject({ unit: 'ms' });
    expect(points(all, METRICS.handlerDuration, { ...mine, 'postpone.handler.result': 'ok' }).map(([, v]) => (v as Histogram).count)).toEqual([3]);
    expect(points(all, METRICS.handlerDuration, { ...mine, 'postpone.handler.result': 'error' }).map(([, v]) => (v as Histogram).count)).toEqual([1]);

    const attempts = attemptSpans(workerId);
    expect(attempts.map((s) => s.name).sort()).toEqual(['postpone.attempt boom', 'postpone.attempt ok', 'postpone.attempt ok', 'postpone.attempt ok']);
    for (const span of attempts) {
      expect(span.kind).toBe(SpanKind.CONSUMER);
      expect(span.links.map((l) => l.context.traceId)).toEqual([schedulingTraceId]);
      expect(span.links[0]?.context.spanId).toBe(scheduling.spanContext().spanId);
      expect(span.spanContext().traceId).not.toBe(schedulingTraceId);
      expect(ids).toContain(span.attributes['postpone.task.id']);
      expect(span.attributes['postpone.task.attempt']).toBe(1);
    }
    const ok = attempts.filter((s) => s.attributes['postpone.task.kind'] === 'ok');
    expect(ok.map((s) => [s.attributes['postpone.attempt.outcome'], s.status.code])).toEqual(Array(3).fill(['DONE', SpanStatusCode.UNSET]));
    expect(childTraceIds.sort()).toEqual(ok.map((s) => s.spanContext().traceId).sort());
    const boom = attempts.find((s) => s.attributes['postpone.task.kind'] === 'boom');
    expect(boom?.attributes['postpone.attempt.outcome']).toBe('DEAD');
    expect(boom?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'Error: kaboom' });
  });

  it('counts stale rejections and reclaims, and spans a task scheduled without trace context unlinked', async () => {
    h = await t.open(makeHarness);
    const workerId = `otel-${name}-2`;
    const { id } = await h.store.schedule({ kind: 'slow' });
    const g = gate();
    const worker = createWorker({
      store: h.store,
      id: workerId,
      leaseMs: 60_000,
      handlers: {
        slow: async () => {
          await g.promise;
          return 'late';
        },
      },
    });
    t.track(worker);
    await worker.runOnce();
    await h.expireLease(id);
    const reclaimed = await worker.reclaim();
    expect(reclaimed.map((t) => [t.id, t.outcome])).toEqual([[id, 'SCHEDULED']]);
    const stale = waitForEvent(worker, 'rejectedStale');
    g.open();
    await stale;
    await worker.idle();

    const all = await collect();
    const mine = { 'postpone.worker.id': workerId };
    for (const counter of [METRICS.rejectedStale, METRICS.reclaimed]) expect(metric(all, counter).descriptor).toMatchObject({ unit: '{task}' });
    expect(points(all, METRICS.reclaimed, mine)).toEqual([[{ ...mine, 'postpone.reclaim.outcome': 'SCHEDULED' }, 1]]);
    expect(points(all, METRICS.rejectedStale, mine)).toEqual([[{ ...mine, 'postpone.task.kind': 'slow', 'postpone.store.operation': 'complete' }, 1]]);
    expect(points(all, METRICS.completed, mine)).toEqual([]);
    const [span] = attemptSpans(workerId);
    expect(span?.links).toEqual([]);
    expect(span?.attributes['postpone.attempt.outcome']).toBe('REJECTED_STALE');
  });

  it('spans an attempt handed back at shutdown with the outcome RELEASED', async () => {
    h = await t.open(makeHarness);
    const workerId = `otel-${name}-handback`;
    const { id } = await h.store.schedule({ kind: 'hang' });
    const worker = createWorker({ store: h.store, id: workerId, handlers: { hang: () => new Promise(() => {}) } });
    t.track(worker);
    expect((await worker.runOnce()).map((t) => t.id)).toEqual([id]);
    expect(await worker.stop({ timeoutMs: 0 })).toEqual({ handedBack: 1, handBackFailed: 0 });
    await until(() => attemptSpans(workerId).length === 1, 'the attempt span to end');
    expect(attemptSpans(workerId)[0]?.attributes['postpone.attempt.outcome']).toBe('RELEASED');
  });

  it('observes due-and-waiting tasks by kind from one stats() read per 5 s at most', async () => {
    h = await t.open(makeHarness);
    const kind = `waiting-${name}`;
    let statsCalls = 0;
    const counted: Store<unknown> = overrideStore(h.store, {
      stats: async () => {
        statsCalls += 1;
        return h.store.stats();
      },
    });
    const g = gate();
    const worker = createWorker({ store: counted, id: `otel-${name}-3`, concurrency: 1, pollIntervalMs: 5, handlers: { [kind]: () => g.promise } });
    t.track(worker);
    await h.store.scheduleMany([{ kind }, { kind }, { kind }]);
    const gauge = async () => points(await collect(), METRICS.dueWaiting, { 'postpone.task.kind': kind });
    expect(await gauge()).toEqual([]); // not started: not observed
    expect(statsCalls).toBe(0);
    const claimed = waitForEvent(worker, 'claimed');
    worker.start();
    await claimed;
    await until(async () => worker.inFlight === 1, 'one task running');
    expect(metric(await collect(), METRICS.dueWaiting).descriptor).toMatchObject({ unit: '{task}' });
    expect(await gauge()).toEqual([[{ 'postpone.task.kind': kind }, 2]]);
    expect(statsCalls).toBe(1); // the second collection within 5 s used the first read
    g.open();
    await worker.stop();
  });

  it('the unclaimed gauge: due tasks of a kind nobody claims, by queue and kind, from the last unclaimedAfterMs check', async () => {
    h = await t.open(makeHarness);
    const workerId = `otel-${name}-4`;
    await h.store.scheduleMany([{ kind: 'nobody-claims' }, { kind: 'nobody-claims' }]);
    const worker = t.track(createWorker({ store: h.store, id: workerId, pollIntervalMs: 5, reclaimEveryMs: 10, unclaimedAfterMs: 50, handlers: { a: async () => null } }));
    const gauge = async () => points(await collect(), METRICS.unclaimedDue, { 'postpone.worker.id': workerId });
    expect(await gauge()).toEqual([]);
    const found = waitForEvent(worker, 'unclaimedKinds');
    worker.start();
    await found;
    expect(await gauge()).toEqual([[{ 'postpone.task.queue': 'default', 'postpone.task.kind': 'nobody-claims', 'postpone.worker.id': workerId }, 2]]);
    await worker.stop();
  });
});
