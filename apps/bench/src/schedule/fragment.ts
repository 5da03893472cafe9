/**
 * The scheduling-throughput section of the bench report as a Markdown fragment of its own
 * (`evidence/bench/schedule.md`), so the report can include it without this package editing the report.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { NoticeMode } from './messages.js';
import type { ScheduleRateOptions, ScheduleRateRun } from './measure.js';

const MODE_TEXT: Record<NoticeMode, string> = {
  each: '`each`: NOTIFY inside every schedule statement',
  coalesced: '`coalesced`: for tasks due within 30 s, one NOTIFY in flight per store, after commit',
  near: '`near`: NOTIFY in the statement only for tasks due within 30 s (default)',
  off: '`off`: no schedule notices (fallback read only)',
};

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
};

const ms = (v: number | null) => (v === null ? '–' : `${v}`);

/** The fragment: settings, one row per run, and the coalesced/off and each/off ratios of the median rates. */
export function scheduleFragment(options: Omit<ScheduleRateOptions, 'url'>, runs: readonly ScheduleRateRun[]): string {
  const rate = (mode: NoticeMode) => median(runs.filter((r) => r.mode === mode).map((r) => r.perSecond));
  const lines = [
    '## Scheduling throughput with notifications',
    '',
    `${options.producers} producer processes each call \`schedule\` one task at a time (autocommit) for ${options.durationMs / 1_000} s while ${options.workers} hybrid worker processes listen. ` +
      `Every ${options.probeEvery}th task is a probe due 0.3–1 s ahead, claimed by the workers (lateness = claimed at − due at, database clock); the others are due in an hour.`,
    '',
    '| notices | round | schedules | schedules/s | coalesced NOTIFYs | probes claimed | probe lateness p50 / p99 / max ms | claims (empty) |',
    '|---|---:|---:|---:|---:|---:|---|---:|',
    ...runs.map(
      (r) =>
        `| ${MODE_TEXT[r.mode]} | ${r.round} | ${r.scheduled} | ${r.perSecond} | ${r.coalescedNotifies} | ${r.probesClaimed} / ${r.probes} | ${ms(r.lateness.p50)} / ${ms(r.lateness.p99)} / ${ms(r.lateness.max)} | ${r.claims} (${r.emptyClaims}) |`,
    ),
    '',
  ];
  const off = rate('off');
  for (const mode of ['near', 'each', 'coalesced'] as const) {
    if (runs.some((r) => r.mode === mode) && Number.isFinite(off) && off > 0) lines.push(`- ${mode} / off (median schedules/s): **${(rate(mode) / off).toFixed(2)}** (target with notices on: ≥ 0.90)`);
  }
  if (options.rounds > 1) lines.push(`- ${options.rounds} rounds; each round runs the modes in another order (rotated by one), so the drift of the machine does not favour one mode.`);
  lines.push('');
  return lines.join('\n');
}

/** Writes the fragment to `file` (folders created). */
export function writeScheduleFragment(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}
