/**
 * The workload every fault case runs, recorded into one history: worker processes (driver, discovery
 * and settings chosen by the case) handle tasks whose completion writes an `app_effect` row (primary
 * key) and a `history_effect` row (no unique key) in the completing transaction; the test schedules and cancels through the recorder; the fault happens
 * in between; at the end the effect rows and every task's final row are read and the whole history
 * is judged by {@link checkHistory}.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { APP_EFFECT_TABLE } from './app-effect.js';
import type { CaseContext } from './case-context.js';
import type { ChildConfig, ConnectionPlan, HandlerPlan, WorkerSettings } from './child/protocol.js';
import type { ClaimRecord } from './claims.js';
import { type HarnessChild, spawnHarnessChild, stopAll } from './harness-child.js';
import { checkHistory, describeViolations, type HistoryOp, HistoryRecorder, type HistoryVerdict } from './checker/checker.js';
import type { Verdict } from './verdict.js';
import { WaitTimeoutError } from '@postpone/testkit';

export const FAULT_KIND = 'fault';

/** Creates the harness's effect table without a unique key (one row per committed completion). */
export async function createHistoryEffectTable(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(
    `create table if not exists ${pg.escapeIdentifier(schema)}.history_effect (task_id bigint not null, attempt integer not null, worker text not null, created_at timestamptz not null default now())`,
  );
}

/** The history operations one child reported. */
export function childOps(child: HarnessChild): HistoryOp[] {
  const worker = child.name;
  const ops: HistoryOp[] = [];
  // A worker's outcome events, by the history operation each one is.
  const outcomeOps = { committed: 'complete', failed: 'fail', released: 'release', reclaimed: 'reclaim' } as const;
  for (const e of child.events.filter(() => true)) {
    if (e.type === 'claimed') ops.push({ type: 'claim', worker, id: e.id, attempt: e.attempt, claimedAtMs: e.claimedAtMs, dueAtMs: e.dueAtMs });
    else if (e.type === 'extended') ops.push({ type: 'renew', worker, id: e.id, attempt: e.attempt, ok: e.ok });
    else if (e.type in outcomeOps) {
      const o = e as Extract<typeof e, { type: keyof typeof outcomeOps }>;
      ops.push({ type: outcomeOps[o.type], worker, id: o.id, attempt: o.attempt, outcome: o.outcome });
    }
  }
  return ops;
}

export interface FaultWorkerSpec {
  readonly settings: WorkerSettings;
  readonly connection?: ConnectionPlan;
  readonly handler?: Omit<HandlerPlan, 'kind' | 'historyEffect'>;
  readonly poolSize?: number;
  /** Extra environment of the process (e.g. libfaketime). */
  readonly env?: Readonly<Record<string, string>>;
  /** Database URL of the workers (default the case's; e.g. a proxy's or a pooler's). */
  readonly databaseUrl?: string;
  /** Runs the process through this command (e.g. on a network-namespace host: `NetnsHosts.command`). */
  readonly command?: readonly string[];
}

/**
 * One fault run: its recorder, its workers (every process ever spawned, restarts included), and the
 * judge at the end.
 */
export class FaultRun {
  readonly recorder = new HistoryRecorder();
  readonly children: HarnessChild[] = [];
  /** Children the case killed on purpose (their exits are not crashes). */
  readonly killed = new Set<HarnessChild>();
  readonly ids: string[] = [];
  private serial = 0;

  constructor(
    readonly ctx: CaseContext,
    readonly spec: FaultWorkerSpec,
  ) {}

  /** Creates the effect table; call once before spawning. */
  async prepare(): Promise<void> {
    await createHistoryEffectTable(this.ctx.pool, this.ctx.schema);
  }

