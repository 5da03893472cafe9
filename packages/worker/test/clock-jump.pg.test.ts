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
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker } from '../src/index.js';
import { until } from './harness.js';

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
/** Installs Debian's libfaketime when missing (as the faultnet case `wall_clock_steps` does). */
const SETUP = new URL('../../faultnet/scripts/ensure-fault-tools.sh', import.meta.url).pathname;
const HOUR_S = 3_600;
const SCHEMA = 'worker_clock_jump';

let server: EmbeddedDatabase;
let dir: string;
let offsetFile: string;
let admin: pg.Client;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => void unhandled.push(reason);

async function setOffset(seconds: number): Promise<void> {
  writeFileSync(offsetFile, `${seconds >= 0 ? '+' : ''}${seconds}`);
  for (let i = 0; i < 50; i++) {
    const { rows } = await admin.query<{ ms: number }>('select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms');
    if (Math.abs((rows[0]?.ms ?? 0) - (Date.now() + seconds * 1_000)) < 60_000) return;
    await sleep(20);
  }
  throw new Error(`the server clock did not move to offset ${seconds} s`);
}

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  if (!existsSync(LIBFAKETIME)) execFileSync('sh', [SETUP], { stdio: 'inherit', timeout: 180_000 });
  if (!existsSync(LIBFAKETIME)) throw new Error(`libfaketime missing at ${LIBFAKETIME}: apt-get install -y faketime`);
  dir = mkdtempSync(join(tmpdir(), 'postpone-workerclock-'));
  chmodSync(dir, 0o755); // the server runs as the OS user postgres under root
  offsetFile = join(dir, 'offset');
  writeFileSync(offsetFile, '+0');
  chmodSync(offsetFile, 0o644);
  server = await startEmbeddedPostgres({
    serverEnv: { LD_PRELOAD: LIBFAKETIME, FAKETIME_TIMESTAMP_FILE: offsetFile, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' },
  });
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
  if (dir) rmSync(dir, { recursive: true, force: true });
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
