/**
 * The shape shared by the fault cases: for each variant (driver × discovery), start worker
 * processes, schedule tasks over a few seconds, do the fault while they run, wait until every task is
 * terminal, and judge the whole history. Each variant's figures go on the CASE line under its prefix
 * (`pgPoll_…`, `postgresHybrid_…`); the line starts with the total of violations.
 */
import { CASE_WORKER } from './settings.js';
import type { CaseContext } from './case-context.js';
import type { ConnectionPlan, WorkerSettings } from './child/protocol.js';
import { lateness } from './claims.js';
import type { HistoryVerdict } from './checker/checker.js';
import { FaultRun, type FaultWorkerSpec, recordHistoryFigures, recordHistoryVerdict } from './fault-run.js';
import { allReady, startAll } from './harness-child.js';
import type { Verdict } from './verdict.js';

export type Driver = 'pg' | 'postgres';
export type Discovery = 'poll' | 'hybrid';

export interface Variant {
  readonly driver: Driver;
  readonly discovery: Discovery;
}

const EVERY_VARIANT: readonly Variant[] = [
  { driver: 'pg', discovery: 'poll' },
  { driver: 'pg', discovery: 'hybrid' },
  { driver: 'postgres', discovery: 'poll' },
  { driver: 'postgres', discovery: 'hybrid' },
];

/** Every driver × discovery (`POSTPONE_FAULT_VARIANTS=pgPoll,postgresHybrid` narrows it while debugging). */
export const ALL_VARIANTS: readonly Variant[] = (() => {
  const only = process.env.POSTPONE_FAULT_VARIANTS?.split(',').filter(Boolean);
  return only && only.length > 0 ? EVERY_VARIANT.filter((v) => only.includes(variantName(v))) : EVERY_VARIANT;
})();

/** `pgPoll`, `postgresHybrid`… */
export function variantName(v: Variant): string {
  return `${v.driver}${v.discovery[0]!.toUpperCase()}${v.discovery.slice(1)}`;
}

/** Worker settings of the fault cases: the evidence cases' (lease 1 s, renewal 300 ms, poll 50 ms) with the variant's discovery. */
export function faultSettings(v: Variant, extra: Partial<WorkerSettings> = {}): WorkerSettings {
  return { ...CASE_WORKER, discovery: v.discovery, fallbackPollMs: 1_000, ...extra };
}

export interface WorkloadOptions {
  readonly workers: number;
  readonly tasks: number;
  readonly firstDueMs: number;
  readonly spreadMs: number;
  /** Wait for every task to be terminal at most this long after the fault script returned. */
  readonly settleMs: number;
  readonly maxAttempts?: number;
  readonly settings?: Partial<WorkerSettings>;
  readonly connection?: ConnectionPlan;
  readonly handler?: FaultWorkerSpec['handler'];
  readonly poolSize?: number;
  readonly env?: Readonly<Record<string, string>>;
  readonly databaseUrl?: string;
  /** Prefix of this run's keys on the CASE line (default `<variantName>_`). */
  readonly prefix?: string;
  /** What worker `i` (0-based) runs differently, e.g. its host and database URL. */
  readonly perWorker?: (i: number) => Partial<FaultWorkerSpec>;
  /**
   * `strict` (default): any history violation fails the variant. `report`: violations are put on
   * the CASE line only, for a case that judges them itself (an asynchronous failover loses data by design).
   */
  readonly history?: 'strict' | 'report';
}

export interface VariantResult {
  readonly run: FaultRun;
  /** ms from the start of claiming (monotonic) */
  readonly startedAt: number;
  readonly violations: number;
  readonly verdict: HistoryVerdict;
}

/**
 * Runs one variant: the workload, `fault(run, startedAt)` during it, then the judge. Puts the
 * variant's figures on `v` under its prefix and checks: no history violation, no worker crash, no
 * handler failure, no task DEAD.
 */