  /** Spawns a worker process (not started until {@link start} unless `startNow`). */
  spawn(name = `w${++this.serial}`, overrides: Partial<FaultWorkerSpec> = {}): HarnessChild {
    const spec = { ...this.spec, ...overrides };
    const config: ChildConfig = {
      name,
      databaseUrl: spec.databaseUrl ?? this.ctx.databaseUrl,
      schema: this.ctx.schema,
      waitForStart: true,
      ...(spec.poolSize === undefined ? {} : { poolSize: spec.poolSize }),
      ...(spec.connection === undefined ? {} : { connection: spec.connection }),
      run: { mode: 'worker', worker: spec.settings, handler: { kind: FAULT_KIND, historyEffect: true, ...spec.handler } },
    };
    const child = spawnHarnessChild(this.ctx.group, config, spec.env, spec.command);
    this.children.push(child);
    return child;
  }

  /**
   * Schedules `count` tasks due `firstDueMs + i * spreadMs / count` after this call (host clock, the
   * database's host: absolute `runAt`s, so the batches of 1 000 scheduled later do not shift their due
   * times by the time the earlier ones took); records them.
   */
  async schedule(count: number, firstDueMs: number, spreadMs: number, maxAttempts?: number): Promise<string[]> {
    const base = Date.now() + firstDueMs;
    const inputs = Array.from({ length: count }, (_, i) => ({
      kind: FAULT_KIND,
      payload: { i },
      runAt: new Date(base + Math.floor((i * spreadMs) / Math.max(1, count))),
      ...(maxAttempts === undefined ? {} : { maxAttempts }),
    }));
    const scheduled: { id: string; dueAt: Date }[] = [];
    for (let i = 0; i < inputs.length; i += 1_000) scheduled.push(...(await this.ctx.store.scheduleMany(inputs.slice(i, i + 1_000))));
    this.recorder.scheduled(scheduled);
    const ids = scheduled.map((s) => s.id);
    for (const id of ids) this.ids.push(id);
    return ids;
  }

  /** Cancels through the store, recording the outcome; an error (database down) is counted and swallowed. */
  async cancel(id: string): Promise<string | undefined> {
    try {
      return await this.recorder.cancel(id, (x) => this.ctx.store.cancel(x));
    } catch {
      return undefined;
    }
  }

