/**
 * Writes the report folder: `report.md`, `results.json` and one SVG per chart. Files are written
 * through a temporary name and renamed, so a reader never sees half a report.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchResults } from './results.js';
import { renderSvg } from './chart.js';
import { buildCharts } from './charts.js';
import { renderMarkdown } from './markdown.js';

function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/** @returns the path of `report.md` */
export async function writeReport(results: BenchResults, dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const charts = buildCharts(results);
  for (const chart of charts) writeAtomic(join(dir, chart.file), await renderSvg(chart.spec));
  writeAtomic(join(dir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  const report = join(dir, 'report.md');
  writeAtomic(report, renderMarkdown(results, charts) + fragments(dir));
  return report;
}

/**
 * The Markdown fragments other bench packages wrote into `<dir>/fragments/*.md` (e.g. the
 * scheduling-throughput section of `apps/bench/src/schedule`), in name order, appended to the report.
 */
function fragments(dir: string): string {
  const folder = join(dir, 'fragments');
  if (!existsSync(folder)) return '';
  const files = readdirSync(folder).filter((f) => f.endsWith('.md')).sort();
  return files.map((f) => `\n\n${readFileSync(join(folder, f), 'utf8').trim()}\n`).join('');
}
