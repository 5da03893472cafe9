/**
 * Evidence case `cron_exactly_once` (docs/contract.md#recurring-schedules): 3 real node processes,
 * each running a cron scheduler (every second, horizon 3 s, a pass every 20 ms so that passes of different processes overlap) and a polling
 * worker on one PostgreSQL schema (`test/fixtures/cron-child.mjs`, the built packages). Over a
 * window of 20 occurrences, every occurrence must be exactly one task and one run; and across the
 * whole run no occurrence may have two tasks.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { recordCase } from '@postpone/testkit';
import { createPgStore } from '@postpone/postgres/pg';
import { pollUntil, withTimeout } from '@postpone/testkit';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

const CHILD = fileURLToPath(new URL('./fixtures/cron-child.mjs', import.meta.url));
const PROCESSES = 3;
const OCCURRENCES = 20;

interface Summary {
  pid: number;
  scheduled: number;
  passed: number;
  passes: number;
  runs: number;
  errors: string[];
}

function startChild(url: string, schema: string): { child: ChildProcess; ready: Promise<void>; summary: Promise<Summary> } {
  const child = spawn(process.execPath, [CHILD, JSON.stringify({ url, schema })], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes('ready\n')) markReady();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const summary = new Promise<Summary>((resolve, reject) => {
    // 'close', not 'exit': 'exit' may come before the summary line on stdout has been read.
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line === undefined) reject(new Error(`child ${child.pid} exited ${code} without a summary; stderr: ${err.slice(0, 2_000)}`));
      else resolve(JSON.parse(line) as Summary);
    });
  });
  summary.catch(() => {});
  return { child, ready, summary };
}

describe('cron_exactly_once', () => {
  const url = testDatabaseUrl();
  const schema = uniqueSchemaName('cron_once');
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const children: ChildProcess[] = [];

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await pool.end();
    await dropSchema(url, schema);
  });

  it('3 processes, a schedule every second: each of 20 occurrences is exactly one task and one run', async () => {
    const setup = createPgStore({ connectionString: url, schema });
    await setup.migrate();
    await pool.query(`create table "${schema}".cron_run (task_id bigint not null, occurrence text not null, pid int not null, ran_at timestamptz not null default clock_timestamp())`);
    const procs = Array.from({ length: PROCESSES }, () => startChild(url, schema));
    children.push(...procs.map((p) => p.child));
    await withTimeout(Promise.all(procs.map((p) => p.ready)), 30_000, 'children ready');

    // The window: 20 whole seconds starting 2 s after the database's now.
    const nowMs = (await setup.now()).getTime();
    const first = Math.ceil(nowMs / 1000) * 1000 + 2_000;
    const window = Array.from({ length: OCCURRENCES }, (_, i) => new Date(first + i * 1000).toISOString());
    const doneInWindow = async () => {
      const { rows } = await pool.query<{ n: number }>(
        `select count(*)::int as n from "${schema}".task_history where kind = 'tick' and state = 'DONE' and payload->>'occurrence' = any($1::text[])`,
        [window],
      );
      return (rows[0]?.n ?? 0) >= OCCURRENCES;
    };
    await pollUntil(doneInWindow, { timeoutMs: OCCURRENCES * 1000 + 30_000, intervalMs: 200, what: '20 occurrences done' }).catch(() => false);
    for (const p of procs) p.child.kill('SIGTERM');
    const summaries = await withTimeout(Promise.all(procs.map((p) => p.summary)), 30_000, 'children summaries');
    await setup.close();

    const tasks = (
      await pool.query<{ id: string; state: string; occurrence: string; dueat: Date }>(
        `select id::text, state, payload->>'occurrence' as occurrence, due_at as dueat from "${schema}".task where kind = 'tick'
          union all select id::text, state, payload->>'occurrence', due_at from "${schema}".task_history where kind = 'tick'`,
      )
    ).rows;
    const runs = (await pool.query<{ task_id: string; occurrence: string; ran_at: Date }>(`select task_id::text, occurrence, ran_at from "${schema}".cron_run`)).rows;
    // Each DONE's record in history, with the worker that completed it (migration 13; the library writes no effect row).
    const effects = (await pool.query<{ task_id: string }>(`select id::text as task_id from "${schema}".task_history where state = 'DONE' and finished_by is not null`)).rows;

    const perOccurrence = new Map<string, number>();
    for (const t of tasks) perOccurrence.set(t.occurrence, (perOccurrence.get(t.occurrence) ?? 0) + 1);
    const duplicateOccurrences = [...perOccurrence.values()].filter((n) => n > 1).length;
    const dueMismatch = tasks.filter((t) => t.dueat.toISOString() !== t.occurrence).length;
    const inWindow = tasks.filter((t) => window.includes(t.occurrence));
    const windowIds = new Set(inWindow.map((t) => t.id));
    const windowRuns = runs.filter((r) => windowIds.has(r.task_id));
    const windowEffects = effects.filter((e) => windowIds.has(e.task_id));
    const runsPerTask = new Map<string, number>();
    for (const r of runs) runsPerTask.set(r.task_id, (runsPerTask.get(r.task_id) ?? 0) + 1);
    const tasksRunTwice = [...runsPerTask.values()].filter((n) => n > 1).length;
    const missing = window.filter((o) => !perOccurrence.has(o)).length;
    const notDone = inWindow.filter((t) => t.state !== 'DONE').length;
    const lateness = windowRuns.map((r) => r.ran_at.getTime() - Date.parse(r.occurrence));
    const scheduledTotal = summaries.reduce((s, x) => s + x.scheduled, 0);
    const errors = summaries.flatMap((s) => s.errors);

    const pass =
      inWindow.length === OCCURRENCES &&
      missing === 0 &&
      notDone === 0 &&
      windowRuns.length === OCCURRENCES &&
      windowEffects.length === OCCURRENCES &&
      duplicateOccurrences === 0 &&
      tasksRunTwice === 0 &&
      dueMismatch === 0 &&
      scheduledTotal === tasks.length &&
      Math.min(...lateness) >= 0 &&
      errors.length === 0;
    recordCase('cron_exactly_once', pass, {
      processes: PROCESSES,
      occurrences: OCCURRENCES,
      tasksInWindow: inWindow.length,
      runsInWindow: windowRuns.length,
      completionsInWindow: windowEffects.length,
      missing,
      notDone,
      duplicateOccurrences,
      tasksRunTwice,
      tasksTotal: tasks.length,
      scheduledByProcess: summaries.map((s) => s.scheduled),
      passedByProcess: summaries.map((s) => s.passed),
      runsByProcess: summaries.map((s) => s.runs),
      minLatenessMs: Math.min(...lateness),
      maxLatenessMs: Math.max(...lateness),
      errors: errors.length,
    });
    expect(errors).toEqual([]);
    expect({ inWindow: inWindow.length, missing, notDone, runs: windowRuns.length, completions: windowEffects.length }).toEqual({
      inWindow: OCCURRENCES,
      missing: 0,
      notDone: 0,
      runs: OCCURRENCES,
      completions: OCCURRENCES,
    });
    expect({ duplicateOccurrences, tasksRunTwice, dueMismatch }).toEqual({ duplicateOccurrences: 0, tasksRunTwice: 0, dueMismatch: 0 });
    expect(scheduledTotal).toBe(tasks.length);
    expect(Math.min(...lateness)).toBeGreaterThanOrEqual(0);
  });
});
