/**
 * The long run (issue #26 item 10, `long_run_memory`): one worker process under steady load for a
 * duration (default 60 min), sampled every few seconds — heap (as is and after a forced full GC),
 * RSS, event-loop delay p99, statement rate — and judged by least-squares slopes per hour over the
 * samples after a warm-up. `pnpm long-run-memory` runs it (scripts/long-run-memory.ts →
 * evidence/long-run-memory.md). Not part of `pnpm test`: a slope measured over a minute says
 * nothing about an hour.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ScheduleInput } from '@postpone/core';
import { createPgStore } from '@postpone/postgres/pg';
import { PgServer } from '../faults/pg-server.js';
import type { LongRunSample } from './worker-child.js';

export interface LongRunOptions {
  /** How long the steady load runs, ms. */
  readonly durationMs: number;
  /** One sample every this many ms. */
  readonly sampleMs: number;
  /** Tasks scheduled per second (in one `scheduleMany` each second, due 0..2 s later). */
  readonly ratePerS: number;
  /** Samples of the first `warmupMs` are left out of the slopes (JIT, pools and caches filling). */
  readonly warmupMs: number;
  readonly discovery: 'poll' | 'hybrid';
  readonly concurrency: number;
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void;
}

/** What PASS asks of the slopes (per hour, over the samples after the warm-up). */
export const LONG_RUN_BOUNDS = {
  /** Heap after a full GC: the retained heap; a leak of 30 bytes per task at 50 tasks/s is 5.4 MB/h. */
  heapAfterGcMbPerHour: 5,
  /** RSS (includes malloc arenas and the GC's free pages: noisier). */
  rssMbPerHour: 30,
  /** Event-loop delay p99 (the machine is shared: loose). */
  eldP99MsPerHour: 20,
  /** Statement rate, as a fraction of its mean per hour. */
  statementRateFractionPerHour: 0.1,
  /** Completions keep up with the schedule: at least this share of the scheduled tasks completed. */
  completedShare: 0.99,
} as const;

export interface Slope {
  /** Least-squares slope per hour. */
  readonly perHour: number;
  readonly mean: number;
  readonly first: number;
  readonly last: number;
}

export interface LongRunReport {
  readonly options: LongRunOptions;
  readonly samples: readonly LongRunSample[];
  readonly fitted: number;
  readonly heapAfterGcMb: Slope;
  readonly heapUsedMb: Slope;
  readonly rssMb: Slope;
  readonly eldP99Ms: Slope;
  readonly statementsPerS: Slope;
  readonly completedPerS: Slope;
  readonly scheduled: number;
  readonly completed: number;
  readonly errors: number;
  readonly elapsedMs: number;
  readonly checks: readonly { readonly name: string; readonly ok: boolean; readonly detail: string }[];
  readonly pass: boolean;
}

/** Least-squares slope of `ys` over `xsMs` (ms), per hour, with the mean and the end values. */
export function slopePerHour(xsMs: readonly number[], ys: readonly number[]): Slope {
  const n = Math.min(xsMs.length, ys.length);
  if (n < 2) return { perHour: 0, mean: ys[0] ?? 0, first: ys[0] ?? 0, last: ys[n - 1] ?? 0 };
  let sx = 0;
  let sy = 0;
  for (let i = 0; i < n; i++) {
    sx += xsMs[i]!;
    sy += ys[i]!;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xsMs[i]! - mx) * (ys[i]! - my);
    sxx += (xsMs[i]! - mx) ** 2;
  }
  const perMs = sxx === 0 ? 0 : sxy / sxx;
  return { perHour: perMs * 3_600_000, mean: my, first: ys[0]!, last: ys[n - 1]! };
}

const MB = 1024 * 1024;

