/**
 * Entry point of a bench worker process (forked by {@link WorkerProcesses} with an IPC channel).
 * Reads its {@link ChildConfig} from the `POSTPONE_BENCH_CHILD` environment variable and follows
 * the protocol of `protocol.ts`. Exits when told to stop, when the parent goes away, or on an error
 * (after reporting it).
 */
import { type ChildConfig, type ChildMessage, type ParentMessage, REPORT_INTERVAL_MS } from './protocol.js';
import { loadPrepare } from './systems/registry.js';
import type { RunningWorker } from './systems/system.js';

function send(message: ChildMessage): void {
  process.send?.(message);
}

function fail(error: unknown): never {
  send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}

async function main(): Promise<void> {
  const raw = process.env.POSTPONE_BENCH_CHILD;
  if (!raw || !process.send) throw new Error('bench child: needs POSTPONE_BENCH_CHILD and an IPC channel');
  const config = JSON.parse(raw) as ChildConfig;
  const prepare = await loadPrepare(config.system);
  const prepared = await prepare(config);

  let count = 0;
  let lateness: number[] = [];
  const flush = () => {
    if (count === 0) return;
    send({ type: 'ran', count, lateness });
    count = 0;
    lateness = [];
  };
  const timer = setInterval(flush, REPORT_INTERVAL_MS);
  let starting: Promise<RunningWorker> | undefined;
  let stopping = false;
  let cpuAtGo: NodeJS.CpuUsage | undefined;

  const stop = async () => {
    if (stopping) return;
    stopping = true;
    try {
      const worker = await starting?.catch(() => undefined);
      await worker?.stop();
    } finally {
      clearInterval(timer);
      flush();
      const cpu = process.cpuUsage(cpuAtGo);
      send({ type: 'stopped', cpuMs: cpuAtGo ? (cpu.user + cpu.system) / 1000 : 0 });
      process.disconnect?.();
      setTimeout(() => process.exit(0), 50).unref();
    }
  };

  process.on('message', (message: ParentMessage) => {
    if (message.type === 'go' && !starting && !stopping) {
      cpuAtGo = process.cpuUsage();
      starting = prepared.start((ms) => {
        count++;
        if (ms !== undefined) lateness.push(ms);
      });
      starting.then(() => send({ type: 'started' }), fail);
    } else if (message.type === 'stop') {
      stop().catch(fail);
    }
  });
  process.on('disconnect', () => {
    if (!stopping) void stop().catch(() => process.exit(1));
  });
  send({ type: 'ready' });
}

process.on('unhandledRejection', fail);
main().catch(fail);
