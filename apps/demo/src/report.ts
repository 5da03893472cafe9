/**
 * The final report: read from the database (the source of truth) and from the workers' events, with
 * every invariant the demo promises checked and named.
 */
import type { StateCounts } from '@postpone/core';
import type pg from 'pg';
import type { DemoOptions } from './config.js';
import type { Summary } from './stats.js';
import type { EventTracker } from './tracker.js';

export interface KillRecord {
  readonly workerId: string;
  readonly pid: number | undefined;
  /** Tasks it held (CLAIMED, per the database) just before the kill. */
  readonly holding: number;
  /** Of those, still CLAIMED by it right after it died: the others must reclaim them once the lease runs out. */
  readonly unfinished: number;
  /** Ms after scheduling. */
  readonly atMs: number;
  /** When it was killed (epoch ms, the demo's clock). */
  readonly killedAt: number;
  readonly exitCode: number | null;
  readonly exitSignal: string | null;
}

/** The worker process started in place of the killed one (`--restart`). */
export interface RestartRecord {
  readonly workerId: string;
  readonly pid: number | undefined;
  /** It reported ready before the run ended. */
  readonly ready: boolean;
}

/** Discovery's store queries, as the workers reported them. */
export interface QueryCounts {
  /** Claim queries sent, empty ones included. */
  readonly claims: number;
  /** Claim queries that claimed nothing. */
  readonly emptyClaims: number;
  /** Reads of near tasks (hybrid discovery's wheel loads; 0 when polling). */
  readonly peeks: number;
  /** Hybrid claims by what made them owed, with the empty ones (empty when polling). */
  readonly byCause: Readonly<Record<string, { readonly claims: number; readonly empty: number }>>;
}

export interface DatabaseFacts {
  readonly states: StateCounts;
  /** Rows of the handler's `app_effect` table (one per task by its primary key). */
  readonly effects: number;
  readonly reservations: number;
  readonly reservationsExpired: number;
  readonly reservationsExpiredTwice: number;
  /** Sum of `task.attempt`: every claim ever made. */
  readonly claims: number;
  readonly tasksClaimedMoreThanOnce: number;
  /** Attempts whose handler started before the reservation's due time (attempt_log). */
  readonly earlyAttempts: number;
  readonly attemptsLogged: number;
}

export interface Invariant {
  readonly name: string;
  readonly pass: boolean;
  readonly detail: string;
}

export interface DemoReport {
  readonly options: DemoOptions;
  readonly scheduled: number;
  readonly db: DatabaseFacts;
  readonly claimEvents: number;
  readonly reclaimed: number;
  readonly reclaimedBy: Readonly<Record<string, number>>;
  /** From the SIGKILL to the first reclaim reported by a surviving worker (about the lease). */
  readonly reclaimAfterKillMs: number | null;
  readonly leaseLost: number;
  readonly earlyClaimEvents: number;
  readonly lateness: Summary;
  readonly killed: KillRecord | null;
  readonly restart: RestartRecord | null;
  readonly queries: QueryCounts;
  /** Claimed tasks (claim events) per worker. */
  readonly claimsBy: Readonly<Record<string, number>>;
  readonly durationMs: number;
  /** From scheduling to every task terminal (or the deadline). */
  readonly runMs: number;
  readonly timedOut: boolean;
  readonly errors: readonly string[];
  readonly invariants: readonly Invariant[];
  readonly pass: boolean;
}

/** Says which claims neither check saw: those of the killed worker whose handler never started. */
function unlogged(r: DemoReport): string {
  const missing = Number(r.db.claims) - Number(r.db.attemptsLogged);
  if (missing <= 0) return '';
  return `; ${missing} claim(s) not covered by either (taken by the killed worker, which died before reporting them)`;
}

/**
 * {@link readDatabaseFacts} over every group's schema (the sharded demo), added up; `states` are the
 * front's counts. Each schema is read on its own, so every statement stays within one shard group.
 */
export async function readDatabaseFactsAcross(pool: pg.Pool, schemas: readonly string[], states: StateCounts): Promise<DatabaseFacts> {
  const all = await Promise.all(schemas.map((schema) => readDatabaseFacts(pool, schema, states)));
  const sum = (pick: (f: DatabaseFacts) => number) => all.reduce((n, f) => n + pick(f), 0);
  return {
    states,
    effects: sum((f) => f.effects),
    reservations: sum((f) => f.reservations),
    reservationsExpired: sum((f) => f.reservationsExpired),
    reservationsExpiredTwice: sum((f) => f.reservationsExpiredTwice),
    claims: sum((f) => f.claims),
    tasksClaimedMoreThanOnce: sum((f) => f.tasksClaimedMoreThanOnce),
    earlyAttempts: sum((f) => f.earlyAttempts),
    attemptsLogged: sum((f) => f.attemptsLogged),
  };
}

