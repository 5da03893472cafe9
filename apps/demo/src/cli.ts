/**
 * The demo's command line (commander 14). Every number is checked; a bad flag exits 2 with a message.
 */
import { Command, InvalidArgumentError } from 'commander';
import type { DemoOptions, DiscoveryMode } from './config.js';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function int(min: number, max: number): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`expected a whole number ${min}..${max}`);
    return n;
  };
}

const MODES: readonly DiscoveryMode[] = ['poll', 'hybrid'];

function mode(value: string): DiscoveryMode {
  if (!(MODES as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${MODES.join(', ')}`);
  return value as DiscoveryMode;
}

function level(value: string): string {
  if (!LEVELS.includes(value)) throw new InvalidArgumentError(`expected one of ${LEVELS.join(', ')}`);
  return value;
}

interface RawFlags {
  tasks: number;
  workers: number;
  concurrency: number;
  leaseMs: number;
  renewMs: number;
  discovery: DiscoveryMode;
  pollMs: number;
  fallbackMs: number;
  reclaimMs: number;
  spreadMs: number;
  firstDueMs: number;
  workMinMs: number;
  workMaxMs: number;
  kill: boolean;
  killAfterMs: number;
  restart: boolean;
  deadlineMs: number;
  logLevel: string;
  progress: boolean;
  reportJson?: string;
  keepSchema: boolean;
  groups: number;
}

/**
 * Parses `argv` (as `process.argv`).
 * @throws commander's error (exit code 2) for a bad flag, after printing it
 */
export function parseDemoOptions(argv: readonly string[]): DemoOptions {
  const program = new Command()
    .name('postpone-demo')
    .description(
      'Three worker processes run delayed "expire reservation" tasks on PostgreSQL; one is killed with SIGKILL mid-task; ' +
        'the others reclaim its tasks after the lease. Uses DATABASE_URL, or starts an embedded PostgreSQL.',
    )
    .option('--tasks <n>', 'tasks (and reservations) to schedule', int(1, 100_000), 300)
    .option('--workers <n>', 'worker processes', int(1, 32), 3)
    .option('--concurrency <n>', 'handler slots per worker', int(1, 1_000), 10)
    .option('--lease-ms <ms>', 'lease length', int(50, 600_000), 1_000)
    .option('--renew-ms <ms>', 'lease renewal period (below the lease)', int(10, 600_000), 300)
    .option('--discovery <mode>', 'how workers find due tasks: poll (claim every --poll-ms) or hybrid (timing wheel + LISTEN/NOTIFY)', mode, 'poll')
    .option('--poll-ms <ms>', 'poll mode: claim poll interval', int(1, 60_000), 50)
    .option('--fallback-ms <ms>', 'hybrid mode: fallback re-read of the store', int(100, 600_000), 2_000)
    .option('--reclaim-ms <ms>', 'expired-lease reclaim period', int(1, 600_000), 200)
    .option('--spread-ms <ms>', 'due times spread uniformly over [first-due, first-due + spread)', int(0, 3_600_000), 3_000)
    .option('--first-due-ms <ms>', 'earliest due time after scheduling (tasks due before their scheduling commits start late)', int(0, 3_600_000), 0)
    .option('--work-min-ms <ms>', 'simulated work per task, minimum', int(0, 60_000), 20)
    .option('--work-max-ms <ms>', 'simulated work per task, maximum', int(0, 60_000), 150)
    .option('--no-kill', 'do not kill a worker')
    .option('--kill-after-ms <ms>', 'kill a worker no earlier than this after scheduling', int(0, 3_600_000), 1_000)
    .option('--restart', 'start a new worker process in place of the killed one', false)
    .option('--deadline-ms <ms>', 'give up (FAIL) after this long in all', int(1_000, 3_600_000), 60_000)
    .option('--log-level <level>', `worker log level (${LEVELS.join(', ')}), JSON lines on stdout`, level, 'silent')
    .option('--no-progress', 'no progress bar')
    .option('--report-json <file>', 'also write the report as JSON to this file')
    .option('--keep-schema', 'with DATABASE_URL: keep the demo schema afterwards', false)
    .option('--groups <n>', 'shard groups: above 1, one schema per group behind the sharded front (createShardedStore; on Citus each a shard group)', int(1, 16), 1)
    .exitOverride()
    .configureOutput({ writeErr: (text) => process.stderr.write(text) });
  program.parse([...argv]);
  const f = program.opts<RawFlags>();
  const fail = (message: string): never => program.error(`error: ${message}`, { exitCode: 2, code: 'postpone.demo.invalid' });
  if (f.renewMs >= f.leaseMs) fail(`--renew-ms (${f.renewMs}) must be below --lease-ms (${f.leaseMs})`);
  if (f.workMinMs > f.workMaxMs) fail(`--work-min-ms (${f.workMinMs}) must not exceed --work-max-ms (${f.workMaxMs})`);
  if (f.restart && !f.kill) fail('--restart needs a kill (drop --no-kill)');
  if (f.kill && f.workers < 2) fail('--kill needs at least 2 workers (someone must reclaim); add --no-kill or more --workers');
  return {
    tasks: f.tasks,
    workers: f.workers,
    concurrency: f.concurrency,
    leaseMs: f.leaseMs,
    renewMs: f.renewMs,
    discovery: f.discovery,
    pollMs: f.pollMs,
    fallbackMs: f.fallbackMs,
    reclaimMs: f.reclaimMs,
    spreadMs: f.spreadMs,
    firstDueMs: f.firstDueMs,
    workMinMs: f.workMinMs,
    workMaxMs: f.workMaxMs,
    kill: f.kill,
    killAfterMs: f.killAfterMs,
    restart: f.restart,
    deadlineMs: f.deadlineMs,
    logLevel: f.logLevel,
    progress: f.progress,
    reportJson: f.reportJson,
    keepSchema: f.keepSchema,
    groups: f.groups,
  };
}
