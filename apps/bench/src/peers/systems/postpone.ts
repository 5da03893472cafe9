/**
 * Postpone in the bench: the `pg` store (`@postpone/postgres/pg`) and the worker runtime
 * (`@postpone/worker`), one worker per process with `concurrency` 10, a no-op handler. Every task
 * completes through the store's fenced complete — the move to history in one statement, no effect
 * row since migration 13 (docs/contract.md#promise-3, #promise-4) — so the bench measures the product with its guarantees on.
 */
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
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

/**
 * The lateness probe (`POSTPONE_BENCH_LATENESS_PROBE=file`): every Postpone worker process appends
 * one JSON line per task that carries a due time — `due` (ms, the bench's wall clock), `claimedAt`
 * (the database's now while the claim ran), `start` (the handler's `Date.now()`) — and one line at
 * stop with its event-loop delay (p50, p99, max in ms, `monitorEventLoopDelay` at 1 ms resolution).
 * The embedded server shares the machine's clock, so `claimedAt − due` is the wait before the claim
 * ran (timer, gathering, pool, server queue) and `start − claimedAt` the claim's run and the way back.
 */
const LATENESS_PROBE = process.env.POSTPONE_BENCH_LATENESS_PROBE;

/** Creates the store and opens one connection in `prepare`; creates and starts the worker on `start`. */
export async function preparePostponeWorker(config: ChildConfig): Promise<PreparedWorker> {
  const settings = SETTINGS[config.setting];
  if (!settings) throw new Error(`unknown postpone setting ${config.setting}`);
  const store = createPgStore({ connectionString: config.connectionString, schema: POSTPONE_SCHEMA });
  await store.now();
  return {
    async start(onRan) {
      const loopDelay = LATENESS_PROBE === undefined ? undefined : monitorEventLoopDelay({ resolution: 1 });
      loopDelay?.enable();
      const worker = createWorker({
        store,
        id: config.workerId,
        concurrency: config.concurrency,
        ...settings,
        // `--done-not-kept` turns every setting to the fenced delete alone.
        ...(benchKeepsDone() ? {} : { keepDone: false }),
        handlers: {
          [BENCH_TASK]: async (task) => {
            const lateness = latenessOf(task.payload);
            onRan(lateness);
            if (LATENESS_PROBE !== undefined && lateness !== undefined) {
              const due = (task.payload as { dueMs: number }).dueMs;
              appendFileSync(LATENESS_PROBE, `${JSON.stringify({ setting: config.setting, w: config.workerId, due, claimedAt: task.claimedAt.getTime(), start: due + lateness })}\n`);
            }
          },
        },
      });
      worker.start();
      return {
        async stop() {
          if (loopDelay !== undefined && LATENESS_PROBE !== undefined) {
            loopDelay.disable();
            const ms = (ns: number) => Math.round(ns / 1e4) / 100;
            appendFileSync(LATENESS_PROBE, `${JSON.stringify({ setting: config.setting, w: config.workerId, loopDelay: { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) } })}\n`);
          }
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
