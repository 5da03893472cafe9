/**
 * The demo, start to end: a database (DATABASE_URL or embedded), a fresh schema, N worker processes
 * (polling or hybrid discovery), tasks scheduled in one transaction with their reservations, one
 * worker SIGKILLed while it holds tasks (with `--restart`, a new worker process started in its
 * place), a wait (bounded by the deadline) until every task is terminal, a graceful stop of the
 * rest, and the report. Every exit path kills the children and stops the embedded server.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { resolveDatabase, dropSchema, uniqueSchemaName, type RunningDatabase } from '@postpone/embedded';
import type { ScheduleInput, Store } from '@postpone/core';
import { createShardedStore, shardOfId } from '@postpone/postgres';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import pg from 'pg';
import { type DemoOptions, EXPIRE_KIND, type ExpirePayload, type WorkerProcessConfig } from './config.js';
import { Fleet, type FleetMember } from './fleet.js';
import { createProgress, type Progress } from './progress.js';
import { buildReport, type DemoReport, type KillRecord, readDatabaseFactsAcross } from './report.js';
import { insertLinkedReservations, insertReservations, linkTasks, reservationDdl, reservationDdlStatements } from './reservations.js';
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
  const groups = options.groups ?? 1;
  // With groups: one schema per shard group behind the sharded front (docs/sharding.md), group 0 first.
  const schemas = groups === 1 ? [schema] : Array.from({ length: groups }, (_, g) => `${schema}_g${g}`);
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  pool.on('error', () => {});
  const groupStores = schemas.map((s) => createPgStore({ pool, schema: s }));
  const store: Store<PgTx> = groups === 1 ? (groupStores[0] as Store<PgTx>) : createShardedStore({ stores: groupStores });
  let fleet: Fleet | undefined;
  let progress: Progress | undefined;
  try {
    await store.migrate();
    if (groups === 1) await pool.query(reservationDdl(schema));
    else {
      for (const s of schemas) for (const statement of reservationDdlStatements(s)) await pool.query(statement);
      log(`${groups} shard groups behind the sharded front: ${await placement(pool, schemas)}`);
    }
    const events = new EventTracker();
    fleet = new Fleet(
      Array.from({ length: options.workers }, (_, i) => workerConfig(options, db.url, schemas, `worker-${i + 1}`)),
      (message) => events.record(message),
    );
    await fleet.ready(Math.min(READY_TIMEOUT_MS, deadlineAt - Date.now()));
    log(`${options.workers} worker processes ready (${options.discovery} discovery; pids ${fleet.members.map((m) => m.child.pid).join(', ')}); ${groups === 1 ? `schema ${schema}` : `schemas ${schemas.join(', ')}`}`);

    const scheduled = await scheduleAll(pool, store, schemas, options);
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
        const victim = await busiest(pool, schemas, fleet.members);
        if (victim) {
          killed = await killWorker(fleet, victim, pool, schemas, Date.now() - scheduledAt);
          if (options.restart) restarted = restartWorker(fleet, workerConfig(options, db.url, schemas, `${victim.member.workerId}-restarted`), log);
        }
      }
      await delay(WATCH_EVERY_MS, undefined, { signal: interrupt }).catch(() => undefined);
    }
    const runMs = Date.now() - scheduledAt;
    progress.stop();
    const restart = restarted === null ? null : { workerId: restarted.workerId, pid: restarted.child.pid, ready: restarted.ready };
    await fleet.stop(STOP_TIMEOUT_MS);
    const facts = await readDatabaseFactsAcross(pool, schemas, await store.countByState());
    return buildReport({ options, scheduled, db: facts, events, killed, restart, durationMs: Date.now() - startedAt, runMs, timedOut });
  } finally {
    progress?.stop();
    fleet?.dispose();
    await store.close().catch(() => undefined);
    if (!db.embedded && !options.keepSchema) for (const s of schemas) await dropSchema(db.url, s).catch(() => undefined);
    await pool.end().catch(() => undefined);
    await db.stop();
  }
}

function workerConfig(o: DemoOptions, url: string, schemas: readonly string[], workerId: string): WorkerProcessConfig {
  return {
    url,
    schema: schemas[0] as string,
    schemas,
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
async function scheduleAll(pool: pg.Pool, store: Store<PgTx>, schemas: readonly string[], o: DemoOptions): Promise<number> {
  const schema = schemas[0] as string;
  const inputs: ScheduleInput<ExpirePayload>[] = Array.from({ length: o.tasks }, (_, i) => ({
    kind: EXPIRE_KIND,
    payload: { reservationId: i + 1 },
    delayMs: o.firstDueMs + (o.spreadMs === 0 ? 0 : Math.floor(Math.random() * o.spreadMs)),
  }));
  const client = await pool.connect();
  try {
    await client.query('begin');
    if (schemas.length === 1) {
      await insertReservations(client, schema, o.tasks);
      const scheduled = await store.scheduleMany(inputs, { tx: client });
      await linkTasks(
        client,
        schema,
        scheduled.map((s, i) => ({ reservationId: i + 1, taskId: s.id, dueAt: s.dueAt })),
      );
      await client.query('commit');
      return scheduled.length;
    }
    // Sharded: the tasks first (the front places them; the id names the group), then each reservation
    // in its task's group schema, so a task's effect commits on one node with its completion. One
    // transaction across the groups (on Citus: two-phase commit when they sit on two nodes).
    const scheduled = await store.scheduleMany(inputs, { tx: client });
    for (const [g, s] of schemas.entries()) {
      const links = scheduled.map((t, i) => ({ reservationId: i + 1, taskId: t.id, dueAt: t.dueAt })).filter((l) => shardOfId(l.taskId) === g);
      await insertLinkedReservations(client, s, links);
    }
    await client.query('commit');
    return scheduled.length;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** Tasks CLAIMED now (database truth, not the workers' possibly late reports), by lease owner, most first; one statement per group schema. */
