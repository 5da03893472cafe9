/**
 * Shutdown order (issue #26 item 6, README "Failure modes", evidence `shutdown_order`). During a
 * graceful stop, lease renewals go on until the last handler ends or is handed back; an application
 * that ends its pool right after `stop()` resolves, or while it runs, gets a typed error at most,
 * and no task stays CLAIMED longer than its lease.
 *
 * (a) in this process: a handler longer than the lease, `stop()` with `shutdownTimeoutMs` above the
 *     lease, and a second worker reclaiming every 100 ms: the task is DONE at attempt 1, never
 *     reclaimed, renewed while `stop()` waited for it.
 * (b) a real child process (`fixtures/shutdown-child.mjs`, the built packages) per driver × when the
 *     pool ends (after `stop()`, during it), with handlers that ignore their signal: exit code 0, no
 *     unhandled rejection, uncaught exception or pool 'error' event, empty stderr, the store calls
 *     after the end reject with a typed error; then, one lease later, a second worker in this
 *     process takes every task left CLAIMED (reclaim) and all end DONE.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TaskState } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import { recordCase, withTimeout } from '@postpone/testkit';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createWorker } from '../src/index.js';
import { until } from './harness.js';

const CHILD = fileURLToPath(new URL('./fixtures/shutdown-child.mjs', import.meta.url));
const url = testDatabaseUrl();
const schemas: string[] = [];
const fields: Record<string, number | string | boolean> = {};
let pass = true;

afterAll(async () => {
  recordCase('shutdown_order', pass, fields);
  for (const schema of schemas) await dropSchema(url, schema);
});

function schemaFor(name: string): string {
  const schema = uniqueSchemaName(name);
  schemas.push(schema);
  return schema;
}

/** Runs `body`, turning the case's verdict to FAIL when it throws. */
async function judged(body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    pass = false;
    throw error;
  }
}