/** Reads every fact of the report from the demo schema. */
export async function readDatabaseFacts(pool: pg.Pool, schema: string, states: StateCounts): Promise<DatabaseFacts> {
  const one = async (sql: string): Promise<Record<string, string>> => ((await pool.query(sql)).rows[0] ?? {}) as Record<string, string>;
  // The handler's own effect rows (app_effect, written with the expiry in the completing transaction).
  const effects = await one(`select count(*) as n from ${schema}.app_effect`);
  const reservations = await one(
    `select count(*) as n, count(*) filter (where status = 'expired') as expired, count(*) filter (where expired_count > 1) as twice from ${schema}.reservation`,
  );
  const claims = await one(`select coalesce(sum(attempt), 0) as claims, count(*) filter (where attempt > 1) as multi from (select attempt from ${schema}.task union all select attempt from ${schema}.task_history) t`);
  const attempts = await one(
    `select count(*) as n, count(*) filter (where a.started_at < r.due_at) as early
       from ${schema}.attempt_log a join ${schema}.reservation r on r.task_id = a.task_id`,
  );
  return {
    states,
    effects: Number(effects.n),
    reservations: Number(reservations.n),
    reservationsExpired: Number(reservations.expired),
    reservationsExpiredTwice: Number(reservations.twice),
    claims: Number(claims.claims),
    tasksClaimedMoreThanOnce: Number(claims.multi),
    earlyAttempts: Number(attempts.early),
    attemptsLogged: Number(attempts.n),
  };
}

export function buildReport(input: {
  options: DemoOptions;
  scheduled: number;
  db: DatabaseFacts;
  events: EventTracker;
  killed: KillRecord | null;
  restart: RestartRecord | null;
  durationMs: number;
  runMs: number;
  timedOut: boolean;
}): DemoReport {
  const { options, scheduled, db, events, killed, restart, timedOut } = input;
  const n = options.tasks;
  const notTerminal = db.states.SCHEDULED + db.states.CLAIMED;
  const invariants: Invariant[] = [
    { name: 'finished before the deadline', pass: !timedOut, detail: timedOut ? `gave up after ${options.deadlineMs} ms` : 'yes' },
    { name: `scheduled = ${n}`, pass: scheduled === n, detail: String(scheduled) },
    { name: `effects = ${n}`, pass: db.effects === n, detail: String(db.effects) },
    { name: `done = ${n}`, pass: db.states.DONE === n, detail: String(db.states.DONE) },
    { name: 'every task terminal', pass: notTerminal === 0, detail: `${notTerminal} not terminal` },
    { name: `reservations expired = ${n}`, pass: db.reservationsExpired === n, detail: String(db.reservationsExpired) },
    { name: 'no reservation expired twice', pass: db.reservationsExpiredTwice === 0, detail: String(db.reservationsExpiredTwice) },
    {
      name: 'no claim before its due time',
      pass: events.earlyClaims === 0 && db.earlyAttempts === 0,
      detail: `${events.earlyClaims} in claim events, ${db.earlyAttempts} in the attempt log`,
    },
  ];
  if (options.kill) {
    invariants.push({
      name: 'killed worker died by SIGKILL while holding tasks',
      pass: killed !== null && killed.exitSignal === 'SIGKILL' && killed.holding > 0,
      detail: killed === null ? 'no kill happened' : `${killed.workerId} exit signal ${killed.exitSignal}, holding ${killed.holding}`,
    });
    const unfinished = killed?.unfinished ?? 0;
    invariants.push({
      name: 'its unfinished tasks reclaimed by the others',
      pass: events.reclaimed >= unfinished,
      detail: `${unfinished} unfinished at the kill, ${events.reclaimed} reclaimed`,
    });
  }
  if (options.restart) {
    const claimedByNew = restart === null ? 0 : (events.claimsBy.get(restart.workerId) ?? 0);
    invariants.push({
      name: 'a new worker started in its place and claimed tasks',
      pass: restart?.ready === true && claimedByNew > 0,
      detail: restart === null ? 'no restart happened' : `${restart.workerId} ready ${restart.ready}, ${claimedByNew} claimed`,
    });
  }
  return {
    options,
    scheduled,
    db,
    claimEvents: events.claimEvents,
    reclaimed: events.reclaimed,
    reclaimedBy: Object.fromEntries(events.reclaimedBy),
    reclaimAfterKillMs: killed !== null && events.firstReclaimAt !== null ? events.firstReclaimAt - killed.killedAt : null,
    leaseLost: events.leaseLost,
    earlyClaimEvents: events.earlyClaims,
    lateness: events.lateness(),
    killed,
    restart,
    queries: { ...events.queries, byCause: events.claimsByCause },
    claimsBy: Object.fromEntries(events.claimsBy),
    durationMs: input.durationMs,
    runMs: input.runMs,
    timedOut,
    errors: events.errors,
    invariants,
    pass: invariants.every((i) => i.pass),
  };
}

