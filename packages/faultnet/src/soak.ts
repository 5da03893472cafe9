/**
 * The soak: tasks spread over a few minutes, worker processes (both drivers, poll and hybrid), a
 * random SIGKILL or SIGSTOP/SIGCONT every 2–5 s, database restarts in immediate mode, a cancel storm
 * — every operation recorded and the whole history judged by {@link checkHistory}.
 * `pnpm soak` runs the full size (scripts/soak.ts → evidence/soak.md); `soak_short` in the tests
 * runs 30 s of it.
 */
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { mulberry32 } from '@postpone/testkit';
import { type CaseContext, withCaseContext } from './case-context.js';
import type { Variant } from './fault-cases.js';
import { faultSettings, variantName } from './fault-cases.js';
import { FaultRun } from './fault-run.js';
import { allReady, type HarnessChild } from './harness-child.js';
import type { HistoryVerdict } from './checker/checker.js';
import { PgServer } from './faults/pg-server.js';
import { type FaultWindow, latenessByDueBucket, type SplitLateness, splitLateness } from './soak-lateness.js';

export interface SoakOptions {
  readonly tasks: number;
  /** Tasks are due over this many ms; the chaos runs as long, from the first due time. */
  readonly durationMs: number;
  /**
   * The first task is due this long after scheduling begins (default 500 ms). The soak schedules every
   * task ahead, as delayed work is; a lead longer than the bulk insert keeps the insert (which saturated
   * the 2 cores for 19 s beside the workers, evidence/soak.md) out of the measured due times. The report
   * gives the insert's time and any overlap.
   */
  readonly leadMs?: number;
  readonly workers: number;
  /** Server restarts (immediate stop, `restartOutageMs` down), spread evenly over the run. */
  readonly restarts: number;
  readonly restartOutageMs: number;
  /** Cancels sent in one storm at the middle of the run. */
  readonly cancels: number;
  /** A chaos event every `chaosMinMs..chaosMaxMs`. */
  readonly chaosMinMs: number;
  readonly chaosMaxMs: number;
  /** Wait this long at most for every task to be terminal after the run. */
  readonly settleMs: number;
  readonly seed?: number;
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void;
}

export interface SoakReport {
  readonly options: SoakOptions;
  readonly verdict: HistoryVerdict;
  readonly kills: number;
  readonly stops: number;
  readonly restarts: number;
  readonly cancelsSent: number;
  readonly cancelOutcomes: Readonly<Record<string, number>>;
  readonly cancelErrors: number;
  readonly processes: number;
  readonly crashed: readonly string[];
  readonly allTerminal: boolean;
  readonly openAtEnd: number;
  readonly elapsedMs: number;
  readonly latenessP50Ms: number;
  readonly latenessP99Ms: number;
  readonly errorsByOperation: Readonly<Record<string, number>>;
  /** Lateness inside and outside fault windows (`splitLateness`, grace = the lease). */
  readonly split: SplitLateness;
  readonly leaseMs: number;
  /** The bulk insert of every task before the run (ms), and how far it ran past the first due time (ms, 0: none). */
  readonly scheduleMs: number;
  readonly scheduleOverlapMs: number;
  /** Spawn of a replacement process to its `ready`, p50 / max (ms). */
  readonly respawnP50Ms: number;
  readonly respawnMaxMs: number;
  /** Lateness of first claims per 10 s of due time: p50 / p99 / max (ms). */
  /** The machine's 1-minute load average (`os.loadavg`), sampled every 10 s of the run: min / mean / max. */
  readonly load: { readonly min: number; readonly mean: number; readonly max: number };
  readonly byDueBucket: readonly { readonly fromMs: number; readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number }[];
}

const VARIANTS: readonly Variant[] = [
  { driver: 'pg', discovery: 'poll' },
  { driver: 'postgres', discovery: 'hybrid' },
  { driver: 'postgres', discovery: 'poll' },
  { driver: 'pg', discovery: 'hybrid' },
];

/**
 * Runs the soak on a PostgreSQL server of its own.
 * @returns the checker's verdict and the figures of the run
 */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const server = await PgServer.start();
  try {
    return await withCaseContext(server.url, 'soak', (ctx) => soakIn(ctx, server, options));
  } finally {
    await server.close();
  }
}

