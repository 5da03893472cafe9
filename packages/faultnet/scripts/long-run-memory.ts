/**
 * `pnpm long-run-memory [--minutes 60] [--sample-s 10] [--rate 50] [--discovery hybrid|poll]
 * [--concurrency 10] [--warmup-s 300] [--out evidence/long-run-memory.md] [--note "..."]`: one
 * worker under steady load for an hour (issue #26 item 10). Writes the report (Markdown) and exits
 * 1 when a slope is out of its bound (see LONG_RUN_BOUNDS in src/long-run/long-run.ts). Not part
 * of `pnpm test`.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { evidenceDir } from '@postpone/testkit';
import { longRunMarkdown, runLongRun } from '../dist/long-run/long-run.js';

// A lone `--` (pnpm passes it on from `pnpm <script> -- --option`) is not an argument.
const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    minutes: { type: 'string', default: '60' },
    'sample-s': { type: 'string', default: '10' },
    rate: { type: 'string', default: '50' },
    discovery: { type: 'string', default: 'hybrid' },
    concurrency: { type: 'string', default: '10' },
    'warmup-s': { type: 'string' },
    out: { type: 'string' },
    note: { type: 'string', default: '' },
  },
});
const positive = (name: string, text: string | undefined): number => {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${JSON.stringify(text)}`);
  return n;
};
const durationMs = Math.round(positive('minutes', values.minutes) * 60_000);
const discovery = values.discovery;
if (discovery !== 'poll' && discovery !== 'hybrid') throw new Error(`--discovery must be poll or hybrid, got ${JSON.stringify(discovery)}`);
const started = new Date();
const report = await runLongRun({
  durationMs,
  sampleMs: Math.round(positive('sample-s', values['sample-s']) * 1000),
  ratePerS: Math.round(positive('rate', values.rate)),
  // Default warm-up: 5 min, or a tenth of a shorter run.
  warmupMs: values['warmup-s'] === undefined ? Math.min(300_000, durationMs / 10) : positive('warmup-s', values['warmup-s']) * 1000,
  discovery,
  concurrency: Math.round(positive('concurrency', values.concurrency)),
  log: (line) => console.log(`[long-run ${Math.round((Date.now() - started.getTime()) / 1000)}s] ${line}`),
});
const markdown = longRunMarkdown(report, started, values.note ?? '');
const out = values.out === undefined ? join(evidenceDir(), 'long-run-memory.md') : resolve(values.out);
writeFileSync(out, markdown);
console.log(markdown);
process.exit(report.pass ? 0 : 1);
