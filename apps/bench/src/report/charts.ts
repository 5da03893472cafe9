/**
 * The report's charts, built from the results: one Vega spec per figure, named by its SVG file.
 */
import type { BenchResults } from './results.js';
import { median } from '../peers/util/stats.js';
import { type BarDatum, barSpec, type LineDatum, lineSpec } from './chart.js';
import { ceilingSummary, idleRows, latenessRows, throughputRows } from './summary.js';
import type * as vega from 'vega';

export interface ChartFile {
  /** File name inside the report folder, e.g. `throughput.svg`. */
  readonly file: string;
  readonly spec: vega.Spec;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 'es'}`;

export function buildCharts(r: BenchResults): ChartFile[] {
  const charts: ChartFile[] = [];
  if (r.poll) {
    const data: BarDatum[] = [];
    for (const run of [r.poll.fast, r.poll.slow]) {
      const series = `poll ${run.pollIntervalMs} ms`;
      data.push({ group: 'lateness p50 (ms)', series, value: run.lateness.p50 }, { group: 'lateness p99 (ms)', series, value: run.lateness.p99 });
      data.push({ group: 'lateness max (ms)', series, value: run.lateness.max }, { group: 'claim queries', series, value: run.claimQueries });
    }
    charts.push({ file: 'poll-interval.svg', spec: barSpec({ title: 'Polling at two intervals, same load', yTitle: 'ms / count', data }) });
  }
  if (r.history) {
    const data: LineDatum[] = r.history.flatMap((p) => [
      { x: p.history, y: p.executionMs, series: 'server execution (EXPLAIN ANALYZE), ms' },
      { x: p.history, y: p.claimP50Ms, series: 'client round trip p50, ms' },
    ]);
    charts.push({ file: 'history.svg', spec: lineSpec({ title: 'Idle claim cost vs finished history', xTitle: 'finished (DONE) rows', yTitle: 'ms', data, logX: true }) });
  }
  if (r.backlog) {
    charts.push({
      file: 'backlog-throughput.svg',
      spec: lineSpec({
        title: 'Throughput vs backlog of due tasks (1 worker process, concurrency 10)',
        xTitle: 'due tasks in the backlog',
        yTitle: 'tasks/s',
        logX: true,
        data: r.backlog.map((p) => ({ x: p.backlog, y: p.throughput.tasksPerSecond, series: 'postpone tuned' })),
      }),
    });
    charts.push({
      file: 'backlog-claim.svg',
      spec: lineSpec({
        title: 'Claim latency (limit 10) vs backlog of due tasks',
        xTitle: 'due tasks in the backlog',
        yTitle: 'ms',
        logX: true,
        data: r.backlog.flatMap((p) => [
          { x: p.backlog, y: p.claim.p50Ms, series: 'round trip p50' },
          { x: p.backlog, y: p.claim.p99Ms, series: 'round trip p99' },
          { x: p.backlog, y: p.explain.executionMs, series: 'server execution' },
        ]),
      }),
    });
  }
  if (r.processes) {
    charts.push({
      file: 'processes.svg',
      spec: lineSpec({
        title: 'Throughput vs worker processes (concurrency 10 each)',
        xTitle: 'worker processes',
        yTitle: 'tasks/s',
        data: r.processes.map((p) => ({ x: p.processes, y: p.tasksPerSecond, series: 'postpone tuned' })),
      }),
    });
  }
  if (r.timers) {
    const data: LineDatum[] = r.timers.flatMap((row) => [
      { x: row.timers, y: median(row.wheel.map((w) => w.opsPerSecond)), series: 'timing wheel (@postpone/wheel)' },
      { x: row.timers, y: median(row.heap.map((h) => h.opsPerSecond)), series: 'binary heap (heap-js)' },
    ]);
    charts.push({ file: 'timers.svg', spec: lineSpec({ title: 'Schedule + cancel + fire, operations per second', xTitle: 'timers', yTitle: 'ops/s', data, logX: true }) });
  }
  if (r.throughput) {
    const data: BarDatum[] = [];
    const ceilings = [
      { series: 'SQL-only ceiling, history kept (batches of 50)', value: r.ceiling ? ceilingSummary(r.ceiling).median : Number.NaN },
      { series: 'SQL-only ceiling, DONE not kept (batches of 50)', value: r.ceiling ? ceilingSummary(r.ceiling, 50, false).median : Number.NaN },
    ].filter((c) => Number.isFinite(c.value));
    for (const section of r.throughput) {
      const group = plural(section.processes, 'process');
      for (const row of throughputRows(section.contenders)) data.push({ group, series: row.label, value: row.tasksPerSecond.median });
      for (const c of ceilings) data.push({ group, ...c });
    }
    charts.push({ file: 'throughput.svg', spec: barSpec({ title: 'Throughput, no-op tasks due now (median of rounds, log scale)', yTitle: 'tasks/s', data, logY: true }) });
  }
  if (r.lateness) {
    const data: BarDatum[] = latenessRows(r.lateness).flatMap((row) => [
      { group: row.label, series: 'p50', value: row.p50.median },
      { group: row.label, series: 'p99', value: row.p99.median },
      { group: row.label, series: 'max', value: row.max.median },
    ]);
    charts.push({ file: 'lateness.svg', spec: barSpec({ title: 'Lateness (start − due), 3 processes (median of rounds, log scale)', yTitle: 'ms', data, logY: true }) });
  }
  if (r.idle) {
    const data: BarDatum[] = idleRows(r.idle).map((row) => ({ group: row.label, series: 'statements/s', value: row.statementsPerSecond.median }));
    charts.push({ file: 'idle.svg', spec: barSpec({ title: 'Idle cost: 3 idle worker processes, empty queue', yTitle: 'statements/s', data }) });
  }
  return charts;
}
