/**
 * pg-boss 12 in the bench (Node.js ≥ 22: imported only inside the bench's Node.js 24 processes; the
 * library is loaded lazily, so this module's settings and `remaining` load anywhere).
 *
 * In pg-boss 12 a queue must exist before jobs are sent (`createQueue`), and one `work()` call runs
 * `localConcurrency` independent fetch loops, each fetching up to `batchSize` jobs and calling the
 * handler once with the batch. Between fetches a loop waits `pollingIntervalSeconds` (default 2,
 * documented minimum 0.5) — except with `burstWhenBatchFull` (new in 12): while a fetch comes back
 * full, the loop fetches again at once (types.d.ts `JobPollingOptions`, src/manager.js `work`).
 */
import type { PgBoss as PgBossClass } from 'pg-boss';
import type pg from 'pg';
import { BENCH_TASK, type BenchPayload, type ChildConfig } from '../protocol.js';
import { latenessOf, type BenchTaskSpec, type PreparedWorker, type SystemAdmin } from './system.js';

/** `batchSize` of the tuned settings. */
export const PG_BOSS_TUNED_BATCH = 50;

interface WorkSettings {
  readonly batchSize?: number;
  readonly pollingIntervalSeconds?: number;
  readonly burstWhenBatchFull?: boolean;
}

const WORK: Record<string, WorkSettings> = {
  default: {},
  tuned: { batchSize: PG_BOSS_TUNED_BATCH, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true },
};

async function newBoss(options: ConstructorParameters<typeof PgBossClass>[0]): Promise<PgBossClass> {
  const { PgBoss } = await import('pg-boss');
  const boss = new PgBoss(options);
  boss.on('error', () => {});
  return boss;
}

export const pgBossAdmin: SystemAdmin = {
  system: 'pg-boss',
  settings: [
    { name: 'default', description: 'one `work()` per process with `localConcurrency` 10 and the defaults: `batchSize` 1, `pollingIntervalSeconds` 2' },
    {
      name: 'tuned',
      description: `one \`work()\` per process, \`localConcurrency\` 10, \`batchSize\` ${PG_BOSS_TUNED_BATCH}, \`pollingIntervalSeconds\` 0.5 (the documented minimum), \`burstWhenBatchFull\` true (a loop whose fetch came back full fetches again at once)`,
    },
  ],
  async migrate(url) {
    const boss = await newBoss({ connectionString: url, supervise: false, schedule: false, max: 2 });
    await boss.start();
    await boss.createQueue(BENCH_TASK);
    await boss.stop({ graceful: false });
  },
  async enqueue(url, tasks: readonly BenchTaskSpec[]) {
    const boss = await newBoss({ connectionString: url, supervise: false, schedule: false, migrate: false, max: 2 });
    await boss.start();
    try {
      await boss.insert(
        BENCH_TASK,
        tasks.map((t) => (t.dueMs === undefined ? { data: {} } : { data: { dueMs: t.dueMs }, startAfter: new Date(t.dueMs) })),
      );
    } finally {
      await boss.stop({ graceful: false });
    }
  },
  async remaining(client: pg.Client) {
    const { rows } = await client.query<{ n: number }>(`select count(*)::int as n from pgboss.job where name = $1 and state <> 'completed'`, [BENCH_TASK]);
    return rows[0]?.n ?? 0;
  },
};

/** Starts pg-boss (connections, supervision) in `prepare`; adds the `work()` on `start`. */
export async function preparePgBossWorker(config: ChildConfig): Promise<PreparedWorker> {
  const work = WORK[config.setting];
  if (!work) throw new Error(`unknown pg-boss setting ${config.setting}`);
  const boss = await newBoss({ connectionString: config.connectionString, migrate: false });
  await boss.start();
  return {
    async start(onRan) {
      await boss.work<BenchPayload>(BENCH_TASK, { ...work, localConcurrency: config.concurrency }, async (jobs) => {
        for (const job of jobs) onRan(latenessOf(job.data));
      });
      return {
        async stop() {
          await boss.stop({ graceful: true, timeout: 5_000 });
        },
      };
    },
  };
}
