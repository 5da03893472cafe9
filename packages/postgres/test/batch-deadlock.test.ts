/**
 * Evidence `batch_deadlock` (issue #26 item 5, README "Failure modes"): 4 processes — on `pg` and
 * postgres.js, 2 scheduling batches of keyed tasks in shuffled key order, 2 claiming, renewing and
 * completing batches listed in shuffled id order — for a few seconds over 48 shared keys. Every
 * statement that waits for row locks takes them in id order, so none is a deadlock victim:
 * `pg_stat_database.deadlocks` does not move and no call fails. The forced interleaving that
 * deadlocked before the fix is `lock-order.test.ts`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { recordCase } from '@postpone/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { migratedSchema } from './support/kits.js';

const admin = migratedSchema('batch_deadlock');
const CHILD = fileURLToPath(new URL('./support/batch-child.mjs', import.meta.url));
const DURATION_MS = 8_000;
const MAX_ROUNDS = 5_000;
const DEADLINE_MS = 60_000;

interface ChildResult {
  readonly role: 'schedule' | 'work';
  readonly driver: string;
  readonly rounds: number;
  readonly items: number;
  readonly errors: Readonly<Record<string, number>>;
}

function startChild(role: ChildResult['role'], driver: 'pg' | 'postgres', seed: number): { child: ChildProcess; ready: Promise<void>; result: Promise<ChildResult> } {
  const child = spawn(process.execPath, [CHILD, role, driver, admin.url, admin.schema, String(seed), String(DURATION_MS), String(MAX_ROUNDS)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  const result = new Promise<ChildResult>((resolve, reject) => {
    lines.on('line', (line) => (line === 'ready' ? onReady() : resolve(JSON.parse(line) as ChildResult)));
    // 'close', not 'exit': 'exit' may come before the last line on stdout has been read.
    child.on('close', (code) => reject(new Error(`${role} process exited with ${code} before reporting`)));
  });
  return { child, ready, result };
}

async function deadlocks(): Promise<number> {
  const [row] = await admin.query<{ n: number }>('select deadlocks::int as n from pg_stat_database where datname = current_database()');
  return row?.n ?? -1;
}

describe('evidence: batch_deadlock', () => {
  afterAll(() => admin.truncate());

  it('scheduleMany with keys in shuffled order against completeMany/extendMany in shuffled order: 0 deadlocks, 0 failed calls', { timeout: DEADLINE_MS + 10_000 }, async () => {
    const before = await deadlocks();
    const plan = [
      ['schedule', 'pg', 1],
      ['schedule', 'postgres', 2],
      ['work', 'pg', 3],
      ['work', 'postgres', 4],
    ] as const;
    const children = plan.map(([role, driver, seed]) => startChild(role, driver, seed));
    const timer = setTimeout(() => {
      for (const c of children) c.child.kill('SIGKILL');
    }, DEADLINE_MS);
    let results: ChildResult[];
    try {
      await Promise.all(children.map((c) => c.ready));
      for (const c of children) c.child.stdin?.write('go\n');
      results = await Promise.all(children.map((c) => c.result));
    } finally {
      clearTimeout(timer);
      for (const c of children) c.child.stdin?.end();
    }
    // The children's sessions have ended, so their counters are flushed (PostgreSQL 17 §27.2.2).
    const after = await deadlocks();
    const errors: Record<string, number> = {};
    for (const r of results) for (const [code, n] of Object.entries(r.errors)) errors[code] = (errors[code] ?? 0) + n;
    const [live] = await admin.query<{ n: number; keys: number }>(
      `select count(*)::int as n, count(distinct key)::int as keys from ${admin.t('task')} where kind = 'batch-lock'`,
    );
    const [done] = await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task_history')} where kind = 'batch-lock' and state = 'DONE'`);
    const sum = (role: ChildResult['role'], field: 'rounds' | 'items') => results.filter((r) => r.role === role).reduce((s, r) => s + r[field], 0);
    const fields = {
      processes: results.length,
      durationMs: DURATION_MS,
      scheduleBatches: sum('schedule', 'rounds'),
      scheduledItems: sum('schedule', 'items'),
      workRounds: sum('work', 'rounds'),
      completed: sum('work', 'items'),
      doneInHistory: done?.n ?? -1,
      liveTasks: live?.n ?? -1,
      liveKeys: live?.keys ?? -1,
      deadlocks: after - before,
      failedCalls: Object.values(errors).reduce((s, n) => s + n, 0),
      errorCodes: Object.entries(errors).map(([code, n]) => `${code}=${n}`),
    };
    const pass =
      fields.deadlocks === 0 &&
      fields.failedCalls === 0 &&
      results.every((r) => r.rounds > 0) &&
      fields.completed > 0 &&
      fields.completed === fields.doneInHistory &&
      fields.liveTasks === fields.liveKeys;
    recordCase('batch_deadlock', pass, fields);
    expect(fields.deadlocks).toBe(0);
    expect(errors).toEqual({});
    expect(results.every((r) => r.rounds > 0)).toBe(true);
    expect(fields.completed).toBeGreaterThan(0);
    // Every DONE the workers were told of is in history, and the unique key index held: one live task per key.
    expect(fields.doneInHistory).toBe(fields.completed);
    expect(fields.liveTasks).toBe(fields.liveKeys);
  });
});