/** Judges the samples (pure: the unit tests feed it made-up series). */
export function judgeLongRun(options: LongRunOptions, samples: readonly LongRunSample[], scheduled: number, elapsedMs: number): LongRunReport {
  // `atMs` is ms since the load began (see runLongRun): the fit covers the load after its warm-up only.
  const fit = samples.filter((s) => s.atMs >= options.warmupMs && s.atMs <= options.durationMs);
  const xs = fit.map((s) => s.atMs);
  // Rates per sample interval (the first fitted sample has no predecessor inside the fit: it is skipped).
  const rateXs: number[] = [];
  const statementRates: number[] = [];
  const completedRates: number[] = [];
  for (let i = 1; i < fit.length; i++) {
    const dt = (fit[i]!.atMs - fit[i - 1]!.atMs) / 1000;
    if (dt <= 0) continue;
    rateXs.push(fit[i]!.atMs);
    statementRates.push((fit[i]!.statements - fit[i - 1]!.statements) / dt);
    completedRates.push((fit[i]!.completed - fit[i - 1]!.completed) / dt);
  }
  const heapAfterGcMb = slopePerHour(
    xs,
    fit.map((s) => s.heapAfterGc / MB),
  );
  const heapUsedMb = slopePerHour(
    xs,
    fit.map((s) => s.heapUsed / MB),
  );
  const rssMb = slopePerHour(
    xs,
    fit.map((s) => s.rss / MB),
  );
  const eldP99Ms = slopePerHour(
    xs,
    fit.map((s) => s.eldP99Ms),
  );
  const statementsPerS = slopePerHour(rateXs, statementRates);
  const completedPerS = slopePerHour(rateXs, completedRates);
  const last = samples.at(-1);
  const completed = last?.completed ?? 0;
  const errors = last?.errors ?? 0;
  const b = LONG_RUN_BOUNDS;
  const fmt = (v: number, d = 2) => v.toFixed(d);
  const checks = [
    { name: 'samples after warm-up', ok: fit.length >= 10, detail: `${fit.length} (at least 10)` },
    { name: 'heap after GC slope', ok: Math.abs(heapAfterGcMb.perHour) <= b.heapAfterGcMbPerHour, detail: `${fmt(heapAfterGcMb.perHour)} MB/h (bound ±${b.heapAfterGcMbPerHour})` },
    { name: 'RSS slope', ok: Math.abs(rssMb.perHour) <= b.rssMbPerHour, detail: `${fmt(rssMb.perHour)} MB/h (bound ±${b.rssMbPerHour})` },
    { name: 'event-loop delay p99 slope', ok: Math.abs(eldP99Ms.perHour) <= b.eldP99MsPerHour, detail: `${fmt(eldP99Ms.perHour)} ms/h (bound ±${b.eldP99MsPerHour})` },
    {
      name: 'statement rate slope',
      ok: statementsPerS.mean > 0 && Math.abs(statementsPerS.perHour) <= b.statementRateFractionPerHour * statementsPerS.mean,
      detail: `${fmt(statementsPerS.perHour)} /s per h on a mean of ${fmt(statementsPerS.mean, 1)} /s (bound ±${b.statementRateFractionPerHour * 100} % of the mean)`,
    },
    { name: 'completions keep up', ok: scheduled > 0 && completed >= b.completedShare * scheduled, detail: `${completed} of ${scheduled} scheduled (at least ${b.completedShare * 100} %)` },
    { name: 'worker errors', ok: errors === 0, detail: `${errors}` },
  ];
  return {
    options,
    samples,
    fitted: fit.length,
    heapAfterGcMb,
    heapUsedMb,
    rssMb,
    eldP99Ms,
    statementsPerS,
    completedPerS,
    scheduled,
    completed,
    errors,
    elapsedMs,
    checks,
    pass: checks.every((c) => c.ok),
  };
}