async function soakIn(ctx: CaseContext, server: PgServer, o: SoakOptions): Promise<SoakReport> {
  const log = o.log ?? (() => {});
  const random = mulberry32(o.seed ?? 12_345); // the run's chaos replays from its seed
  const settings = { leaseMs: 2_000, renewEveryMs: 600, concurrency: 20, pollIntervalMs: 100, reclaimEveryMs: 500 };
  const run = new FaultRun(ctx, { settings: faultSettings(VARIANTS[0]!, settings), handler: { workMs: 20 } });
  await run.prepare();
  // One slot per worker; a killed worker is replaced by a fresh process in its slot.
  const slots: HarnessChild[] = [];
  let generation = 0;
  const windows: FaultWindow[] = [];
  const respawnMs: number[] = [];
  const spawnSlot = (i: number, killedAtMs?: number): HarnessChild => {
    const variant = VARIANTS[i % VARIANTS.length]!;
    const child = run.spawn(`s${i + 1}-${variantName(variant)}-g${++generation}`, {
      settings: faultSettings(variant, settings),
      connection: { driver: variant.driver, connectTimeoutMs: 3_000, waitForDatabase: true },
    });
    // Started once it is ready (a control sent earlier would reach no listener).
    const spawnedAt = Date.now();
    void child
      .waitFor('ready', () => true, 60_000)
      .then(() => {
        // A kill's window lasts until its replacement is ready (then `start` is sent).
        const readyAt = Date.now();
        if (killedAtMs !== undefined) {
          windows.push({ kind: 'kill', startMs: killedAtMs, endMs: readyAt });
          respawnMs.push(readyAt - spawnedAt);
        }
        return child.send({ type: 'start' });
      })
      .catch(() => {});
    return child;
  };
  for (let i = 0; i < o.workers; i++) slots.push(spawnSlot(i));
  await allReady(slots, 60_000);

  // Schedule everything up front, due over the run from `leadMs` after the first insert.
  const leadMs = o.leadMs ?? 500;
  const scheduleStarted = performance.now();
  await run.schedule(o.tasks, leadMs, o.durationMs, 10);
  const scheduleMs = Math.round(performance.now() - scheduleStarted);
  const scheduleOverlapMs = Math.max(0, scheduleMs - leadMs);
  log(`scheduled ${o.tasks} tasks in ${scheduleMs} ms, due over ${o.durationMs} ms from ${leadMs} ms after the first insert`);
  // The chaos and the restarts run over the due times: from the first one.
  await sleep(Math.max(0, scheduleStarted + leadMs - performance.now()));
  const startedAt = performance.now();
  const until = startedAt + o.durationMs;
  let kills = 0;
  let stops = 0;
  let restarts = 0;
  let cancelsSent = 0;
  let cancelErrors = 0;

  const chaos = (async () => {
    for (let i = 0; i < 10_000 && performance.now() < until; i++) {
      await sleep(o.chaosMinMs + random() * (o.chaosMaxMs - o.chaosMinMs));
      if (performance.now() >= until) break;
      const slot = Math.floor(random() * slots.length);
      const child = slots[slot]!;
      if (!child.alive) {
        slots[slot] = spawnSlot(slot);
        continue;
      }
      if (random() < 0.5) {
        run.killed.add(child);
        const killedAt = Date.now();
        await child.kill9().catch(() => {});
        kills++;
        slots[slot] = spawnSlot(slot, killedAt);
        log(`kill -9 ${child.name}`);
      } else {
        const stoppedAt = Date.now();
        child.sigstop();
        stops++;
        await sleep(500 + random() * 2_500);
        if (child.alive) child.sigcont();
        windows.push({ kind: 'stop', startMs: stoppedAt, endMs: Date.now() });
        log(`SIGSTOP/SIGCONT ${child.name}`);
      }
    }
  })();

  const restartsDone = (async () => {
    for (let r = 1; r <= o.restarts; r++) {
      await sleep(Math.max(0, startedAt + (r * o.durationMs) / (o.restarts + 1) - performance.now()));
      const downAt = Date.now();
      await server.stopImmediate();
      await sleep(o.restartOutageMs);
      await server.start();
      windows.push({ kind: 'restart', startMs: downAt, endMs: Date.now() });
      restarts++;
      log(`database restarted (${o.restartOutageMs} ms down)`);
    }
  })();

  const storm = (async () => {
    // At 40 % of the run, away from the restarts (spread evenly: at 1/2 with one, 1/3 and 2/3 with two).
    await sleep(Math.max(0, startedAt + o.durationMs * 0.4 - performance.now()));
    // Random tasks, some waiting, some running, some finished; 16 cancels in flight at once.
    const targets = Array.from({ length: o.cancels }, () => run.ids[Math.floor(random() * run.ids.length)]!);
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < targets.length) {
          const id = targets[next++]!;
          cancelsSent++;
          if ((await run.cancel(id)) === undefined) cancelErrors++;
        }
      }),
    );
    log(`cancel storm: ${cancelsSent} sent, ${cancelErrors} errors`);
  })();

  const loads: number[] = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0]!), 10_000);
  loads.push(loadavg()[0]!);
  await Promise.all([chaos, restartsDone, storm]).finally(() => clearInterval(loadTimer));
  for (const c of slots) if (c.alive) c.sigcont();
  log('chaos over; waiting for every task to be terminal');
  let allTerminal = true;
  let openAtEnd = 0;
  try {
    await run.waitAllTerminal(o.settleMs, 250);
  } catch {
    allTerminal = false;
    openAtEnd = o.tasks - (await ctx.db.countIn(['DONE', 'DEAD', 'CANCELLED'], run.ids));
  }
  const elapsedMs = performance.now() - startedAt;
  await run.stop();
  // A SIGKILLed worker may have claimed tasks whose reports never left it: at most its concurrency
  // each; and a claim call that rejected (its answer lost at a restart) may have committed its limit.
  run.recorder.unobservedClaimsAllowed = kills * settings.concurrency + run.unansweredClaims().attempts;
  const verdict = await run.judge();
  const cancelOutcomes: Record<string, number> = {};
  for (const op of run.recorder.ops) if (op.type === 'cancel') cancelOutcomes[op.outcome] = (cancelOutcomes[op.outcome] ?? 0) + 1;
  const late = run
    .claims()
    .map((c) => c.claimedAtMs - c.dueAtMs)
    .sort((a, b) => a - b);
  const q = (p: number) => (late.length === 0 ? -1 : late[Math.min(late.length - 1, Math.ceil(p * late.length) - 1)]!);
  const claims = run.claims();
  const split = splitLateness(claims, windows, settings.leaseMs);
  const byDueBucket = latenessByDueBucket(claims, 10_000).map((b) => ({ fromMs: b.fromMs, p50Ms: b.figures.p50Ms, p99Ms: b.figures.p99Ms, maxMs: b.figures.maxMs }));
  respawnMs.sort((a, b) => a - b);
  return {
    options: o,
    verdict,
    kills,
    stops,
    restarts,
    cancelsSent,
    cancelOutcomes,
    cancelErrors,
    processes: run.children.length,
    crashed: run.crashed(),
    allTerminal,
    openAtEnd,
    elapsedMs,
    latenessP50Ms: q(0.5),
    latenessP99Ms: q(0.99),
    errorsByOperation: run.errorsByOperation(),
    split,
    leaseMs: settings.leaseMs,
    scheduleMs,
    scheduleOverlapMs,
    respawnP50Ms: respawnMs[Math.floor(respawnMs.length / 2)] ?? Number.NaN,
    respawnMaxMs: respawnMs.at(-1) ?? Number.NaN,
    byDueBucket,
    load: { min: Math.min(...loads), mean: loads.reduce((a, b) => a + b, 0) / loads.length, max: Math.max(...loads) },
  };
}

