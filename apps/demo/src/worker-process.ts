/**
 * One demo worker process (forked by main.ts): a Postpone worker on PostgreSQL that expires
 * reservations, reporting its events to the parent over IPC. Stops gracefully on the parent's
 * `stop` message, on SIGTERM/SIGINT, or when the parent goes away. Its logs (`--log-level`) go to stdout.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { type ClaimedTask, overrideStore, type Store } from '@postpone/core';
import { createShardedStore, shardOfId } from '@postpone/postgres';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import { createWorker, type Worker, type WorkerOptions } from '@postpone/worker';
import pg from 'pg';
import { EXPIRE_KIND, type ExpirePayload, WORKER_CONFIG_ENV, type WorkerProcessConfig } from './config.js';
import { isParentMessage, type WorkerMessage } from './messages.js';
import { expireReservation, logAttempt } from './reservations.js';

const config = JSON.parse(process.env[WORKER_CONFIG_ENV] ?? 'null') as WorkerProcessConfig | null;
if (config === null) {
  process.stderr.write(`worker-process: ${WORKER_CONFIG_ENV} is not set; this script is started by the demo\n`);
  process.exit(2);
}
const { workerId } = config;
const schemas = config.schemas ?? [config.schema];
/** The group schema holding a task's reservation and effect rows (the only schema without groups). */
const schemaOf = (taskId: string): string => (schemas.length === 1 ? config.schema : (schemas[shardOfId(taskId)] as string));

function send(message: WorkerMessage): void {
  if (process.connected) process.send?.(message);
}

// One pool shared by the groups' stores: the worker needs `concurrency + 3` plus one listening
// connection per group (docs/sharding.md, "A worker on the front"): `concurrency + 4` with one schema.
const pool = new pg.Pool({ connectionString: config.url, max: config.concurrency + 3 + schemas.length });
pool.on('error', () => {}); // an idle client's dead connection: the pool drops it
const groupStores = schemas.map((schema) => createPgStore({ pool, schema }));
const store: Store<PgTx> = groupStores.length === 1 ? (groupStores[0] as Store<PgTx>) : createShardedStore({ stores: groupStores });

/** The store, with each claim and near-task read reported to the parent (the demo counts discovery's queries). */
function reportingQueries<Tx>(inner: Store<Tx>): Store<Tx> {
  const report = (op: 'claim' | 'peek', tasks: number) => send({ type: 'query', workerId, op, tasks });
  return overrideStore(inner, {
    claim: async (params) => {
      const tasks = await inner.claim(params);
      report('claim', tasks.length);
      return tasks;
    },
    peekDue: async (params) => {
      const answer = await inner.peekDue(params);
      report('peek', answer.tasks.length);
      return answer;
    },
  });
}

const worker: Worker = createWorker({
  store: reportingQueries(store),
  id: workerId,
  discovery: config.discovery,
  hybrid: { fallbackPollMs: config.fallbackMs },
  concurrency: config.concurrency,
  leaseMs: config.leaseMs,
  renewEveryMs: config.renewMs,
  pollIntervalMs: config.pollMs,
  reclaimEveryMs: config.reclaimMs,
  logLevel: config.logLevel as WorkerOptions<unknown>['logLevel'],
  handlers: {
    [EXPIRE_KIND]: async (task: ClaimedTask<ExpirePayload>, ctx) => {
      const schema = schemaOf(task.id);
      await logAttempt(pool, schema, task.id, ctx.attempt, ctx.workerId);
      const workMs = config.workMinMs + Math.floor(Math.random() * (config.workMaxMs - config.workMinMs + 1));
      await delay(workMs, undefined, { signal: ctx.signal });
      ctx.onCompleteTx((tx) => expireReservation(tx, schema, task.payload.reservationId, { taskId: task.id, attempt: ctx.attempt, worker: ctx.workerId }));
      return { reservationId: task.payload.reservationId, workMs };
    },
  },
});

worker.on('claimed', ({ task }) =>
  send({ type: 'claimed', workerId, taskId: task.id, attempt: task.attempt, dueAt: task.dueAt.toISOString(), claimedAt: task.claimedAt.toISOString() }),
);
worker.on('completed', ({ task, outcome }) => send({ type: 'finished', workerId, taskId: task.id, attempt: task.attempt, outcome }));
worker.on('failed', ({ task, result }) => send({ type: 'finished', workerId, taskId: task.id, attempt: task.attempt, outcome: `FAILED_${result.outcome}` }));
worker.on('released', ({ task, outcome }) => send({ type: 'finished', workerId, taskId: task.id, attempt: task.attempt, outcome: `RELEASED_${outcome}` }));
worker.on('reclaimed', ({ task }) => send({ type: 'reclaimed', workerId, taskId: task.id, attempt: task.attempt, outcome: task.outcome }));
worker.on('leaseLost', ({ task, reason }) => send({ type: 'leaseLost', workerId, taskId: task.id, attempt: task.attempt, reason }));
worker.on('error', ({ error, operation }) => send({ type: 'error', workerId, operation, message: error instanceof Error ? error.message : String(error) }));

const reportCauses = () => {
  const { claimsByCause } = worker.discovery;
  if (claimsByCause !== undefined) send({ type: 'causes', workerId, claimsByCause });
};
setInterval(reportCauses, 250).unref();

let exiting = false;
async function shutdown(code: number): Promise<never> {
  if (!exiting) {
    exiting = true;
    await worker.stop({ timeoutMs: 2_000 });
    reportCauses();
    await store.close();
    await pool.end();
  }
  process.exit(code);
}

worker.installSignalHandlers({ onStopped: () => shutdown(0) });
process.on('message', (message: unknown) => {
  if (isParentMessage(message) && message.type === 'stop') void shutdown(0);
});
process.on('disconnect', () => void shutdown(0));

worker.start();
send({ type: 'ready', workerId, pid: process.pid });
