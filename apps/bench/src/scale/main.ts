/**
 * `pnpm bench --scale`: the scale run (not part of the default bench). Starts an embedded PostgreSQL
 * (or uses `DATABASE_URL`), runs {@link runScale}, keeps the run in `scale-results.json` under its
 * table layout and writes `scale.md`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveDatabase } from '@postpone/embedded';
import { Command, InvalidArgumentError } from 'commander';
import { measureHotRenewals } from './hot.js';
import { writeScaleReport } from './report.js';
import { runScale, type ScaleRun } from './run.js';

const count = (value: string): number => {
  const v = Number(value.replace(/_/g, ''));
  if (!Number.isInteger(v) || v < 0 || v > 1_000_000_000) throw new InvalidArgumentError('must be an integer 0..1e9');
  return v;
};
const counts = (value: string): number[] => value.split(',').map((s) => count(s.trim()));

interface ScaleCli {
  readonly quick?: boolean;
  readonly sizes?: number[];
  readonly claimProbes?: number;
  readonly retentionRows?: number;
  readonly rate?: number;
  readonly steadySeconds?: number;
  readonly snapshotSeconds?: number;
  readonly out: string;
  readonly render?: boolean;
  readonly hot?: boolean;
}

/**
 * Runs the scale bench with command-line `args` (without the `--scale` flag itself).
 * @returns the path of the written report
 */
export async function scaleMain(args: readonly string[], repoRoot: string): Promise<string> {
  const program = new Command()
    .name('postpone-bench --scale')
    .description('Postpone at 0 → 100 M finished tasks: claim cost, table sizes, retention, steady load and a long-held snapshot.')
    .option('--quick', 'sizes 0, 100 000, 1 000 000; 20 s steady load; snapshot held 30 s')
    .option('--sizes <list>', 'finished-task counts, ascending (default 0,1000000,10000000,100000000)', counts)
    .option('--claim-probes <n>', 'timed claims per size (default 200)', count)
    .option('--retention-rows <n>', 'rows removed in the retention comparison (default 1000000)', count)
    .option('--rate <n>', 'steady load, tasks/s (default 1000)', count)
    .option('--steady-seconds <n>', 'steady-load duration (default 120)', count)
    .option('--snapshot-seconds <n>', 'how long the long snapshot is held (default 600)', count)
    .option('--out <dir>', 'report folder', join(repoRoot, 'evidence', 'bench'))
    .option('--render', "write scale.md again from the folder's scale-results.json (no measuring)")
    .option('--hot', 'only the HOT renewal comparison (seconds): saved in scale-hot.json, then scale.md is written again')
    .exitOverride();
  program.parse(['node', 'scale', ...args]);
  const o = program.opts<ScaleCli>();
  const saved = join(o.out, 'scale-results.json');
  if (o.render) return await writeScaleReport(o.out, JSON.parse(readFileSync(saved, 'utf8')) as ScaleRun[]);
  const quick = o.quick === true;
  const sizes = o.sizes ?? (quick ? [0, 100_000, 1_000_000] : [0, 1_000_000, 10_000_000, 100_000_000]);
  for (let i = 1; i < sizes.length; i++) if ((sizes[i] as number) < (sizes[i - 1] as number)) throw new InvalidArgumentError('--sizes must be ascending');
  const db = await resolveDatabase(process.env, {});
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
  } catch {}
  const savedRuns = (): ScaleRun[] => (existsSync(saved) ? (JSON.parse(readFileSync(saved, 'utf8')) as ScaleRun[]) : []);
  try {
    if (o.hot) {
      const hot = await measureHotRenewals(db.url, commit);
      mkdirSync(o.out, { recursive: true });
      writeFileSync(join(o.out, 'scale-hot.json'), `${JSON.stringify(hot, null, 1)}\n`);
      return await writeScaleReport(o.out, savedRuns());
    }
    const run = await runScale(
      {
        url: db.url,
        sizes,
        claimProbes: o.claimProbes ?? (quick ? 50 : 200),
        retentionRows: o.retentionRows ?? (quick ? 100_000 : 1_000_000),
        steadyRate: o.rate ?? 1_000,
        steadyMs: (o.steadySeconds ?? (quick ? 20 : 120)) * 1000,
        snapshotHoldMs: (o.snapshotSeconds ?? (quick ? 30 : 600)) * 1000,
        log: (line) => process.stderr.write(`${line}\n`),
      },
      commit,
    );
    mkdirSync(o.out, { recursive: true });
    const runs = savedRuns().filter((r) => r.layout !== run.layout);
    runs.push(run);
    runs.sort((a, b) => a.layout.localeCompare(b.layout));
    writeFileSync(saved, `${JSON.stringify(runs, null, 1)}\n`);
    return await writeScaleReport(o.out, runs);
  } finally {
    await db.stop();
  }
}
