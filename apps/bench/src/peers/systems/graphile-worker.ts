/**
 * graphile-worker 0.18 in the bench (Node.js ≥ 22: imported only inside the bench's Node.js 24
 * processes; the library is loaded lazily, so this module's settings and `remaining` load anywhere).
 *
 * One `run()` per process with `concurrency` 10. Documented defaults: `pollInterval` 2000 ms (for
 * jobs due in the future; new due jobs arrive by LISTEN/NOTIFY), no local queue, no batching of
 * completions. The tuned setting is the batching of the performance page
 * (https://worker.graphile.org/docs/performance#batching): `localQueue.size` 50,
 * `completeJobBatchDelay` 0, `failJobBatchDelay` 0, plus `pollInterval` 100 ms for jobs due later.
 */
import type { Logger } from 'graphile-worker';
import pg from 'pg';
import { BENCH_TASK, type ChildConfig } from '../protocol.js';
import { latenessOf, type BenchTaskSpec, type PreparedWorker, type SystemAdmin } from './system.js';

const lib = async () => await import('graphile-worker');
let silentLogger: Logger | undefined;
const silent = async (): Promise<Logger> => (silentLogger ??= new (await lib()).Logger(() => () => {}));

/** The `preset.worker` and `pollInterval` of each setting. */
const SETTINGS: Record<string, { pollInterval?: number; worker?: Record<string, unknown> }> = {
  default: {},
  tuned: { pollInterval: 100, worker: { localQueue: { size: 50 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
};

export const graphileAdmin: SystemAdmin = {
  system: 'graphile-worker',
  settings: [
    { name: 'default', description: '`run()` with `concurrency` 10 and the defaults: `pollInterval` 2000 ms, no local queue, no completion batching' },
    {
      name: 'tuned',
      description: '`concurrency` 10, `preset.worker.localQueue.size` 50, `completeJobBatchDelay` 0, `failJobBatchDelay` 0, `pollInterval` 100 ms',
    },
  ],
  async migrate(url) {
    await (await lib()).runMigrations({ connectionString: url, logger: await silent() });
  },
  async enqueue(url, tasks: readonly BenchTaskSpec[]) {
    const utils = await (await lib()).makeWorkerUtils({ connectionString: url, logger: await silent() });
    try {
      await utils.addJobs(
        tasks.map((t) =>
          t.dueMs === undefined ? { identifier: BENCH_TASK, payload: {} } : { identifier: BENCH_TASK, payload: { dueMs: t.dueMs }, runAt: new Date(t.dueMs) },
        ),
      );
    } finally {
      await utils.release();
    }
  },
  async remaining(client: pg.Client) {
    const { rows } = await client.query<{ n: number }>('select count(*)::int as n from graphile_worker._private_jobs');
    return rows[0]?.n ?? 0;
  },
};

/** Opens and warms the pool in `prepare` (graphile-worker's suggested size: concurrency + 2); `run()` on `start`. */
export async function prepareGraphileWorker(config: ChildConfig): Promise<PreparedWorker> {
  const setting = SETTINGS[config.setting];
  if (!setting) throw new Error(`unknown graphile-worker setting ${config.setting}`);
  const pgPool = new pg.Pool({ connectionString: config.connectionString, max: Math.max(10, config.concurrency + 2) });
  pgPool.on('error', () => {});
  const warm = await pgPool.connect();
  warm.release();
  return {
    async start(onRan) {
      const runner = await (await lib()).run({
        pgPool,
        concurrency: config.concurrency,
        noHandleSignals: true,
        logger: await silent(),
        ...(setting.pollInterval === undefined ? {} : { pollInterval: setting.pollInterval }),
        ...(setting.worker ? { preset: { worker: setting.worker } } : {}),
        taskList: {
          [BENCH_TASK]: async (payload) => {
            onRan(latenessOf(payload));
          },
        },
      });
      return {
        async stop() {
          try {
            await runner.stop();
          } finally {
            await pgPool.end();
          }
        },
      };
    },
  };
}
