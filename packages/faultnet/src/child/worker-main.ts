/**
 * Entry of a harness child process (started by `spawnHarnessChild` with `child_process.fork`).
 *
 * Reads its {@link ChildConfig} from `POSTPONE_HARNESS_CONFIG`, opens a pool and the real store,
 * prepares its runner (the real worker, or a claim loop), reports `ready`, starts at once or on
 * `start`, and on `stop` ends gracefully, reports `stopped` and exits 0. Any failure is reported as
 * an `error` event and ends the process with exit code 1.
 */
import { ParentChannel } from './channel.js';
import { openResources } from './resources.js';
import { prepareClaimLoop } from './run-claim-loop.js';
import { prepareMigrate } from './run-migrate.js';
import { prepareScheduleLoop } from './run-schedule-loop.js';
import { prepareWorker } from './run-worker.js';

const channel = new ParentChannel();

async function fatal(error: unknown): Promise<never> {
  await channel.emit({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}

process.on('unhandledRejection', (error) => void fatal(`unhandledRejection: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`));
// An uncaught exception (e.g. an unhandled 'error' event of a connection) is reported before the exit, never hidden.
process.on('uncaughtException', (error) => void fatal(`uncaughtException: ${error.stack ?? error.message}`));

async function main(): Promise<void> {
  const config = ParentChannel.config();
  const resources = await openResources(config);
  const runner =
    config.run.mode === 'worker'
      ? await prepareWorker(config.run, resources, channel)
      : config.run.mode === 'migrate'
        ? prepareMigrate(config, channel)
        : config.run.mode === 'scheduleLoop'
          ? prepareScheduleLoop(config.run.loop, resources, channel)
          : await prepareClaimLoop(config.run.loop, resources, channel);
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    runner.start();
    void channel.emit({ type: 'started' });
  };
  channel.onControl((control) => {
    if (control.type === 'start') start();
    if (control.type === 'stop') {
      void (async () => {
        await runner.stop();
        await resources.close();
        await channel.emit({ type: 'stopped', wallMs: Date.now() });
        process.exit(0);
      })().catch(fatal);
    }
  });
  await channel.emit({ type: 'ready', pid: process.pid });
  if (!config.waitForStart) start();
}

main().catch(fatal);
