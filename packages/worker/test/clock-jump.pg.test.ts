/**
 * A real worker while the database host's clock jumps (issue #26 item 7, README "Failure modes"): a
 * PostgreSQL server of its own under libfaketime (offset file read at every clock read), pg driver.
 * Four handlers run (1.5 s each, 3 s lease renewed every 1 s, the handler's effect row written with
 * DONE) when the server clock jumps.
 * - +1 h: every lease has less left than the jump, so it has run out: the next renewal is refused and
 *   the handler aborted (`leaseLost`), the attempt fails (or is reclaimed) — one failure — and the next
 *   attempt runs the task. Checked: every task DONE, one effect each, at most one failure per task.
 * - −1 h: the leases now look an hour longer; renewals go on, nothing is lost: every task DONE at
 *   attempt 1 with no failure, one effect each.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import { createDbClockShift, type DbClockShift } from '@postpone/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker } from '../src/index.js';
import { until } from './harness.js';

const HOUR_S = 3_600;
const SCHEMA = 'worker_clock_jump';

let server: EmbeddedDatabase;
let clock: DbClockShift;
let admin: pg.Client;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => void unhandled.push(reason);

/** The server's `clock_timestamp()` in ms. */
async function dbNowMs(): Promise<number> {
  const { rows } = await admin.query<{ ms: number }>('select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms');
  return rows[0]?.ms ?? Number.NaN;
}

async function setOffset(seconds: number): Promise<void> {
  await clock.set(seconds, dbNowMs);
}

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  clock = createDbClockShift('postpone-workerclock-');
  server = await startEmbeddedPostgres({ serverEnv: clock.serverEnv });
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const store = createPgStore({ connectionString: server.url, schema: SCHEMA });
  await store.migrate();
  await store.close();
  await admin.query(`create table ${SCHEMA}.effect_jump (task_id text primary key)`);
}, 240_000);

afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await admin?.end().catch(() => {});
  await server?.stop();
  clock?.dispose();
});

async function runAcross(jumpS: number): Promise<{ leaseLost: number; rows: { state: string; attempt: number; failures: number }[]; effects: number; runs: number }> {
  await setOffset(0);
  await admin.query(`truncate ${SCHEMA}.effect_jump`);
  const store = createPgStore({ connectionString: server.url, schema: SCHEMA });
  let runs = 0;
  let started = 0;
  const worker = createWorker<PgTx>({
    store,
    id: `w${jumpS}`,
    concurrency: 4,
    leaseMs: 3_000,
    pollIntervalMs: 20,
    completeBatchSize: 1,
    handlers: {
      job: async (task, ctx) => {
        runs++;
        started++;
        await sleep(1_500, undefined, { signal: ctx.signal });
        ctx.onCompleteTx(async (tx) => {
          await tx.query(`insert into ${SCHEMA}.effect_jump (task_id) values ($1)`, [task.id]);
        });
      },
    },
  });
  let leaseLost = 0;
  worker.on('leaseLost', () => void leaseLost++);
  try {
    const tasks = await store.scheduleMany(Array.from({ length: 4 }, () => ({ kind: 'job' })));
    worker.start();
    await until(() => started >= 4, 'four handlers running', 10_000);
    await sleep(300);
    await setOffset(jumpS);
    const ids = tasks.map((t) => t.id);
    await until(async () => (await Promise.all(ids.map((id) => store.getTask(id)))).every((t) => t?.state === 'DONE'), 'every task DONE', 20_000);
    const rows = (await Promise.all(ids.map((id) => store.getTask(id)))).map((t) => ({ state: String(t?.state), attempt: Number(t?.attempt), failures: Number(t?.failures) }));
    const [{ n } = { n: -1 }] = (await admin.query<{ n: number }>(`select count(distinct task_id)::int as n from ${SCHEMA}.effect_jump`)).rows;
    return { leaseLost, rows, effects: n, runs };
  } finally {
    await worker.stop({ timeoutMs: 2_000 });
    await store.close();
    await admin.query(`delete from ${SCHEMA}.task`);
    await setOffset(0);
  }
}

describe('a worker while the database clock jumps (pg)', () => {
  it('+1 h mid-handler: leases run out at the jump; every task DONE once, at most one failure each', async () => {
    const r = await runAcross(HOUR_S);
    console.log(`worker +1h: leaseLost=${r.leaseLost} runs=${r.runs} effects=${r.effects} rows=${JSON.stringify(r.rows)}`);
    expect(r.rows.every((t) => t.state === 'DONE')).toBe(true);
    expect(r.effects).toBe(4);
    expect(r.rows.every((t) => t.failures <= 1)).toBe(true);
    expect(unhandled).toEqual([]);
  }, 60_000);

  it('−1 h mid-handler: leases look an hour longer, renewals go on; every task DONE at attempt 1, no failure', async () => {
    const r = await runAcross(-HOUR_S);
    console.log(`worker -1h: leaseLost=${r.leaseLost} runs=${r.runs} effects=${r.effects} rows=${JSON.stringify(r.rows)}`);
    expect(r.rows).toEqual(Array.from({ length: 4 }, () => ({ state: 'DONE', attempt: 1, failures: 0 })));
    expect(r.leaseLost).toBe(0);
    expect(r.effects).toBe(4);
    expect(unhandled).toEqual([]);
  }, 60_000);
});