async function claimedByOwner(pool: pg.Pool, schemas: readonly string[]): Promise<{ owner: string; n: number }[]> {
  const counts = new Map<string, number>();
  for (const schema of schemas) {
    const { rows } = await pool.query<{ owner: string; n: number }>(`select lease_owner as owner, count(*)::int as n from ${schema}.task where state = 'CLAIMED' group by lease_owner`);
    for (const r of rows) counts.set(r.owner, (counts.get(r.owner) ?? 0) + r.n);
  }
  return [...counts].map(([owner, n]) => ({ owner, n })).sort((a, b) => b.n - a.n || a.owner.localeCompare(b.owner));
}

/** Where each group schema's `task` table sits: `schema@port` per group on Citus (`citus_shards`), the schemas alone on plain PostgreSQL. */
async function placement(pool: pg.Pool, schemas: readonly string[]): Promise<string> {
  try {
    const { rows } = await pool.query<{ t: string; port: number }>('select table_name::text as t, nodeport as port from citus_shards where table_name::text = any($1::text[])', [
      schemas.map((s) => `${s}.task`),
    ]);
    const port = new Map(rows.map((r) => [r.t, r.port]));
    return schemas.map((s) => `${s} on node :${port.get(`${s}.task`) ?? '?'}`).join(', ');
  } catch {
    return schemas.join(', ');
  }
}

/** The live worker holding the most tasks right now, per the database, if any holds one. */
async function busiest(pool: pg.Pool, schemas: readonly string[], members: readonly FleetMember[]): Promise<{ member: FleetMember; holding: number } | undefined> {
  const live = new Map(members.filter((m) => m.exit === null).map((m) => [m.workerId, m]));
  for (const { owner, n } of await claimedByOwner(pool, schemas)) {
    const member = live.get(owner);
    if (member) return { member, holding: n };
  }
  return undefined;
}

/** SIGKILLs the victim, then reads how many of its tasks it left unfinished (still CLAIMED by it: the others must reclaim them). */
async function killWorker(fleet: Fleet, victim: { member: FleetMember; holding: number }, pool: pg.Pool, schemas: readonly string[], atMs: number): Promise<KillRecord> {
  const { member, holding } = victim;
  const killedAt = Date.now();
  const exit = await fleet.kill(member, KILL_EXIT_TIMEOUT_MS);
  const unfinished = (await claimedByOwner(pool, schemas)).find((r) => r.owner === member.workerId)?.n ?? 0;
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
