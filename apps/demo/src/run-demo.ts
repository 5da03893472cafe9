/**
 * The demo, start to end: a database (DATABASE_URL or embedded), a fresh schema, N worker processes
 * (polling or hybrid discovery), tasks scheduled in one transaction with their reservations, one
 * worker SIGKILLed while it holds tasks (with `--restart`, a new worker process started in its
 * place), a wait (bounded by the deadline) until every task is terminal, a graceful stop of the
 * rest, and the report. Every exit path kills the children and stops the embedded server.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { resolveDatabase, dropSchema, uniqueSchemaName, type RunningDatabase } from '@postpone/embedded';
import type { ScheduleInput } from '@postpone/core';
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import { type DemoOptions, EXPIRE_KIND, type ExpirePayload, type WorkerProcessConfig } from './config.js';
import { Fleet, type FleetMember } from './fleet.js';
import { createProgress, type Progress } from './progress.js';
import { buildReport, type DemoReport, type KillRecord, readDatabaseFacts } from './report.js';
import { insertReservations, linkTasks, reservationDdl } from './reservations.js';
import { EventTracker } from './tracker.js';

/** How often the demo reads the task counts (and checks whether to kill). */
const WATCH_EVERY_MS = 50;
const READY_TIMEOUT_MS = 30_000;
const KILL_EXIT_TIMEOUT_MS = 5_000;
const STOP_TIMEOUT_MS = 10_000;

export class DemoInterrupted extends Error {
  constructor() {
    super('interrupted');
    this.name = 'DemoInterrupted';
  }
}

export async function runDemo(options: DemoOptions, interrupt: AbortSignal, log: (line: string) => void): Promise<DemoReport> {
  const startedAt = Date.now();
  const deadlineAt = startedAt + options.deadlineMs;
  const db: RunningDatabase = await resolveDatabase();
  log(db.embedded ? `embedded PostgreSQL started (${redact(db.url)})` : `using DATABASE_URL (${redact(db.url)})`);
  const schema = uniqueSchemaName('demo');
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  pool.on('error', () => {});
  const store = createPgStore({ pool, schema });
  let fleet: Fleet | undefined;
  let progress: Progress | undefined;
  try {
    await store.migrate();
    await pool.query(reservationDdl(schema));
    const events = new EventTracker();
    fleet = new Fleet(
      Array.from({ length: options.workers }, (_, i) => workerConfig(options, db.url, schema, `worker-${i + 1}`)),
      (message) => events.record(message),
    );
    await fleet.ready(Math.min(READY_TIMEOUT_MS, deadlineAt - Date.now()));
    log(`${options.workers} worker processes ready (${options.discovery} discovery; pids ${fleet.members.map((m) => m.child.pid).join(', ')}); schema ${schema}`);

    const scheduled = await scheduleAll(pool, store, schema, options);
    const scheduledAt = Date.now();
    progress = createProgress(options.tasks, options.progress);
    let killed: KillRecord | null = null;
    let restarted: FleetMember | null = null;
    let timedOut = false;
    for (;;) {
      if (interrupt.aborted) throw new DemoInterrupted();
      const states = await store.countByState();
      const terminal = states.DONE + states.CANCELLED + states.DEAD;
      const status = killed ? `killed ${killed.workerId}` : options.kill ? 'all workers alive' : 'no kill';
      progress.update(terminal, { claims: events.claimEvents, reclaimed: events.reclaimed, status });
      if (terminal === options.tasks) break;
      if (Date.now() > deadlineAt) {
        timedOut = true;
        break;
      }
      if (options.kill && killed === null && Date.now() - scheduledAt >= options.killAfterMs) {
        const victim = await busiest(pool, schema, fleet.members);
        if (victim) {
          killed = await killWorker(fleet, victim, pool, schema, Date.now() - scheduledAt);
          if (options.restart) restarted = restartWorker(fleet, workerConfig(options, db.url, schema, `${victim.member.workerId}-restarted`), log);
        }
      }
      await delay(WATCH_EVERY_MS, undefined, { signal: interrupt }).catch(() => undefined);
    }
    const runMs = Date.now() - scheduledAt;
    progress.stop();
    const restart = restarted === null ? null : { workerId: restarted.workerId, pid: restarted.child.pid, ready: restarted.ready };
    await fleet.stop(STOP_TIMEOUT_MS);
    const facts = await readDatabaseFacts(pool, schema, await store.countByState());
    return buildReport({ options, scheduled, db: facts, events, killed, restart, durationMs: Date.now() - startedAt, runMs, timedOut });
  } finally {
    progress?.stop();
    fleet?.dispose();
    await store.close().catch(() => undefined);
    if (!db.embedded && !options.keepSchema) await dropSchema(db.url, schema).catch(() => undefined);
    await pool.end().catch(() => undefined);
    await db.stop();
  }
}