export async function runVariant(
  v: Verdict,
  ctx: CaseContext,
  variant: Variant,
  options: WorkloadOptions,
  fault: (run: FaultRun, startedAt: number) => Promise<void>,
): Promise<VariantResult> {
  const p = options.prefix ?? `${variantName(variant)}_`;
  const run = new FaultRun(ctx, {
    settings: faultSettings(variant, options.settings),
    connection: { driver: variant.driver, ...options.connection },
    ...(options.handler === undefined ? {} : { handler: options.handler }),
    ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.databaseUrl === undefined ? {} : { databaseUrl: options.databaseUrl }),
  });
  await run.prepare();
  const workers = Array.from({ length: options.workers }, (_, i) => run.spawn(`${variantName(variant)}-w${i + 1}`, options.perWorker?.(i)));
  await allReady(workers);
  await run.schedule(options.tasks, options.firstDueMs, options.spreadMs, options.maxAttempts);
  await startAll(workers);
  const startedAt = performance.now();
  await fault(run, startedAt);
  try {
    await run.waitAllTerminal(options.settleMs);
  } catch (error) {
    // Judge what there is: the open tasks show as `lost`.
    v.holds(`${p}every task terminal`, false, (error as Error).message);
  }
  await run.stop();
  // A claim whose answer was lost with its connection may have committed: up to its `limit`
  // attempts were taken by the database without the worker knowing (reclaimed when their leases run
  // out). Every child counts each claim call that rejected at its store boundary (`claimTimed`, not
  // the worker's `error` events, which report only the first failed call of an outage), so the
  // checker allows exactly those attempts. It still requires every task terminal: no worker held an
  // unobserved attempt, so only a reclaim can have ended it.
  const unanswered = run.unansweredClaims();
  run.recorder.unobservedClaimsAllowed = Math.max(run.recorder.unobservedClaimsAllowed, unanswered.attempts);
  const verdict = await run.judge();
  if (options.history === 'report') recordHistoryFigures(v, verdict, p);
  else recordHistoryVerdict(v, verdict, p);
  if (unanswered.calls > 0) v.set(`${p}unansweredClaims`, unanswered.calls);
  if (verdict.violations.length > 0) console.error(timelineOf(run, new Set(verdict.violations.map((x) => String(x.taskId))), startedAt, p));
  const failures = run.children.flatMap((c) => c.eventsOf('failed')).length;
  const late = lateness(run.claims());
  const crashed = run.crashed();
  const errors = run.errorsByOperation();
  v.set(`${p}handlerFailures`, failures)
    .set(`${p}errors`, Object.entries(errors).map(([k, n]) => `${k}:${n}`))
    .set(`${p}latenessP50Ms`, late.p50Ms)
    .set(`${p}latenessP99Ms`, late.p99Ms)
    .set(`${p}latenessMaxMs`, late.maxMs);
  v.set(`${p}crashed`, crashed);
  v.set(`${p}stopHung`, [...run.stopKilled].map((c) => c.name));
  v.equal(`${p}crashed workers`, crashed, []);
  v.equal(`${p}handler failures`, failures, 0);
  v.equal(`${p}DEAD`, verdict.stats.finalStates.DEAD ?? 0, 0);
  return { run, startedAt, violations: verdict.violations.length, verdict };
}

/**
 * What the children reported about `ids` and every error they reported, in order of arrival (ms
 * from `startedAt`): printed when a variant has history violations, so a failure seen once in CI
 * can be read from its log.
 */
function timelineOf(run: FaultRun, ids: ReadonlySet<string>, startedAt: number, prefix: string): string {
  const lines = run.children
    .flatMap((c) =>
      c.events.events
        .filter((e) => e.type === 'error' || ('id' in e && ids.has(String(e.id))))
        .map((e) => ({ at: e.receivedAt - startedAt, text: `${c.name} ${JSON.stringify(e, (k, x) => (k === 'receivedAt' || k === 'seq' ? undefined : x))}` })),
    )
    .sort((a, b) => a.at - b.at)
    .map((x) => `  ${x.at.toFixed(0).padStart(7)} ms ${x.text.slice(0, 400)}`);
  return [`${prefix}timeline of tasks ${[...ids].join(',')} and of every error:`, ...lines.slice(0, 300)].join('\n');
}
