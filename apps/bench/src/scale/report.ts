/**
 * Writes `evidence/bench/scale.md` and its charts from the saved runs (`scale-results.json`: one run
 * per table layout, so the single-table run and the split run sit side by side).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type HostsBenchResult, hostsMarkdown } from '../hosts/run.js';
import { type LineDatum, lineSpec, renderSvg } from '../report/chart.js';
import { median } from './claim.js';
import type { HotResult } from './hot.js';
import type { ScaleRun } from './run.js';
import type { SteadyResult } from './steady.js';

const n = (v: number, digits = 0) => v.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits }).replace(/,/g, ' ');
const mb = (bytes: number) => `${n(bytes / 1_048_576, 1)} MB`;

/** Ratio of the largest size's figure to the smallest's, and whether it is within 20 %. */
function flat(run: ScaleRun, pick: (p: ScaleRun['points'][number]) => number): { ratio: number; ok: boolean } {
  const first = run.points[0];
  const last = run.points[run.points.length - 1];
  if (!first || !last) return { ratio: Number.NaN, ok: false };
  const ratio = pick(last) / pick(first);
  return { ratio, ok: ratio <= 1.2 };
}

function window(result: SteadyResult, from: number, to: number, pick: (s: SteadyResult['samples'][number]) => number): number {
  return median(result.samples.filter((s) => s.atS >= from && s.atS < to).map(pick));
}

async function timeline(result: SteadyResult, title: string, yTitle: string, pick: (s: SteadyResult['samples'][number]) => number): Promise<string> {
  const data: LineDatum[] = result.samples.map((s) => ({ x: Math.round(s.atS), y: pick(s), series: yTitle }));
  const spec = lineSpec({ title, xTitle: 's since the load began (snapshot held between the marks in the text)', yTitle, data }) as { axes: { values?: unknown }[] };
  if (spec.axes[0]) delete spec.axes[0].values;
  return await renderSvg(spec as Parameters<typeof renderSvg>[0]);
}