function spawnWorker(url: string, schema: string, o: LongRunOptions): ChildProcess {
  const file = fileURLToPath(new URL('./worker-child.js', import.meta.url));
  return spawn(process.execPath, ['--expose-gc', file], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      LONG_RUN_SCHEMA: schema,
      LONG_RUN_SAMPLE_MS: String(o.sampleMs),
      LONG_RUN_DISCOVERY: o.discovery,
      LONG_RUN_CONCURRENCY: String(o.concurrency),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/**
 * Runs the long run on a PostgreSQL server of its own (embedded, loopback).
 * @returns the samples, the slopes and the verdict
 */
export async function runLongRun(o: LongRunOptions): Promise<LongRunReport> {
  const log = o.log ?? (() => {});
  const server = await PgServer.start();
  const schema = 'long_run';
  const store = createPgStore({ connectionString: server.url, schema, poolConfig: { max: 2 } });
  let child: ChildProcess | undefined;
  try {
    await store.migrate();
    child = spawnWorker(server.url, schema, o);
    const samples: LongRunSample[] = [];
    // Sample times are rewritten to ms since the load began (negative before), on this process's clock.
    let started = Number.POSITIVE_INFINITY;
    let ready = false;
    let stopped = false;
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let message: { type?: string };
      try {
        message = JSON.parse(line) as { type?: string };
      } catch {
        return;
      }
      if (message.type === 'ready') ready = true;
      else if (message.type === 'stopped') stopped = true;
      else if (message.type === 'sample') samples.push({ ...(message as LongRunSample), atMs: Math.round(performance.now() - started) });
    });
    for (let i = 0; i < 600 && !ready && child.exitCode === null; i++) await sleep(100);
    if (!ready) throw new Error('the worker process did not report ready within 60 s');
    log(`worker ready (${o.discovery}, concurrency ${o.concurrency}); ${o.ratePerS} tasks/s for ${o.durationMs / 1000} s`);
    started = performance.now();
    let scheduled = 0;
    let nextLog = started + 60_000;
    // One batch per second on the monotonic clock; a late tick schedules what it missed.
    for (let tick = 1; performance.now() - started < o.durationMs && tick < 10_000_000; tick++) {
      const target = Math.floor(((performance.now() - started) / 1000) * o.ratePerS) + o.ratePerS;
      const n = Math.max(0, target - scheduled);
      if (n > 0) {
        const inputs: ScheduleInput[] = Array.from({ length: n }, (_, i) => ({ kind: 'steady', payload: { n: scheduled + i, pad: 'x'.repeat(64) }, delayMs: Math.floor(Math.random() * 2_000) }));
        try {
          await store.scheduleMany(inputs);
          scheduled += n;
        } catch (error) {
          log(`scheduleMany failed: ${String(error)}`);
        }
      }
      await sleep(Math.max(0, started + tick * 1000 - performance.now()));
      if (performance.now() >= nextLog) {
        nextLog += 60_000;
        const s = samples.at(-1);
        if (s) log(`${Math.round((performance.now() - started) / 1000)} s: scheduled ${scheduled}, completed ${s.completed}, heap after GC ${(s.heapAfterGc / MB).toFixed(1)} MB, RSS ${(s.rss / MB).toFixed(1)} MB, ELD p99 ${s.eldP99Ms.toFixed(1)} ms`);
      }
    }
    // Let the last tasks (due within 2 s) finish and one more sample arrive.
    await sleep(2_000 + o.sampleMs + 500);
    const elapsedMs = performance.now() - started;
    child.kill('SIGTERM');
    const code = await Promise.race([exited, sleep(15_000).then(() => 'timeout' as const)]);
    if (code === 'timeout') child.kill('SIGKILL');
    if (!stopped) log(`the worker did not report a graceful stop (exit ${String(code)})`);
    return judgeLongRun(o, samples, scheduled, elapsedMs);
  } finally {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await store.close().catch(() => {});
    await server.close();
  }
}

const row = (name: string, s: Slope, unit: string, d = 2) => `| ${name} | ${s.first.toFixed(d)} | ${s.last.toFixed(d)} | ${s.mean.toFixed(d)} | ${s.perHour.toFixed(d)} ${unit}/h |`;

/** The report as Markdown (evidence/long-run-memory.md). */
export function longRunMarkdown(r: LongRunReport, when: Date, note: string): string {
  const o = r.options;
  const lines = [
    '# Long run (long_run_memory)',
    '',
    `Run ${when.toISOString()} by \`pnpm long-run-memory\` (packages/faultnet/scripts/long-run-memory.ts), Node.js ${process.version}. ${note}`,
    '',
    `**Verdict: ${r.pass ? 'PASS' : 'FAIL'}**`,
    '',
    `One worker process (driver \`pg\`, ${o.discovery} discovery, concurrency ${o.concurrency}) under a steady ${o.ratePerS} tasks/s for ${Math.round(o.durationMs / 60_000)} min (one \`scheduleMany\` per second, each task due 0–2 s later); a sample every ${o.sampleMs / 1000} s; the first ${Math.round(o.warmupMs / 1000)} s are left out of the slopes (least squares, per hour), ${r.fitted} samples fitted. Heap after GC is \`heapUsed\` right after a forced full GC (\`--expose-gc\`): what the process retains. Event-loop delay: \`perf_hooks.monitorEventLoopDelay\` (10 ms resolution), p99 of each interval. Statements: every \`query\` call of the process's \`pg\` clients.`,
    '',
    '| series | first | last | mean | slope |',
    '|---|---|---|---|---|',
    row('heap after GC (MB)', r.heapAfterGcMb, 'MB'),
    row('heap used (MB)', r.heapUsedMb, 'MB'),
    row('RSS (MB)', r.rssMb, 'MB'),
    row('event-loop delay p99 (ms)', r.eldP99Ms, 'ms'),
    row('statements per s', r.statementsPerS, '/s'),
    row('completions per s', r.completedPerS, '/s'),
    '',
    '| check | result | detail |',
    '|---|---|---|',
    ...r.checks.map((c) => `| ${c.name} | ${c.ok ? 'ok' : 'FAIL'} | ${c.detail} |`),
    '',
    `Scheduled ${r.scheduled}, completed ${r.completed}, worker errors ${r.errors}, elapsed ${Math.round(r.elapsedMs / 1000)} s.`,
    '',
  ];
  return lines.join('\n');
}