  /**
   * Waits until no scheduled task is live any more (every one DONE, DEAD or CANCELLED, or lost: a
   * task gone from both tables is the checker's `lost`), polling the live table and tolerating the
   * database's errors (it may be down); bounded by `timeoutMs`.
   * @throws WaitTimeoutError with the count still open
   */
  async waitAllTerminal(timeoutMs: number, intervalMs = 100): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    let open = -1;
    for (let i = 0; i < Math.ceil(timeoutMs / intervalMs) + 1; i++) {
      try {
        open = await this.ctx.db.countLive(this.ids);
        if (open === 0) return;
      } catch {
        // the database is down or restarting: look again
      }
      if (performance.now() >= deadline) break;
      await sleep(intervalMs);
    }
    throw new WaitTimeoutError('every task terminal', timeoutMs, `${open} still open`);
  }

  /** Worker `error` events by operation, across every child. */
  errorsByOperation(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const c of this.children) for (const e of c.eventsOf('error')) if (e.operation) out[e.operation] = (out[e.operation] ?? 0) + 1;
    return out;
  }

  /**
   * The claim calls that ended without an answer (rejected: connection lost, reply timeout, server
   * stopped), counted by every child at its store boundary, and the attempts they may have taken:
   * the sum of their limits. Such a claim may have committed in the database, so its attempts can
   * be missing from the observed claims (the checker's `unobservedClaimsAllowed`).
   */
  unansweredClaims(): { readonly calls: number; readonly attempts: number } {
    const failed = this.children.flatMap((c) => c.eventsOf('claimTimed')).filter((e) => !e.ok);
    return { calls: failed.length, attempts: failed.reduce((sum, e) => sum + e.limit, 0) };
  }

  /** Children that exited on their own, without being killed or stopped by the case (a crash), with their last fatal error. */
  crashed(): string[] {
    return this.children
      .filter((c) => !c.alive && !this.killed.has(c) && !this.stopKilled.has(c) && c.eventsOf('stopped').length === 0)
      .map((c) => {
        const fatal = c.eventsOf('error').filter((e) => e.operation === undefined).at(-1)?.message ?? c.stderr.trim().slice(-300);
        const lines = fatal.split('\n').map((l) => l.trim());
        const where = lines.find((l) => l.startsWith('at ') && !l.includes('node:')) ?? '';
        return `${c.name}:${c.status?.code ?? c.status?.signal}:${lines[0] ?? ''} ${where}`.slice(0, 300);
      });
  }

  /** Children whose graceful stop did not finish in time (killed by {@link stop}). */
  readonly stopKilled = new Set<HarnessChild>();

  claims(): ClaimRecord[] {
    return this.children.flatMap((child) =>
      child.eventsOf('claimed').map((e) => ({ worker: child.name, id: e.id, attempt: e.attempt, claimedAtMs: e.claimedAtMs, dueAtMs: e.dueAtMs, leaseUntilMs: e.leaseUntilMs })),
    );
  }

  /** Reads effects and final rows, judges the whole history. */
  async judge(): Promise<HistoryVerdict> {
    const q = pg.escapeIdentifier(this.ctx.schema);
    const { rows: final } = await this.ctx.pool.query<{ id: string; state: string; attempt: number }>(
      `select id::text as id, state, attempt from ${q}.task where id = any($1::bigint[])
       union all select id::text, state, attempt from ${q}.task_history where id = any($1::bigint[])`,
      [this.ids],
    );
    const effects = [];
    for (const table of [APP_EFFECT_TABLE, 'history_effect']) {
      const { rows } = await this.ctx.pool.query<{ id: string; attempt: number; worker: string }>(
        `select task_id::text as id, attempt, worker from ${q}.${table} where task_id = any($1::bigint[])`,
        [this.ids],
      );
      // One push per row: spread into push passes every row as an argument, past the stack at a million.
      for (const r of rows) effects.push({ source: table, ...r });
    }
    this.recorder.effects = effects;
    this.recorder.final = final;
    const ops = [...this.recorder.ops, ...this.children.flatMap((c) => childOps(c))];
    return checkHistory({ ops, effects, final, unobservedClaimsAllowed: this.recorder.unobservedClaimsAllowed });
  }

  /** Stops every live child gracefully. */
  async stop(timeoutMs = 10_000): Promise<void> {
    const live = this.children.filter((c) => c.alive);
    await stopAll(live, timeoutMs);
    for (const c of live) if (c.eventsOf('stopped').length === 0) this.stopKilled.add(c);
  }
}

/**
 * Puts the checker's verdict on the CASE line (`violations=<n>`, the first few `kind:task`, and the
 * history's figures) and checks that there is none.
 */
export function recordHistoryVerdict(v: Verdict, verdict: HistoryVerdict, prefix = ''): void {
  recordHistoryFigures(v, verdict, prefix);
  v.equal(`${prefix}history violations`, verdict.violations.map((x) => `${x.kind}:${x.taskId}:${x.detail}`).slice(0, 10), []);
}

/** The CASE line's part of {@link recordHistoryVerdict} without its check: the violations' count, the first few, the history's figures. */
export function recordHistoryFigures(v: Verdict, verdict: HistoryVerdict, prefix = ''): void {
  const s = verdict.stats;
  v.set(`${prefix}violations`, verdict.violations.length);
  if (verdict.violations.length > 0) v.set(`${prefix}firstViolations`, describeViolations(verdict.violations));
  v.set(`${prefix}claims`, s.claims)
    .set(`${prefix}renewals`, s.renewals)
    .set(`${prefix}reclaims`, s.reclaims)
    .set(`${prefix}effects`, s.effects)
    .set(`${prefix}final`, Object.entries(s.finalStates).map(([k, n]) => `${k}:${n}`));
  if (s.unobservedClaims > 0) v.set(`${prefix}unobservedClaims`, s.unobservedClaims);
}