function discoveryText(o: DemoOptions): string {
  return o.discovery === 'hybrid' ? `hybrid discovery (wheel + LISTEN/NOTIFY, fallback ${o.fallbackMs} ms)` : `poll ${o.pollMs} ms`;
}

const num = (v: number | null) => (v === null ? 'n/a' : String(Math.round(v)));
const ms = (v: number | null) => `${num(v)} ms`;

/** The report as text for the terminal. */
export function formatReport(r: DemoReport): string {
  const o = r.options;
  const s = r.db.states;
  const row = (label: string, value: string | number, note = '') => `  ${label.padEnd(30)} ${String(value).padEnd(9)} ${note}`.trimEnd();
  const reclaimedBy = Object.entries(r.reclaimedBy)
    .map(([w, c]) => `${w}: ${c}`)
    .join(', ');
  const lines = [
    '',
    `Postpone demo — ${o.tasks} tasks due over ${o.spreadMs} ms${o.firstDueMs > 0 ? ` from ${o.firstDueMs} ms` : ''}, ${o.workers} worker processes × ${o.concurrency}, lease ${o.leaseMs} ms, renew ${o.renewMs} ms, ${discoveryText(o)}${(o.groups ?? 1) > 1 ? `, ${o.groups} shard groups (sharded front)` : ''}`,
    row('scheduled', r.scheduled),
    row('done', s.DONE, `(SCHEDULED ${s.SCHEDULED}, CLAIMED ${s.CLAIMED}, CANCELLED ${s.CANCELLED}, DEAD ${s.DEAD})`),
    row('effects', r.db.effects),
    row('reservations expired', r.db.reservationsExpired, `(expired twice: ${r.db.reservationsExpiredTwice})`),
    row('claims', r.db.claims, `(claim events received: ${r.claimEvents})`),
    row('tasks claimed more than once', r.db.tasksClaimedMoreThanOnce),
    row('reclaimed', r.reclaimed, [reclaimedBy && `(${reclaimedBy})`, r.reclaimAfterKillMs !== null && `first ${ms(r.reclaimAfterKillMs)} after the kill (lease ${o.leaseMs} ms from the last renewal, which came before the kill)`].filter(Boolean).join(' ')),
    r.killed
      ? row('killed', r.killed.workerId, `pid ${r.killed.pid}, ${r.killed.exitSignal ?? `exit ${r.killed.exitCode}`}, holding ${r.killed.holding} task(s) (${r.killed.unfinished} unfinished at death), ${(r.killed.atMs / 1000).toFixed(1)} s after scheduling`)
      : row('killed', 'none'),
    ...(r.restart ? [row('restarted', r.restart.workerId, `pid ${r.restart.pid}, claimed ${r.claimsBy[r.restart.workerId] ?? 0} task(s)`)] : []),
    row('claim queries', r.queries.claims, `(empty ${r.queries.emptyClaims}; near-task reads ${r.queries.peeks}; ${o.discovery} discovery)`),
    row('lateness p50 / p99 / max', `${num(r.lateness.p50)} / ${num(r.lateness.p99)} / ${num(r.lateness.max)} ms`, `(due → first claim per task, database clock; min ${ms(r.lateness.min)})`),
    row('claims before due', r.earlyClaimEvents + r.db.earlyAttempts, `(${r.earlyClaimEvents} in claim events, ${r.db.earlyAttempts} of ${r.db.attemptsLogged} in the attempt log${unlogged(r)})`),
    row('run time', `${(r.runMs / 1000).toFixed(1)} s`, `from scheduling to all terminal (${(r.durationMs / 1000).toFixed(1)} s in all, database start included)`),
  ];
  if (r.errors.length > 0) lines.push('', '  worker errors (first 20):', ...r.errors.map((e) => `    ${e}`));
  lines.push('', 'Invariants');
  for (const i of r.invariants) lines.push(`  ${i.pass ? '✓' : '✗'} ${i.name.padEnd(50)} ${i.detail}`);
  lines.push('', `RESULT ${r.pass ? 'PASS' : 'FAIL'}`, '');
  return lines.join('\n');
}
