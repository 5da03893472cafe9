#!/usr/bin/env node
/**
 * `pnpm bench:feature-cost [--tasks 6000] [--processes 3] [--batch 50] [--rounds 3] [--rev <commit>]
 * [--out evidence/bench/feature-cost.md] [--fragment evidence/bench/fragments/feature-cost.md]`:
 * what plain tasks cost on this commit's schema and statements against those of `--rev` (default
 * 9c5e371, the last commit with schema version 14, before migrations 15–21 of issues #28 and #29),
 * measured on one server in one run (`./measure.ts`). The old commit is built from git once into
 * the OS temp dir (`./old-build.ts`, about a minute on a 2-core machine). Embedded PostgreSQL 17
 * with `pg_stat_statements` preloaded, unless `DATABASE_URL` is set (then the extension must be
 * preloadable there). Writes the section and a fragment of `evidence/bench/report.md` that points to it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startBenchDatabase } from '../db/server.js';
import { ALL_VARIANTS, runFeatureCost, statementTexts, VARIANTS, type VariantName } from './measure.js';
import { buildOldCode } from './old-build.js';
import { featureCostFragment, featureCostMarkdown } from './report.js';

/** The last commit whose schema version is 14: the first-parent commit before the merge of pause (15). */
const FEATURE_COST_BEFORE_REV = '9c5e371';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    tasks: { type: 'string', default: '6000' },
    processes: { type: 'string', default: '3' },
    batch: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    rev: { type: 'string', default: FEATURE_COST_BEFORE_REV },
    out: { type: 'string', default: 'evidence/bench/feature-cost.md' },
    fragment: { type: 'string', default: 'evidence/bench/fragments/feature-cost.md' },
    variants: { type: 'string' },
  },
});
const positive = (name: string, v: string | undefined) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: expected a positive integer, got ${v}`);
  return n;
};
const tasks = positive('tasks', values.tasks);
const processes = positive('processes', values.processes);
const batch = positive('batch', values.batch);
const rounds = positive('rounds', values.rounds);
const variants = values.variants === undefined ? VARIANTS : values.variants.split(',').map((v) => v.trim() as VariantName);
for (const v of variants) if (!ALL_VARIANTS.includes(v)) throw new Error(`--variants: unknown variant ${v} (known: ${ALL_VARIANTS.join(', ')})`);
if (!variants.includes('before')) throw new Error('--variants must include before (every figure is compared with it)');
if (tasks <= batch) throw new Error('--tasks must exceed --batch (the probes complete one batch)');

const repo = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
process.chdir(repo);
const head = execFileSync('git', ['log', '-1', '--format=%h'], { encoding: 'utf8' }).trim();
const log = (line: string) => process.stderr.write(`[feature-cost] ${line}\n`);
log(`building ${values.rev} (once; cached in the OS temp dir)`);
const old = buildOldCode(values.rev ?? FEATURE_COST_BEFORE_REV, repo);
log(`before = ${old.subject}${old.cached ? ' (cached build)' : ''}`);
const loadStart = loadavg();
const db = await startBenchDatabase();
try {
  const probe = new pg.Client({ connectionString: db.url });
  await probe.connect();
  const postgres = (await probe.query<{ v: string }>(`select split_part(version(), ' on ', 1) as v`)).rows[0]?.v ?? 'PostgreSQL';
  await probe.end();
  const runs = await runFeatureCost({ url: db.url, tasks, processes, batch, rounds, old, variants }, (r) =>
    log(
      `round ${r.round} ${r.variant.padEnd(17)} ${r.tasksPerS.toFixed(0)} tasks/s, WAL ${r.walPerTask.toFixed(0)} B/task, server ${r.serverUsPerTask.toFixed(1)} µs/task, ${r.buffersPerTask.toFixed(2)} buffers/task, claim ${r.claim.usPerCall.toFixed(0)} µs ${r.claim.buffersPerCall.toFixed(1)} buf, completion ${r.complete.usPerCall.toFixed(0)} µs ${r.complete.buffersPerCall.toFixed(1)} buf (load ${r.load1.toFixed(1)})`,
    ),
  );
  const cpu = cpus();
  const text = featureCostMarkdown(
    {
      date: `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      machine: `${cpu[0]?.model.trim() ?? 'CPU'} × ${cpu.length} cores, ${Math.round(totalmem() / 2 ** 30)} GB`,
      postgres,
      node: process.versions.node,
      tasks,
      processes,
      batch,
      rounds,
      old,
      head,
      loadStart,
      loadEnd: loadavg(),
    },
    await statementTexts(old),
    runs,
  );
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, text);
  writeFileSync(values.out.replace(/\.md$/, '.json'), `${JSON.stringify({ head, old: old.sha, tasks, processes, batch, rounds, runs }, null, 2)}\n`);
  mkdirSync(dirname(values.fragment), { recursive: true });
  writeFileSync(values.fragment, featureCostFragment(text));
  process.stdout.write(text);
} finally {
  await db.stop();
}
