/**
 * Postpone in the bench: the `pg` store (`@postpone/postgres/pg`) and the worker runtime
 * (`@postpone/worker`), one worker per process with `concurrency` 10, a no-op handler. Every task
 * completes through the store's fenced complete — the move to history in one statement, no effect
 * row since migration 13 (docs/contract.md#promise-3, #promise-4) — so the bench measures the product with its guarantees on.
 */
import { statements } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import { createWorker, HYBRID_DEFAULTS, WORKER_DEFAULTS, type WorkerOptions } from '@postpone/worker';
import type pg from 'pg';
import { BENCH_TASK, type ChildConfig } from '../protocol.js';
import { latenessOf, type BenchTaskSpec, type PreparedWorker, type SystemAdmin } from './system.js';

/**
 * Whether the bench runs Postpone with DONE kept (the default) or not kept (`pnpm bench
 * --done-not-kept`, which sets `POSTPONE_BENCH_DONE=not-kept` for the bench and every process it
 * forks): the worker's `keepDone: false` and the SQL-only ceiling's drop statement
 * (docs/contract.md#done-not-kept).
 */
export function benchKeepsDone(): boolean {
  return process.env.POSTPONE_BENCH_DONE !== 'not-kept';
}

/** Schema of the bench's Postpone tables (the store's default). */
export const POSTPONE_SCHEMA = 'postpone';
/** Rows per `scheduleMany` call when enqueuing (one statement each). */
const ENQUEUE_CHUNK = 10_000;

type WorkerSettings = Pick<WorkerOptions<unknown>, 'discovery' | 'pollIntervalMs' | 'hybrid' | 'prefetch' | 'keepDone'>;

const TUNED: WorkerSettings = { discovery: 'poll', pollIntervalMs: 50, prefetch: 90 };

const SETTINGS: Record<string, WorkerSettings> = {
  default: {},
  tuned: TUNED,
  hybrid: { discovery: 'hybrid' },
  // The record graphile-worker keeps: a completed task is deleted (docs/contract.md#done-not-kept).
  'tuned-drop': { ...TUNED, keepDone: false },
};

const defaults =
  WORKER_DEFAULTS.discovery === 'hybrid'
    ? `hybrid discovery, fallback re-read every \`hybrid.fallbackPollMs\` ${HYBRID_DEFAULTS.fallbackPollMs} ms`
    : `polling every \`pollIntervalMs\` ${WORKER_DEFAULTS.pollIntervalMs} ms`;

export const postponeAdmin: SystemAdmin = {
  system: 'postpone',
  settings: [
    { name: 'default', description: `\`createWorker\` with \`concurrency\` 10 and the defaults: ${defaults}, \`leaseMs\` ${WORKER_DEFAULTS.leaseMs}` },
    { name: 'tuned', description: '`concurrency` 10, `prefetch` 90 (a local queue: claims of up to 100 tasks), `discovery` `poll`, polling every `pollIntervalMs` 50 ms' },
    {
      name: 'hybrid',
      description: `\`concurrency\` 10, \`discovery\` \`hybrid\` with its defaults: a timing wheel (${HYBRID_DEFAULTS.tickMs} ms tick, ${HYBRID_DEFAULTS.levels} × ${HYBRID_DEFAULTS.slotsPerLevel} slots) loaded from the store, woken by LISTEN/NOTIFY, fallback re-read every \`hybrid.fallbackPollMs\` ${HYBRID_DEFAULTS.fallbackPollMs} ms`,
    },
    {
      name: 'tuned-drop',
      description: 'as `tuned`, with DONE not kept (`keepDone: false`: the fenced completion is one delete, no history row, as graphile-worker deletes a completed job); throughput only, since it finds tasks as `tuned` does',
      throughputOnly: true,
    },
  ],
  async migrate(url) {
    const store = createPgStore({ connectionString: url });
    try {
      await store.migrate();
    } finally {
      await store.close();
    }
  },
  async enqueue(url, tasks: readonly BenchTaskSpec[]) {
    const store = createPgStore({ connectionString: url });
    try {
      for (let i = 0; i < tasks.length; i += ENQUEUE_CHUNK) {
        await store.scheduleMany(
          tasks.slice(i, i + ENQUEUE_CHUNK).map((t) =>
            t.dueMs === undefined ? { kind: BENCH_TASK, payload: {} } : { kind: BENCH_TASK, payload: { dueMs: t.dueMs }, runAt: new Date(t.dueMs) },
          ),
        );
      }
    } finally {
      await store.close();
    }
  },
  async remaining(client: pg.Client) {
    const { rows } = await client.query<{ state: string; n: number }>(statements(POSTPONE_SCHEMA).taskCountByState);
    return rows.filter((r) => r.state !== 'DONE').reduce((sum, r) => sum + Number(r.n), 0);
  },
};

/** Creates the store and opens one connection in `prepare`; creates and starts the worker on `start`. */
export async function preparePostponeWorker(config: ChildConfig): Promise<PreparedWorker> {
  const settings = SETTINGS[config.setting];
  if (!settings) throw new Error(`unknown postpone setting ${config.setting}`);
  const store = createPgStore({ connectionString: config.connectionString, schema: POSTPONE_SCHEMA });
  await store.now();
  return {
    async start(onRan) {
      const worker = createWorker({
        store,
        id: config.workerId,
        concurrency: config.concurrency,
        ...settings,
        // `--done-not-kept` turns every setting to the fenced delete alone.
        ...(benchKeepsDone() ? {} : { keepDone: false }),
        handlers: {
          [BENCH_TASK]: async (task) => {
            onRan(latenessOf(task.payload));
          },
        },
      });
      worker.start();
      return {
        async stop() {
          try {
            await worker.stop({ timeoutMs: 5_000 });
          } finally {
            await store.close();
          }
        },
      };
    },
  };
}
