/**
 * The long run's judge (`pnpm long-run-memory`, src/long-run/long-run.ts): least-squares slopes per
 * hour, and the verdict on made-up series — flat passes, a leaking heap or a falling statement rate
 * fails. The run itself is a script (an hour), not part of `pnpm test`.
 */
import { describe, expect, it } from 'vitest';
import { judgeLongRun, type LongRunOptions, slopePerHour } from '../src/long-run/long-run.js';
import type { LongRunSample } from '../src/long-run/worker-child.js';

const MB = 1024 * 1024;
const OPTIONS: LongRunOptions = { durationMs: 3_600_000, sampleMs: 10_000, ratePerS: 50, warmupMs: 300_000, discovery: 'hybrid', concurrency: 10 };

/** Samples every 10 s over an hour; `heapMbAt(hours)`, `statementsPerS(hours)`. */
function series(heapMbAt: (h: number) => number, statementsPerS: (h: number) => number): LongRunSample[] {
  const samples: LongRunSample[] = [];
  let statements = 0;
  for (let atMs = 0; atMs <= OPTIONS.durationMs; atMs += OPTIONS.sampleMs) {
    const h = atMs / 3_600_000;
    statements += statementsPerS(h) * 10;
    // A deterministic wobble of ±0.5 MB, as GC leaves it.
    const wobble = ((atMs / 10_000) % 3) - 1;
    samples.push({ type: 'sample', atMs, heapUsed: (heapMbAt(h) + 5) * MB, heapAfterGc: (heapMbAt(h) + wobble * 0.5) * MB, rss: 100 * MB, eldP99Ms: 12, eldMaxMs: 20, statements, completed: Math.round(atMs / 20), errors: 0 });
  }
  return samples;
}

describe('long_run_memory judge', () => {
  it('fits a line: slope per hour of a series rising 3 per hour is 3', () => {
    const xs = [0, 600_000, 1_200_000, 1_800_000];
    expect(slopePerHour(xs, [10, 10.5, 11, 11.5]).perHour).toBeCloseTo(3, 9);
    expect(slopePerHour(xs, [7, 7, 7, 7])).toEqual({ perHour: 0, mean: 7, first: 7, last: 7 });
  });

  it('passes flat series and fails a heap growing 20 MB/h or a statement rate falling by half', () => {
    const scheduled = OPTIONS.durationMs / 20;
    const flat = judgeLongRun(OPTIONS, series(() => 12, () => 75), scheduled, OPTIONS.durationMs);
    expect(flat.checks.filter((c) => !c.ok)).toEqual([]);
    expect(flat.pass).toBe(true);
    expect(Math.abs(flat.heapAfterGcMb.perHour)).toBeLessThan(1);

    const leak = judgeLongRun(OPTIONS, series((h) => 12 + 20 * h, () => 75), scheduled, OPTIONS.durationMs);
    expect(leak.pass).toBe(false);
    expect(leak.heapAfterGcMb.perHour).toBeCloseTo(20, 0);
    expect(leak.checks.find((c) => c.name === 'heap after GC slope')?.ok).toBe(false);

    const slowing = judgeLongRun(OPTIONS, series(() => 12, (h) => 100 - 50 * h), scheduled, OPTIONS.durationMs);
    expect(slowing.checks.find((c) => c.name === 'statement rate slope')?.ok).toBe(false);
  });
});
