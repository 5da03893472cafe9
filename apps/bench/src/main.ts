/**
 * `pnpm bench`: the bench's command line. Starts an embedded PostgreSQL (or uses `DATABASE_URL`),
 * runs the selected sections with a progress bar on stderr, writes `evidence/bench/report.md`, its
 * charts and `results.json`, and prints the report's path.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { evidenceDir } from '@postpone/testkit';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { BenchResults } from './report/results.js';
import { FULL, QUICK, SECTION_GROUPS, SECTIONS, selectSections } from './report/config.js';
import { mergeResults } from './report/merge.js';
import { writeReport } from './report/write.js';
import { startBenchDatabase } from './db/server.js';
import { scaleMain } from './scale/main.js';
import { CitusClusterError } from './citus/cluster.js';
import { citusMain } from './citus/main.js';
import { writeHostsSection } from './hosts/main-section.js';
import { SYSTEM_NAMES, type SystemName } from './peers/protocol.js';
import { createProgress } from './progress.js';
import { runBench } from './run-bench.js';
import { runScheduleRate, SCHEDULE_RATE_DEFAULTS } from './schedule/measure.js';
import { scheduleFragment, writeScheduleFragment } from './schedule/fragment.js';

const list = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 20) throw new InvalidArgumentError('must be an integer 1..20');
  return n;
}

function systems(value: string): SystemName[] {
  const names = list(value);
  for (const n of names) if (!(SYSTEM_NAMES as readonly string[]).includes(n)) throw new InvalidArgumentError(`unknown system "${n}"; known: ${SYSTEM_NAMES.join(', ')}`);
  return names as SystemName[];
}

interface CliOptions {
  readonly quick?: boolean;
  readonly only?: string[];
  readonly skip?: string[];
  readonly systems?: SystemName[];
  readonly rounds?: number;
  readonly out?: string;
  readonly progress: boolean;
  readonly list?: boolean;
  readonly render?: string;
  readonly merge?: boolean;
  readonly hosts?: boolean;
  readonly doneNotKept?: boolean;
}

const program = new Command()
  .name('postpone-bench')
  .description('Postpone benchmarks: the seed measurements, cost curves, and pg-boss / graphile-worker side by side. Embedded PostgreSQL unless DATABASE_URL is set.')
  .option('--quick', 'smaller sizes, one round (a smoke run of a few minutes)')
  .option('--only <sections>', `comma-separated sections or groups to run (groups: ${Object.keys(SECTION_GROUPS).join(', ')})`, list)
  .option('--skip <sections>', 'comma-separated sections or groups to leave out', list)
  .addOption(new Option('--systems <names>', `comma-separated systems in the side-by-side sections (default: ${SYSTEM_NAMES.join(',')})`).argParser(systems))
  .option('--rounds <n>', 'rounds of A B A B alternation (default: 3, quick: 1)', positiveInt)
  .option('--out <dir>', 'report folder (default: <repo>/evidence/bench)')
  .option('--no-progress', 'no progress bar')
  .option('--done-not-kept', "run Postpone with DONE not kept (the worker's `keepDone: false`, the ceiling's drop statement) in the throughput, ceiling and other worker sections")
  .option('--list', 'list the sections and exit')
  .option('--render <results.json>', 'write the report again from a saved results.json (no measuring)')
  .option('--scale', 'instead of the sections: the scale run of apps/bench/src/scale (0 → 100 M finished tasks; `--scale --help` lists its options; not part of the default run)')
  .option('--citus', 'instead of the sections: plain PostgreSQL 15 vs Citus 13.2 with 1 and 2 worker nodes (apps/bench/src/citus; needs CITUS_TARBALL; `--citus --help` lists its options; writes citus.md)')
  .option('--hosts', 'only the hosts section: 1, 4, 8, 16 network-namespace worker hosts × 2 processes (needs root; writes hosts.md)')
  .option('--merge', "measure the selected sections only and merge them into the report folder's results.json (the other sections keep their earlier figures; a note says which run each came from)");

async function main(argv: string[]): Promise<number> {
  // `pnpm bench` ends its script with `--` (so pnpm hands `--help` to this program, not to itself), and
  // `pnpm --filter … start -- --quick` passes its own `--` through: drop the leading ones so the flags parse.
  const args = argv.slice(2);
  while (args[0] === '--') args.shift();
  if (args[0] === '--scale') {
    console.log(`report: ${await scaleMain(args.slice(1), resolve(evidenceDir(), '..'))}`);
    return 0;
  }
  if (args[0] === '--citus') {
    try {
      console.log(`report: ${await citusMain(args.slice(1), resolve(evidenceDir(), '..'))}`);
      return 0;
    } catch (error) {
      if (error instanceof CommanderError) return error.code === 'commander.helpDisplayed' ? 0 : 2;
      if (error instanceof CitusClusterError) {
        console.error(`bench --citus: ${error.message}`);
        return 1;
      }
      throw error;
    }
  }
  const opts = program.parse(args, { from: 'user' }).opts<CliOptions>();
  if (opts.list) {
    console.log(`sections: ${SECTIONS.join(', ')}, schedule`);
    for (const [group, sections] of Object.entries(SECTION_GROUPS)) console.log(`  ${group}: ${sections.join(', ')}`);
    return 0;
  }
  const out = opts.out ? resolve(opts.out) : join(evidenceDir(), 'bench');
  if (opts.render) {
    const results = JSON.parse(readFileSync(resolve(opts.render), 'utf8')) as BenchResults;
    console.log(`report: ${await writeReport(results, out)}`);
    return 0;
  }
  if (opts.hosts) {
    const db = await startBenchDatabase();
    try {
      const hostCounts = opts.quick ? [1, 4] : [1, 4, 8, 16];
      console.log(`report: ${await writeHostsSection(out, { databaseUrl: db.url, hostCounts, onProgress: (line) => process.stderr.write(`${line}\n`) })}`);
      return 0;
    } finally {
      await db.stop();
    }
  }
  // Read by the Postpone worker processes and the ceiling processes the bench forks (`benchKeepsDone`).
  if (opts.doneNotKept) process.env.POSTPONE_BENCH_DONE = 'not-kept';
  const base = opts.quick ? QUICK : FULL;
  const sizes = opts.rounds ? { ...base, rounds: opts.rounds } : base;
  // `schedule` (apps/bench/src/schedule) writes a report fragment of its own: run unless left out.
  const withoutSchedule = (names: string[] | undefined) => names?.filter((n) => n !== 'schedule');
  const scheduleWanted = (opts.only === undefined || opts.only.includes('schedule')) && !opts.skip?.includes('schedule');
  const only = withoutSchedule(opts.only);
  const sections = only !== undefined && only.length === 0 ? [] : selectSections(only, withoutSchedule(opts.skip));
  const progress = createProgress(opts.progress);
  const db = await startBenchDatabase();
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    progress.stop();
    process.stderr.write(`\n${signal}: stopping the database\n`);
    void db.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const measured = await runBench({ db, mode: opts.quick ? 'quick' : 'full', sizes, sections, systems: opts.systems ?? [...SYSTEM_NAMES], progress });
    if (scheduleWanted) {
      progress.log('schedule: schedules/s with notices near / each / coalesced / off');
      const scheduleOptions = { ...SCHEDULE_RATE_DEFAULTS, durationMs: opts.quick ? 3_000 : SCHEDULE_RATE_DEFAULTS.durationMs, rounds: opts.quick ? 1 : SCHEDULE_RATE_DEFAULTS.rounds };
      const runs = await runScheduleRate({ ...scheduleOptions, url: db.url });
      writeScheduleFragment(join(out, 'fragments', 'schedule.md'), scheduleFragment(scheduleOptions, runs));
    }
    progress.stop();
    const results = opts.merge ? mergeResults(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchResults, measured) : measured;
    const report = await writeReport(results, out);
    console.log(`report: ${report}`);
    for (const note of results.meta.notes) console.log(`note: ${note}`);
    return results.meta.notes.some((n) => n.startsWith('section')) ? 1 : 0;
  } finally {
    progress.stop();
    await db.stop();
  }
}

main(process.argv).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    process.exit(1);
  },
);