/** The report as Markdown (evidence/soak.md). */
export function soakMarkdown(r: SoakReport, when: Date): string {
  const s = r.verdict.stats;
  const lines = [
    '# Soak',
    '',
    `Run ${when.toISOString()} by \`pnpm soak\` (packages/faultnet/scripts/soak.ts). Seed ${r.options.seed ?? 12_345}.`,
    '',
    `**Verdict: ${r.verdict.violations.length === 0 && r.allTerminal && r.crashed.length === 0 ? 'PASS' : 'FAIL'} — ${r.verdict.violations.length} violations** (history checker: claim before due, claim after CANCELLED, duplicate effect, effect not of the DONE attempt, lost task, terminal state changed, attempt not +1 per claim, stale commit accepted).`,
    '',
    '| figure | value |',
    '|---|---|',
    `| tasks | ${r.options.tasks} due over ${r.options.durationMs / 1000} s |`,
    `| scheduling (one \`scheduleMany\` per 1 000, workers running) | ${r.scheduleMs} ms; first due ${r.options.leadMs ?? 500} ms after it began; ran past the first due time by ${r.scheduleOverlapMs} ms |`,
    `| worker slots | ${r.options.workers} (pg poll, postgres.js hybrid, postgres.js poll, pg hybrid), ${r.processes} processes in all |`,
    `| SIGKILL | ${r.kills} (each replaced by a fresh process) |`,
    `| SIGSTOP/SIGCONT | ${r.stops} (0.5–3 s each) |`,
    `| database restarts | ${r.restarts} (immediate mode, ${r.options.restartOutageMs} ms down, same port) |`,
    `| cancels | ${r.cancelsSent} sent in one storm, ${r.cancelErrors} errors; outcomes ${JSON.stringify(r.cancelOutcomes)} |`,
    `| claims | ${s.claims} (unobserved, from killed workers: ${s.unobservedClaims}) |`,
    `| renewals | ${s.renewals} (refused ${s.renewalsRefused}) |`,
    `| completes / fails / releases / reclaims | ${s.completes} / ${s.fails} / ${s.releases} / ${s.reclaims} |`,
    `| effect rows (app_effect + history_effect) | ${s.effects} |`,
    `| final states | ${JSON.stringify(s.finalStates)} |`,
    `| every task terminal | ${r.allTerminal} (open at end: ${r.openAtEnd}) |`,
    `| worker crashes | ${r.crashed.length === 0 ? 'none' : r.crashed.join('; ')} |`,
    `| lateness p50 / p99 (database clock), all claims | ${r.latenessP50Ms} / ${r.latenessP99Ms} ms |`,
    `| lateness **outside** fault windows: claims, p50 / p99 / max | ${r.split.outside.claims}, ${r.split.outside.p50Ms} / ${r.split.outside.p99Ms} / ${r.split.outside.maxMs} ms |`,
    `| lateness **inside** fault windows: claims, p50 / p99 / max | ${r.split.inside.claims}, ${r.split.inside.p50Ms} / ${r.split.inside.p99Ms} / ${r.split.inside.maxMs} ms |`,
    `| share of the run's due times inside fault windows | ${Math.round(r.split.coveredShare * 100)} % |`,
    `| lease; replacement process spawn → ready, p50 / max | ${r.leaseMs} ms; ${r.respawnP50Ms} / ${r.respawnMaxMs} ms |`,
    `| worker store errors by operation | ${JSON.stringify(r.errorsByOperation)} |`,
    `| elapsed | ${Math.round(r.elapsedMs / 1000)} s |`,
    `| machine load (1-min load average during the chaos, ${cpus().length} cores): min / mean / max | ${r.load.min.toFixed(1)} / ${r.load.mean.toFixed(1)} / ${r.load.max.toFixed(1)} |`,
    '',
    `Violations by kind: ${JSON.stringify(r.verdict.counts)}`,
    '',
    '**Fault windows.** Each fault is a window of time by the host clock (the database server runs on the same host): a SIGKILL from the kill to its replacement process being ready; a SIGSTOP from the stop to the SIGCONT; a database restart from the immediate stop to the server accepting connections again. A claim is *inside* when its task\'s due time falls in `[start, end + lease]` of some window (the lease: how long the tasks a faulted process held stay locked), or when it is a re-claim (attempt ≥ 2: the handler never fails here, so only a fault takes an attempt\'s lease, and the re-claim keeps the first due time); every other claim is *outside*. Lateness is `claimedAt − dueAt` by the database clock (`packages/faultnet/src/soak-lateness.ts`). Targets (issue #26 item 11): outside p99 < 1 s, inside p99 < lease + restart time.',
    '',
    'Lateness of first claims by due time (10 s buckets from the first due time), p50 / p99 / max ms:',
    '',
    '| due from | p50 | p99 | max |',
    '|---|---|---|---|',
    ...r.byDueBucket.map((b) => `| ${b.fromMs / 1000} s | ${b.p50Ms} | ${b.p99Ms} | ${b.maxMs} |`),
    '',
  ];
  if (r.verdict.violations.length > 0) {
    lines.push('First violations:', '', ...r.verdict.violations.slice(0, 20).map((v) => `- ${v.kind} task ${v.taskId}: ${v.detail}`), '');
  }
  return lines.join('\n');
}
