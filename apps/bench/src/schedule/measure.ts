/**
 * Scheduling throughput with notifications (issue 13, "Scheduling throughput"): `producers` processes
 * each call `schedule` one task at a time (autocommit) for `durationMs`, while `workers` hybrid worker
 * processes listen; run once per notice mode, each in a fresh schema. Every `probeEvery`-th task is a
 * probe due within about a second, which the workers claim: its lateness (claimed at − due at,
 * database clock) shows whether discovery still works under the notification load. The other tasks
 * are due in an hour (beyond the workers' wheel, whose notices they read and drop), so the workers
 * do not turn the run into a throughput test of claiming.
 *
 * PostgreSQL serialises the commits of transactions that sent a NOTIFY on one instance-wide lock
 * (PostgreSQL 17 NOTIFY: "the notification queue"); the modes compare a NOTIFY inside every schedule
 * statement (`each`), the store's coalesced NOTIFY after commit for tasks due within 30 s (`coalesced`), a NOTIFY in the
 * statement only for tasks due within 30 s (`near`, the default: here only the probes) and none (`off`).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { createPgStore } from '@postpone/postgres/pg';
import type { ChildMessage, ChildSettings, NoticeMode } from './messages.js';

export interface ScheduleRateOptions {
  readonly url: string;
  readonly producers: number;
  readonly workers: number;
  readonly durationMs: number;
  readonly modes: readonly NoticeMode[];
  readonly rounds: number;
  readonly probeEvery: number;
}

export interface ScheduleRateRun {
  readonly mode: NoticeMode;
  readonly round: number;
  readonly scheduled: number;
  readonly perSecond: number;
  /** NOTIFY statements the producers' coalescers sent (0 for `each` and `off`, whose notices ride in the schedule statement or do not exist). */
  readonly coalescedNotifies: number;
  readonly probes: number;
  readonly probesClaimed: number;
  readonly lateness: { readonly p50: number | null; readonly p99: number | null; readonly max: number | null };
  readonly claims: number;
  readonly emptyClaims: number;
}

export const SCHEDULE_RATE_DEFAULTS = Object.freeze({ producers: 8, workers: 3, durationMs: 10_000, modes: ['near', 'each', 'coalesced', 'off'] as NoticeMode[], rounds: 3, probeEvery: 50 });

const child = fileURLToPath(new URL('./child.js', import.meta.url));
const SETTLE_MS = 2_500;

function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? null;
}

interface Child {
  readonly next: (type: ChildMessage['type']) => Promise<ChildMessage>;
  readonly send: (message: { type: 'go' | 'stop' }) => void;
  readonly kill: () => void;
}

function spawnChild(settings: ChildSettings): Child {
  const proc = fork(child, [JSON.stringify(settings)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map<string, (m: ChildMessage) => void>();
  const arrived = new Map<string, ChildMessage>();
  proc.on('message', (m: ChildMessage) => {
    const resolve = waiting.get(m.type);
    if (resolve) {
      waiting.delete(m.type);
      resolve(m);
    } else arrived.set(m.type, m);
  });
  return {
    next: (type) =>
      new Promise((resolve, reject) => {
        const early = arrived.get(type);
        if (early) return resolve(early);
        waiting.set(type, resolve);
        proc.once('exit', (code) => (waiting.has(type) ? reject(new Error(`bench child (${settings.role}) exited with ${code} before '${type}'`)) : undefined));
      }),
    send: (message) => proc.send(message),
    kill: () => proc.kill('SIGKILL'),
  };
}

/** One run of one mode in a fresh schema (dropped afterwards). */
export async function runScheduleRateOnce(options: ScheduleRateOptions, mode: NoticeMode, round: number): Promise<ScheduleRateRun> {
  const schema = uniqueSchemaName('bench_schedule');
  const admin = createPgStore({ connectionString: options.url, schema });
  await admin.migrate();
  await admin.close();
  const base = { url: options.url, schema, notices: mode, durationMs: options.durationMs, probeEvery: options.probeEvery, probeDelayMs: 300, probeSpreadMs: 700, bulkDelayMs: 3_600_000 };
  const children: Child[] = [];
  try {
    const workers = Array.from({ length: options.workers }, () => spawnChild({ ...base, role: 'worker' }));
    children.push(...workers);
    await Promise.all(workers.map((w) => w.next('ready')));
    const producers = Array.from({ length: options.producers }, () => spawnChild({ ...base, role: 'producer' }));
    children.push(...producers);
    await Promise.all(producers.map((p) => p.next('ready')));
    for (const p of producers) p.send({ type: 'go' });
    const produced = (await Promise.all(producers.map((p) => p.next('produced')))) as Extract<ChildMessage, { type: 'produced' }>[];
    // The last probes are due up to a second after the producers stop; with notices off the fallback read (2 s) finds them.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    for (const w of workers) w.send({ type: 'stop' });
    const claimed = (await Promise.all(workers.map((w) => w.next('claimed')))) as Extract<ChildMessage, { type: 'claimed' }>[];
    const scheduled = produced.reduce((n, p) => n + p.scheduled, 0);
    const lateness = claimed.flatMap((c) => c.lateness).sort((a, b) => a - b);
    return {
      mode,
      round,
      scheduled,
      perSecond: Math.round(scheduled / (options.durationMs / 1_000)),
      coalescedNotifies: produced.reduce((n, p) => n + p.notifies, 0),
      probes: produced.reduce((n, p) => n + p.probes, 0),
      probesClaimed: lateness.length,
      lateness: { p50: quantile(lateness, 0.5), p99: quantile(lateness, 0.99), max: lateness.at(-1) ?? null },
      claims: claimed.reduce((n, c) => n + c.claims, 0),
      emptyClaims: claimed.reduce((n, c) => n + c.emptyClaims, 0),
    };
  } finally {
    for (const c of children) c.kill();
    await dropSchema(options.url, schema).catch(() => undefined);
  }
}

/**
 * Every mode, `rounds` times; round r runs the modes rotated by r − 1 (near, each, coalesced, off;
 * then each, coalesced, off, near; …), so a machine that speeds up or slows down over the run does not
 * favour the mode that always comes last.
 */
export async function runScheduleRate(options: ScheduleRateOptions, onRun?: (run: ScheduleRateRun) => void): Promise<ScheduleRateRun[]> {
  const runs: ScheduleRateRun[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    const shift = (round - 1) % options.modes.length;
    for (const mode of [...options.modes.slice(shift), ...options.modes.slice(0, shift)]) {
      const run = await runScheduleRateOnce(options, mode, round);
      runs.push(run);
      onRun?.(run);
    }
  }
  return runs;
}