/** The HOT renewal comparison saved by `--hot` (`scale-hot.json`), when there is one. */
function hotSection(dir: string): string[] {
  const saved = join(dir, 'scale-hot.json');
  if (!existsSync(saved)) return [];
  const hot = JSON.parse(readFileSync(saved, 'utf8')) as HotResult;
  const out = [
    '## HOT renewals before and after migration 7',
    '',
    `Measured ${hot.at} on commit \`${hot.commit}\` by \`pnpm bench --scale --hot\`: ${n(hot.tasks)} claimed tasks, each renewed ${hot.rounds} times through the store's \`extendMany\` (batches of 100, one transaction each). "before" puts back the index of migrations 1–6, \`task_lease_idx (lease_until) where state = 'CLAIMED'\`; "after" is the schema as migrated today, where no index reads \`lease_until\` (docs/contract.md#vacuum). Counts from \`pg_stat_user_tables\`.`,
    '',
    '| layout | renewals | row updates | HOT updates | HOT ratio | index size after |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const l of hot.layouts) out.push(`| ${l.layout} | ${n(l.renewals)} | ${n(l.updates)} | ${n(l.hotUpdates)} | ${n((100 * l.hotUpdates) / Math.max(l.updates, 1), 1)} % | ${mb(l.indexBytes)} |`);
  return [...out, ''];
}

/** The hosts table of `pnpm bench --hosts` (`hosts.json`, also in hosts.md), when it was run. */
function hostsSection(dir: string): string[] {
  const saved = join(dir, 'hosts.json');
  if (!existsSync(saved)) return [];
  const md = hostsMarkdown(JSON.parse(readFileSync(saved, 'utf8')) as HostsBenchResult).replace(/^# /, '## ');
  return [md.replace(/\n+$/, ''), '', 'Written by `pnpm bench --hosts`; also in [hosts.md](hosts.md).', ''];
}

export async function writeScaleReport(dir: string, runs: readonly ScaleRun[]): Promise<string> {
  const out: string[] = ['# Postpone at scale', '', 'Written by `pnpm bench --scale` (`apps/bench/src/scale`). Raw figures: [scale-results.json](scale-results.json). One run per table layout; a layout\'s run replaces its earlier one.', ''];
  out.push('## Summary', '', '| layout | largest size | claim buffers smallest → largest | claim p50 / p99 ms smallest → largest | claim server ms before → during a 10-minute snapshot | removing 1 M finished: DELETE + VACUUM vs DROP |', '| --- | --- | --- | --- | --- | --- |');
  for (const run of runs) {
    const a = run.points[0];
    const z = run.points[run.points.length - 1];
    const snap = run.snapshot.snapshot;
    const during = snap ? `${n(window(run.snapshot, 0, snap.fromS, (x) => x.claimExecutionMs), 3)} → ${n(window(run.snapshot, snap.fromS, snap.toS, (x) => x.claimExecutionMs), 3)}` : '—';
    if (a && z) out.push(`| ${run.layout} | ${n(z.finished)} | ${a.buffers} → ${z.buffers} (${n(z.buffers / a.buffers, 2)}×) | ${n(a.claimP50Ms, 2)} / ${n(a.claimP99Ms, 2)} → ${n(z.claimP50Ms, 2)} / ${n(z.claimP99Ms, 2)} | ${during} | ${n(run.retention.deleteMs + run.retention.vacuumMs)} ms vs ${n(run.retention.dropMs, 1)} ms |`);
  }
  out.push('');
  for (const run of runs) {
    const slug = run.layout.replace(/[^a-z]+/g, '-');
    const p99 = flat(run, (p) => p.claimP99Ms);
    const buf = flat(run, (p) => p.buffers);
    out.push(`## ${run.layout}`, '', `Measured ${run.at} on commit \`${run.commit}\`, Node.js ${run.node}, embedded PostgreSQL 17 (fsync off), 2 cores${run.load ? `; 1-minute load average ${n(run.load.start, 1)} at the start, ${n(run.load.end, 1)} at the end (above 2, other work shared the cores and the figures carry that noise)` : ''}.`, '');
    if (run.note) out.push(`Note: ${run.note}`, '');
    out.push('### Claim as finished tasks grow', '', 'The store\'s claim of up to 10 tasks with 50 due, at each size: client round trip (each claimed task handed back) and `EXPLAIN (ANALYZE, BUFFERS)` rolled back. Each size is measured after its load settled: a CHECKPOINT, then until the kernel holds at most 256 MB of dirty pages ("settle s"; "—" in runs from before that step). The probes run in 5 rounds 1 s apart; the p99 compared across sizes is the median of the rounds\' p99s, with the p99 over all probes in brackets (runs from before the rounds show one figure).', '');
    out.push('| finished tasks | claim p50 ms | claim p99 ms (median of rounds; all probes) | buffers | due-scan buffers | server ms | load + vacuum s | settle s | tables (heap / indexes) |', '| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const p of run.points) {
      const rel = p.relations.filter((r) => r.table.startsWith('task') || r.table === 'effect').map((r) => `${r.table} ${mb(r.heapBytes)} / ${mb(r.indexBytes)}`).join('; ');
      out.push(`| ${n(p.finished)} | ${n(p.claimP50Ms, 2)} | ${n(p.claimP99Ms, 2)}${p.claimP99AllMs === undefined ? '' : ` (${n(p.claimP99AllMs, 2)})`} | ${p.buffers} | ${p.scanBuffers} | ${n(p.executionMs, 3)} | ${n(p.loadMs / 1000, 1)} | ${p.settleMs === undefined ? '—' : n(p.settleMs / 1000, 1)} | ${rel} |`);
    }
    out.push('', `Largest size against the smallest: claim p99 ${n(p99.ratio, 2)}× (${p99.ok ? 'within' : 'outside'} 20 %), buffers ${n(buf.ratio, 2)}× (${buf.ok ? 'within' : 'outside'} 20 %).`, '');
    const r = run.retention;
    out.push('### Retention', '', `Removing ${n(r.rows)} finished tasks: DELETE in ${r.deleteBatches} batches of 10 000 took ${n(r.deleteMs)} ms and the VACUUM after it ${n(r.vacuumMs)} ms; DETACH + DROP of the partition holding them took ${n(r.dropMs, 1)} ms (${n((r.deleteMs + r.vacuumMs) / Math.max(r.dropMs, 0.001))}× faster).`, '');
    const s = run.steady;
    const maxDead = Math.max(0, ...s.samples.map((x) => x.deadTuples));
    out.push('### Steady load', '', `${n(s.rate)} tasks/s for ${n(s.durationS)} s: ${n(s.scheduled)} scheduled, ${n(s.done)} done${s.done < s.scheduled * 0.9 ? ' (the worker fell behind: the backlog grew)' : ''}. Live table: dead tuples at most ${n(maxDead)}, median ${n(median(s.samples.map((x) => x.deadTuples)))}; ${s.autovacuums} autovacuum runs, a vacuum seen running for ${n(s.vacuumRunningS, 2)} s in all; claim server time median ${n(median(s.samples.map((x) => x.claimExecutionMs)), 3)} ms, backlog median ${n(median(s.samples.map((x) => x.backlog)))}.`, '');
    const snap = run.snapshot;
    if (snap.snapshot) {
      const { fromS, toS } = snap.snapshot;
      const end = snap.durationS;
      const row = (label: string, pick: (x: SteadyResult['samples'][number]) => number, d = 0) => `| ${label} | ${n(window(snap, 0, fromS, pick), d)} | ${n(window(snap, fromS, toS, pick), d)} | ${n(window(snap, toS, end, pick), d)} |`;
      out.push('### Long snapshot', '', `A REPEATABLE READ transaction held open from ${n(fromS)} s to ${n(toS)} s under ${n(snap.rate)} tasks/s (${n(snap.done)} of ${n(snap.scheduled)} done). Medians per window:`, '');
      out.push('| figure | before | snapshot held | after |', '| --- | --- | --- | --- |');
      out.push(row('claim server ms', (x) => x.claimExecutionMs, 3), row('claim buffers', (x) => x.claimBuffers), row('backlog (due, waiting)', (x) => x.backlog), row('dead tuples (live table)', (x) => x.deadTuples), row('oldest transaction s', (x) => x.oldestXactS, 1));
      const charts: [string, string, (x: SteadyResult['samples'][number]) => number][] = [
        ['claim', 'claim server ms', (x) => x.claimExecutionMs],
        ['backlog', 'backlog (tasks)', (x) => x.backlog],
        ['dead', 'dead tuples', (x) => x.deadTuples],
      ];
      out.push('');
      for (const [key, label, pick] of charts) {
        const file = `scale-${slug}-snapshot-${key}.svg`;
        writeFileSync(join(dir, file), await timeline(snap, `${label} (${run.layout}; snapshot ${n(fromS)}–${n(toS)} s)`, label, pick));
        out.push(`![${label}](${file})`);
      }
      out.push('');
    }
  }
  out.push(...hotSection(dir), ...hostsSection(dir));
  const file = join(dir, 'scale.md');
  writeFileSync(file, `${out.join('\n')}\n`);
  return file;
}
