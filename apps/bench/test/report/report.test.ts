/**
 * The report writer on a small, hand-made result set: every section renders, ratios point at the
 * right rows, targets say met / missed / not measured, and each chart is a real SVG.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { QUICK } from '../../src/report/config.js';
import type { RoundsOf } from '../../src/peers/alternate.js';
import type { ThroughputResult } from '../../src/peers/throughput.js';
import { mergeResults } from '../../src/report/merge.js';
import { evaluateTargets } from '../../src/report/targets.js';
import { writeReport } from '../../src/report/write.js';
import type { BenchResults } from '../../src/report/results.js';

const dir = mkdtempSync(join(tmpdir(), 'bench-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tp(system: string, setting: string, tasksPerSecond: number, statementsPerTask: number, roundTripsPerTask?: number, label = `${system} ${setting}`): RoundsOf<ThroughputResult> {
  return {
    label,
    system,
    setting,
    errors: [],
    rounds: [tasksPerSecond * 0.9, tasksPerSecond, tasksPerSecond * 1.1].map((v) => ({
      label,
      processes: 3,
      tasks: 1000,
      completed: 1000,
      seconds: 1000 / v,
      tasksPerSecond: v,
      statementsPerTask,
      serverMsPerTask: 0.1,
      walBytesPerTask: 700,
      serverCpuMsPerTask: 0.15,
      workerCpuMsPerTask: 0.2,
      ...(roundTripsPerTask === undefined ? {} : { roundTripsPerTask }),
      topStatements: [{ query: 'update task set state = $1', calls: 1000, totalMs: 50, meanMs: 0.05 }],
      capped: false,
    })),
  };
}

const lateness = (system: string, setting: string, p99: number) => ({
  label: `${system} ${setting}`,
  system,
  setting,
  errors: [],
  rounds: [{ label: `${system} ${setting}`, lateness: { count: 300, p50: p99 / 2, p99, max: p99 + 5, min: 1 }, early: 0, missing: 0, enqueueMs: 20 }],
});

const idle = (system: string, setting: string, statementsPerSecond: number) => ({
  label: `${system} ${setting}`,
  system,
  setting,
  errors: [],
  rounds: [{ label: `${system} ${setting}`, statementsPerSecond, source: 'pg_stat_statements' }],
});

const results: BenchResults = {
  meta: {
    startedAt: '2026-11-30T00:00:00.000Z',
    finishedAt: '2026-11-30T00:10:00.000Z',
    durationS: 600,
    mode: 'quick',
    sections: ['history', 'timers', 'throughput', 'ceiling', 'lateness', 'idle'],
    sizes: QUICK,
    node: 'v20',
    postgres: 'PostgreSQL 17.10 on x86_64',
    cpu: 'test cpu',
    cores: 2,
    memoryGb: 8,
    database: 'embedded',
    statementSource: 'pg_stat_statements',
    versions: { 'pg-boss': '10.4.2', 'graphile-worker': '0.17.3', 'heap-js': '2.7.1', pg: '8.23.1' },
    loadAverage: { start: 1, end: 2 },
    notes: [],
  },
  settings: [{ system: 'postpone', settings: [{ name: 'tuned', description: '`pollIntervalMs` 50' }] }],
  history: [
    { history: 10_000, buffers: 2, scanBuffers: 1, executionMs: 0.03, claimP50Ms: 0.4, claimP99Ms: 1, plan: 'Update on task t' },
    { history: 1_000_000, buffers: 2, scanBuffers: 1, executionMs: 0.031, claimP50Ms: 0.41, claimP99Ms: 1.2, plan: 'Update on task t' },
  ],
  prune: {
    finished: 1_000_000,
    effects: 800_000,
    notDue: 1000,
    trickle: 2,
    pauseMs: 5,
    batchSize: 1000,
    deleted: 1_000_000,
    effectsDeleted: 800_000,
    batches: 1001,
    pruneMs: 40_000,
    rowsPerSecond: 25_000,
    phases: (['before', 'during', 'after'] as const).map((phase) => ({
      phase,
      claims: 300,
      claimed: 600,
      emptyClaims: 0,
      claimP50Ms: 2,
      claimP99Ms: phase === 'during' ? 7 : 5,
      claimMaxMs: 9,
      slowClaims: 0,
      buffers: 38,
      buffersMax: 46,
      scanBuffers: 4,
      executionMs: 0.45,
    })),
    slowClaimMs: 50,
    lockSamples: 5000,
    claimLockWaits: 0,
    pruneLocks: ['task: RowExclusiveLock', 'task: RowShareLock'],
    historyLeft: 0,
    historyEffectsLeft: 0,
    notDueUntouched: true,
    dueLeft: 0,
  },
  timers: [
    {
      timers: 1000,
      wheel: [{ structure: 'wheel', timers: 1000, cancelled: 200, fired: 800, ops: 2000, seconds: 0.001, opsPerSecond: 2e6, scheduleMs: 0.2, cancelMs: 0.1, fireMs: 0.7 }],
      heap: [{ structure: 'heap', timers: 1000, cancelled: 200, fired: 800, ops: 2000, seconds: 0.002, opsPerSecond: 1e6, scheduleMs: 0.5, cancelMs: 0.1, fireMs: 1.4 }],
    },
  ],
  throughput: [
    {
      processes: 3,
      contenders: [
        tp('postpone', 'tuned', 1000, 4.4),
        tp('postpone', 'tuned-drop', 6000, 4.4),
        // The Node 20 row is faster here, and must not count for the targets (they are on Node 24).
        tp('postpone', 'tuned', 9000, 4.4, undefined, 'postpone tuned, Node 20'),
        tp('graphile-worker', 'tuned', 4000, 0.05),
        tp('pg-boss', 'tuned', 3000, 0.04),
      ],
    },
  ],
  ceiling: [
    {
      keepDone: true,
      points: [10, 50, 200].map((batch) => ({ batch, processes: 3, tasks: 10_000, completed: 10_000, seconds: 1, tasksPerSecond: batch * 40, statementsPerTask: 2 / batch, serverMsPerTask: 0.02, cpuMsPerTask: 0.01 })),
    },
    {
      keepDone: false,
      points: [10, 50, 200].map((batch) => ({ batch, processes: 3, tasks: 10_000, completed: 10_000, seconds: 1, tasksPerSecond: batch * 160, statementsPerTask: 2 / batch, serverMsPerTask: 0.01, cpuMsPerTask: 0.01 })),
    },
  ],
  network: {
    latencyMs: 0.5,
    meanHoldMs: 1.2,
    throughput: [tp('postpone', 'tuned', 800, 4.4, 0.3), tp('graphile-worker', 'tuned', 400, 0.05, 0.05)],
    lateness: [lateness('postpone', 'tuned', 60)],
  },
  lateness: [lateness('postpone', 'tuned', 50), lateness('graphile-worker', 'tuned', 100)],
  idle: [idle('postpone', 'tuned', 58), idle('graphile-worker', 'tuned', 30)],
};

describe('report', () => {
  it('evaluates the targets from the figures', () => {
    const [dropped, kept, network, ceiling, latency, history, prune] = evaluateTargets(results);
    // DONE not kept against graphile-worker tuned at 1.25×: 6 000 / 4 000 = 1.50×.
    expect(dropped?.state).toBe('met');
    expect(dropped?.measured).toContain('postpone tuned-drop 6\u202f000 tasks/s vs graphile-worker tuned 4\u202f000 tasks/s = 1.50×');
    // History kept against the same peer at 1.0×; its ceiling is the kept one (2 000/s at batch 50, 0.02 ms server per task).
    expect(kept?.state).toBe('missed');
    expect(kept?.measured).toContain('0.25×');
    expect(kept?.limits).toContain('missed by 4.00×');
    expect(kept?.limits).toContain('is 2\u202f000 tasks/s');
    expect(kept?.limits).toContain('server time alone caps the schema near 100\u202f000 tasks/s');
    expect(network?.state).toBe('met');
    expect(network?.measured).toContain('2.00×');
    expect(network?.measured).toContain('0.300 round trips/task');
    expect(ceiling?.state).toBe('missed');
    expect(ceiling?.measured).toContain('1\u202f000 tasks/s of 2\u202f000 tasks/s = 50 %');
    expect(latency?.state).toBe('not measured');
    expect(history?.state).toBe('met');
    expect(prune?.state).toBe('met');
    expect(prune?.measured).toContain('claim p99 5.00 → 7.00 ms (1.40×)');
    const slow = { ...results, prune: { ...results.prune!, phases: results.prune!.phases.map((p) => (p.phase === 'during' ? { ...p, claimP99Ms: 16 } : p)), claimLockWaits: 2 } };
    const missed = evaluateTargets(slow)[6];
    expect(missed?.state).toBe('missed');
    expect(missed?.limits).toContain('p99 grew 3.20×');
    expect(missed?.limits).toContain('waited for a lock 2 times');
  });

  it('merges a section measured again into saved results, with a note', () => {
    const measured = { ...results, meta: { ...results.meta, sections: ['prune' as const], startedAt: '2026-12-01T00:00:00.000Z', notes: [] }, history: [] };
    const merged = mergeResults({ ...results, prune: undefined, meta: { ...results.meta, sections: ['history', 'timers'] } }, measured);
    expect(merged.prune).toBe(results.prune);
    expect(merged.history).toBe(results.history);
    expect(merged.meta.sections).toEqual(['history', 'prune', 'timers']);
    expect(merged.meta.notes.at(-1)).toContain('prune measured in a separate run (quick) on 2026-12-01T00:00:00.000Z');
  });

  it('writes report.md, results.json and one SVG per chart', async () => {
    const path = await writeReport(results, dir);
    const md = readFileSync(path, 'utf8');
    expect(md).toContain('## Where Postpone stands');
    expect(md).toContain('history kept: postpone tuned 1\u202f000 tasks/s = 0.25× graphile-worker tuned');
    expect(md).toContain('history kept: postpone tuned 1\u202f000 tasks/s = 0.33× pg-boss tuned');
    expect(md).toContain('DONE not kept: postpone tuned-drop 6\u202f000 tasks/s = 1.50× graphile-worker tuned');
    // Each row's "× ceiling" is against the ceiling of its own record of DONE (not kept: 8 000/s).
    expect(md).toMatch(/\| postpone tuned-drop \| 6\u202f000 \(5\u202f400–6\u202f600\) \| 1\.50× \| 0\.75× \|/);
    expect(md).toContain('DONE not kept: **8\u202f000');
    expect(md).toMatch(/\| postpone tuned \| 1\u202f000 \(900–1\u202f100\) \| 0\.25× \| 0\.50× \|/);
    expect(md).toContain('![throughput](throughput.svg)');
    expect(md).toContain('### The ceiling of the schema (SQL only)');
    expect(md).toContain('postpone tuned reaches **50 %** of it');
    expect(md).toContain('### Through a network: 0.5 ms each way');
    expect(md).toMatch(/\| postpone tuned \| 800 \(720–880\) \| 2\.00× \| 0\.300 \|/);
    // The profile gives the server processes' CPU, and round trips per task from the network section.
    expect(md).toMatch(/\| postpone tuned \| 1\u202f000 \| 4\.400 \| 0\.100 \| 0\.150 \| 700 \| 0\.200 \| 0\.300 \|/);
    expect(md).toContain('### Claim while pruning history');
    expect(md).toMatch(/\| during \| 300 \| 600 \| 0 \| 2\.00 \| 7\.00 \|/);
    const files = readdirSync(dir).sort();
    expect(files).toEqual(['history.svg', 'idle.svg', 'lateness.svg', 'report.md', 'results.json', 'throughput.svg', 'timers.svg']);
    for (const f of files.filter((x) => x.endsWith('.svg'))) expect(readFileSync(join(dir, f), 'utf8')).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')).meta.mode).toBe('quick');
  });
});