describe('shutdown order', () => {
  it('(a) a handler longer than the lease finishes during stop(): renewed until it ends, DONE at attempt 1, never reclaimed', () =>
    judged(async () => {
      const schema = schemaFor('shutdown_a');
      const store = createPgStore({ connectionString: url, schema });
      const other = createPgStore({ connectionString: url, schema });
      await store.migrate();
      const leaseMs = 600;
      const { id } = await store.schedule({ kind: 'slow', payload: null });
      let started = false;
      const worker = createWorker({
        store,
        leaseMs,
        renewEveryMs: 150,
        pollIntervalMs: 20,
        shutdownTimeoutMs: 5_000,
        unclaimedAfterMs: null,
        handlers: {
          slow: async () => {
            started = true;
            await new Promise((resolve) => setTimeout(resolve, 3 * leaseMs));
            return 'slow and done';
          },
        },
      });
      let renewedDuringStop = 0;
      let stopping = false;
      worker.on('renewed', () => {
        if (stopping) renewedDuringStop += 1;
      });
      // The second worker only reclaims: it has no handler for `slow`, and reclaims every 100 ms.
      const reclaimer = createWorker({ store: other, leaseMs, reclaimEveryMs: 100, pollIntervalMs: 20, unclaimedAfterMs: null, handlers: { other: async () => null } });
      const reclaimed: string[] = [];
      reclaimer.on('reclaimed', ({ task }) => void reclaimed.push(task.id));
      try {
        worker.start();
        reclaimer.start();
        await until(() => started, 'the slow handler started');
        stopping = true;
        const result = await withTimeout(worker.stop(), 10_000, 'stop()');
        const task = await other.getTask(id);
        fields.a_state = String(task?.state);
        fields.a_attempt = Number(task?.attempt);
        fields.a_renewedDuringStop = renewedDuringStop;
        fields.a_reclaimed = reclaimed.length;
        fields.a_handedBack = result.handedBack;
        expect(result.handedBack).toBe(0);
        expect(task?.state).toBe(TaskState.DONE);
        expect(task?.attempt).toBe(1);
        expect(reclaimed).toEqual([]);
        // 3 leases long with a renewal every 150 ms: the keeper renewed while stop() waited.
        expect(renewedDuringStop).toBeGreaterThanOrEqual(3);
      } finally {
        await reclaimer.stop({ timeoutMs: 0 });
        await store.close();
        await other.close();
      }
    }), 30_000);

  describe.each([
    ['pg', 'after'],
    ['pg', 'during'],
    ['postgres-js', 'after'],
    ['postgres-js', 'during'],
  ] as const)('(b) %s: the application ends its pool %s stop()', (driver, end) => {
    it('no unhandled rejection or error event, a typed error at most, nothing CLAIMED past one lease', () =>
      judged(async () => {
        const tag = `${driver === 'pg' ? 'pg' : 'pjs'}_${end}`;
        const schema = schemaFor(`shutdown_${tag}`);
        const store = createPgStore({ connectionString: url, schema });
        await store.migrate();
        const leaseMs = 1_000;
        // One handler ends within shutdownTimeoutMs (300 ms), one runs past it and is handed back (or
        // left CLAIMED when the pool is gone): both ignore their signal.
        await store.schedule({ kind: 'job', payload: { ms: 150 } });
        await store.schedule({ kind: 'job', payload: { ms: 2_000 } });
        const child = spawn(process.execPath, [CHILD, JSON.stringify({ url, schema, driver, end, leaseMs, tasks: 2 })], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => void (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => void (stderr += d.toString()));
        const code = await withTimeout(
          new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c))),
          30_000,
          'the child exits',
        ).catch((error) => {
          child.kill('SIGKILL');
          throw error;
        });
        const line = stdout.split('\n').find((l) => l.startsWith('result '));
        const report = JSON.parse(line?.slice('result '.length) ?? '{}') as {
          stopOutcome: { ok: boolean; result?: { handedBack: number; handBackFailed: number }; code?: string };
          api: { call: string; ok?: boolean; typed?: boolean; code?: string }[];
          errors: { operation: string; name?: string; code?: string }[];
          counts: { unhandledRejections: number; uncaughtExceptions: number; poolErrors: number };
          seen: string[];
        };
        const claimedLeft = await countClaimed(schema);
        fields[`${tag}_exit`] = code ?? -1;
        fields[`${tag}_unhandled`] = (report.counts?.unhandledRejections ?? -1) + (report.counts?.uncaughtExceptions ?? -1);
        fields[`${tag}_poolErrors`] = report.counts?.poolErrors ?? -1;
        fields[`${tag}_stop`] = report.stopOutcome?.ok
          ? `ok:handedBack=${report.stopOutcome.result?.handedBack}/failed=${report.stopOutcome.result?.handBackFailed}`
          : `rejected:${report.stopOutcome?.code}`;
        fields[`${tag}_afterEnd`] = (report.api ?? []).map((a) => `${a.call}:${a.ok ? 'ok' : (a.code ?? 'untyped')}`).join(',');
        fields[`${tag}_claimedLeft`] = claimedLeft;
        fields[`${tag}_workerErrors`] = [...new Set((report.errors ?? []).map((e) => `${e.operation}:${e.code ?? e.name}`))].join(',') || 'none';
        expect({ code, stderr, seen: report.seen }).toEqual({ code: 0, stderr: '', seen: [] });
        expect(report.counts).toEqual({ unhandledRejections: 0, uncaughtExceptions: 0, poolErrors: 0 });
        for (const call of report.api) if (call.ok === false) expect(call.typed, `${call.call} rejects with a typed error`).toBe(true);
        // The worker's own failed calls after the end are `error` events carrying a typed error.
        for (const e of report.errors ?? []) expect(typeof e.code, `${e.operation} error ${e.name} is typed`).toBe('string');

        // Nothing CLAIMED beyond its lease: every lease left ends within one lease of now, and a
        // second worker takes those tasks over (reclaim) and finishes them all.
        // stop() counts a hand-back that did not reach the store as failed: each such task is still CLAIMED.
        if (report.stopOutcome?.ok) expect(report.stopOutcome.result?.handBackFailed ?? -1).toBe(Math.min(claimedLeft, report.stopOutcome.result?.handedBack ?? 0));
        const leases = await leaseEndsWithin(schema);
        const leaseEndAt = Date.now() + leases;
        // When the last lease left behind ends, in ms from the child's exit (≤ the lease; negative: it ended that long before).
        fields[`${tag}_leaseEndsInMs`] = Math.round(leases);
        expect(leases).toBeLessThanOrEqual(leaseMs);
        const second = createWorker({ store, leaseMs, reclaimEveryMs: 100, pollIntervalMs: 20, unclaimedAfterMs: null, handlers: { job: async () => 'second' } });
        let reclaimed = 0;
        let lastReclaimAt = 0;
        second.on('reclaimed', () => {
          reclaimed += 1;
          lastReclaimAt = Date.now();
        });
        second.start();
        const secondStartedAt = Date.now();
        try {
          await until(async () => (await store.countByState())[TaskState.DONE] === 2, 'both tasks DONE', 3 * leaseMs + 5_000);
        } finally {
          await second.stop({ timeoutMs: 0 });
          await store.close();
        }
        fields[`${tag}_reclaimedBySecond`] = reclaimed;
        // Reported, not asserted (wall clock): how long a task stayed CLAIMED past the end of its lease once a
        // worker was there to reclaim it (reclaimEveryMs 100), from the later of the lease's end and its start.
        fields[`${tag}_claimedPastLeaseMs`] = reclaimed > 0 ? Math.max(0, Math.round(lastReclaimAt - Math.max(leaseEndAt, secondStartedAt))) : 'none';
        expect(reclaimed).toBeLessThanOrEqual(claimedLeft);
      }), 60_000);
  });
});

async function countClaimed(schema: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(`select count(*)::int as n from "${schema}".task where state = 'CLAIMED'`);
    return rows[0]?.n ?? -1;
  } finally {
    await client.end();
  }
}

/** The longest time any CLAIMED task's lease still runs, in ms of the database clock (0 when none). */
async function leaseEndsWithin(schema: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ ms: number }>(
      `select coalesce(max(extract(epoch from (lease_until - now())) * 1000), 0)::float8 as ms from "${schema}".task where state = 'CLAIMED'`,
    );
    return rows[0]?.ms ?? -1;
  } finally {
    await client.end();
  }
}