function workerConfig(o: DemoOptions, url: string, schema: string, workerId: string): WorkerProcessConfig {
  return {
    url,
    schema,
    workerId,
    concurrency: o.concurrency,
    leaseMs: o.leaseMs,
    renewMs: o.renewMs,
    discovery: o.discovery,
    pollMs: o.pollMs,
    fallbackMs: o.fallbackMs,
    reclaimMs: o.reclaimMs,
    workMinMs: o.workMinMs,
    workMaxMs: o.workMaxMs,
    logLevel: o.logLevel,
  };
}

/**
 * Inserts the reservations and schedules their tasks in one transaction (`scheduleMany` with
 * `{ tx }`), so no task can run before its reservation exists.
 * @returns the number of tasks scheduled
 */
async function scheduleAll(pool: pg.Pool, store: ReturnType<typeof createPgStore>, schema: string, o: DemoOptions): Promise<number> {
  const inputs: ScheduleInput<ExpirePayload>[] = Array.from({ length: o.tasks }, (_, i) => ({
    kind: EXPIRE_KIND,
    payload: { reservationId: i + 1 },
    delayMs: o.firstDueMs + (o.spreadMs === 0 ? 0 : Math.floor(Math.random() * o.spreadMs)),
  }));
  const client = await pool.connect();
  try {
    await client.query('begin');
    await insertReservations(client, schema, o.tasks);
    const scheduled = await store.scheduleMany(inputs, { tx: client });
    await linkTasks(
      client,
      schema,
      scheduled.map((s, i) => ({ reservationId: i + 1, taskId: s.id, dueAt: s.dueAt })),
    );
    await client.query('commit');
    return scheduled.length;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** Tasks CLAIMED now (database truth, not the workers' possibly late reports), by lease owner, most first. */
async function claimedByOwner(pool: pg.Pool, schema: string): Promise<{ owner: string; n: number }[]> {
  const { rows } = await pool.query<{ owner: string; n: number }>(
    `select lease_owner as owner, count(*)::int as n from ${schema}.task where state = 'CLAIMED' group by lease_owner order by n desc, lease_owner`,
  );
  return rows;
}

/** The live worker holding the most tasks right now, per the database, if any holds one. */
async function busiest(pool: pg.Pool, schema: string, members: readonly FleetMember[]): Promise<{ member: FleetMember; holding: number } | undefined> {
  const live = new Map(members.filter((m) => m.exit === null).map((m) => [m.workerId, m]));
  for (const { owner, n } of await claimedByOwner(pool, schema)) {
    const member = live.get(owner);
    if (member) return { member, holding: n };
  }
  return undefined;
}

/** SIGKILLs the victim, then reads how many of its tasks it left unfinished (still CLAIMED by it: the others must reclaim them). */
async function killWorker(fleet: Fleet, victim: { member: FleetMember; holding: number }, pool: pg.Pool, schema: string, atMs: number): Promise<KillRecord> {
  const { member, holding } = victim;
  const killedAt = Date.now();
  const exit = await fleet.kill(member, KILL_EXIT_TIMEOUT_MS);
  const unfinished = (await claimedByOwner(pool, schema)).find((r) => r.owner === member.workerId)?.n ?? 0;
  return { workerId: member.workerId, pid: member.child.pid, holding, unfinished, atMs, killedAt, exitCode: exit?.code ?? null, exitSignal: exit?.signal ?? null };
}

/** Forks a new worker in place of a killed one; it catches up on its own (the demo does not wait for it). */
function restartWorker(fleet: Fleet, config: WorkerProcessConfig, log: (line: string) => void): FleetMember {
  const member = fleet.add(config);
  log(`restarted as ${config.workerId} (pid ${member.child.pid})`);
  return member;
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'an unparseable URL';
  }
}
