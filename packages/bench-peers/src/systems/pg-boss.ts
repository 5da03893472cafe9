/**
 * pg-boss 10.4.2 in the bench.
 *
 * In pg-boss 10 a worker is one `work()` call: a loop that fetches up to `batchSize` jobs, runs the
 * handler once on the batch, and then waits `pollingIntervalSeconds` minus the time spent before the
 * next fetch (src/worker.js), with or without jobs. Concurrency 10 is therefore ten `work()` calls.
 * Documented defaults: `batchSize` 1, `pollingIntervalSeconds` 2; the documented minimum interval is
 * 0.5 s (src/attorney.js `MIN_POLLING_INTERVAL_MS`).
 */
import PgBoss from 'pg-boss';
import type pg from 'pg';
import { BENCH_TASK, type BenchPayload, type ChildConfig } from '../protocol.js';
import { latenessOf, type BenchTaskSpec, type PreparedWorker, type SystemAdmin } from './system.js';

/** `batchSize` of the tuned setting. */
export const PG_BOSS_TUNED_BATCH = 50;

interface WorkSettings {
  readonly batchSize?: number;
  readonly pollingIntervalSeconds?: number;
}

const WORK: Record<string, WorkSettings> = {
  default: {},
  tuned: { batchSize: PG_BOSS_TUNED_BATCH, pollingIntervalSeconds: 0.5 },
};

const quiet = (boss: PgBoss) => boss.on('error', () => {});

export const pgBossAdmin: SystemAdmin = {
  system: 'pg-boss',
  settings: [
    { name: 'default', description: '10 × `work()` per process with the defaults: `batchSize` 1, `pollingIntervalSeconds` 2' },
    {
      name: 'tuned',
      description: `10 × \`work()\` per process, \`batchSize\` ${PG_BOSS_TUNED_BATCH}, \`pollingIntervalSeconds\` 0.5 (the documented minimum). A worker waits the interval after every fetch, so one process tops out at 10 × ${PG_BOSS_TUNED_BATCH} / 0.5 s = ${(10 * PG_BOSS_TUNED_BATCH) / 0.5} tasks/s; a larger \`batchSize\` raises that bound`,
    },
  ],
  async migrate(url) {
    const boss = quiet(new PgBoss({ connectionString: url, supervise: false, schedule: false, max: 2 }));
    await boss.start();
    await boss.createQueue(BENCH_TASK);
    await boss.stop({ graceful: false, wait: true });
  },
  async enqueue(url, tasks: readonly BenchTaskSpec[]) {
    const boss = quiet(new PgBoss({ connectionString: url, supervise: false, schedule: false, migrate: false, max: 2 }));
    await boss.start();
    try {
      await boss.insert(
        tasks.map((t) => ({ name: BENCH_TASK, data: t.dueMs === undefined ? {} : { dueMs: t.dueMs }, ...(t.dueMs === undefined ? {} : { startAfter: new Date(t.dueMs) }) })),
      );
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
  },
  async remaining(client: pg.Client) {
    const { rows } = await client.query<{ n: number }>(`select count(*)::int as n from pgboss.job where name = $1 and state <> 'completed'`, [BENCH_TASK]);
    return rows[0]?.n ?? 0;
  },
};

/** Starts pg-boss (connections, supervision) in `prepare`; adds the ten `work()` loops on `start`. */
export async function preparePgBossWorker(config: ChildConfig): Promise<PreparedWorker> {
  const work = WORK[config.setting];
  if (!work) throw new Error(`unknown pg-boss setting ${config.setting}`);
  const boss = quiet(new PgBoss({ connectionString: config.connectionString, migrate: false }));
  await boss.start();
  return {
    async start(onRan) {
      for (let i = 0; i < config.concurrency; i++) {
        await boss.work<BenchPayload>(BENCH_TASK, { ...work }, async (jobs) => {
          for (const job of jobs) onRan(latenessOf(job.data));
        });
      }
      return {
        async stop() {
          await boss.stop({ graceful: true, wait: true, timeout: 5_000 });
        },
      };
    },
  };
}
