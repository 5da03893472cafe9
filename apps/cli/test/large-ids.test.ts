/**
 * Evidence `large_ids` (issue #26 item 3): task ids are PostgreSQL `bigint`s, decimal text in the API.
 * For each boundary — 2³¹ and 2⁵³ — and each driver (`pg`, postgres.js), a fresh schema has its id
 * sequence restarted at boundary − 5 (`alter table task alter column id restart with …`), so ids cross
 * the boundary during the run, then: schedule and scheduleMany (dedup keys included), a real worker
 * (`createWorker`) claiming and running them (one fails once and is retried by the worker, one goes
 * DEAD), the admin `retry` of the DEAD task (retry_of / retried_as across the boundary), cancel,
 * getTask, listTasks paged with a cursor both ways, claim + completeMany, the built CLI binary
 * (`list --json` paged, `show`, `retry`, `cancel`), the dashboard's JSON API (`/api/tasks` paged,
 * `/api/tasks/:id`), and a cron schedule (`packages/cron`) firing every second across the boundary
 * (its own schema, restarted at boundary − 1). Every id is compared as exact text against
 * `id::text` read from the database — never through `Number`.
 *
 * Then the top of the range: ids up to 9223372036854775807 (bigint max) are listed, shown and
 * retried like any other, and the next schedule fails with StoreError 2200H (sequence exhausted).
 *
 * Payload integers: ±(2⁵³−1), 2³¹ and a 2⁵³+1 carried as a string come back unchanged from claim,
 * the DONE result, retry, the CLI and the dashboard; 2⁵³ as a number is refused (UNSAFE_INTEGER) by
 * schedule, scheduleMany and the CLI's `schedule --payload`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { type Json, type TaskRecord, ValidationError } from '@postpone/core';
import { createCronScheduler } from '@postpone/cron';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import type { PostgresStore } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import { createPostgresJsStore } from '@postpone/postgres/postgres-js';
import { recordCase } from '@postpone/testkit';
import { createWorker } from '@postpone/worker';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = join(import.meta.dirname, '..', 'bin', 'postpone.js');
const BIGINT_MAX = 9223372036854775807n;
const BOUNDARIES = { '2^31': 2n ** 31n, '2^53': 2n ** 53n } as const;
const DRIVERS = ['pg', 'postgres'] as const;
type DriverName = (typeof DRIVERS)[number];
type AnyStore = PostgresStore<unknown>;

/** Payload integers at the edges of what JSON carries exactly, and one past it as text. */
const EDGE_PAYLOAD = { max: 9007199254740991, min: -9007199254740991, n31: 2147483648, big: '9007199254740993' } as const;

let url = '';
let pool: pg.Pool;
const schemas: string[] = [];
const children: ChildProcess[] = [];

/** Exact comparisons; every mismatch is kept (with its label) for the CASE line and the assertion. */
class Checks {
  n = 0;
  readonly mismatches: string[] = [];
  eq(label: string, actual: unknown, expected: unknown): void {
    this.n++;
    const a = canonical(actual);
    const e = canonical(expected);
    if (a !== e) this.mismatches.push(`${label}: got ${a}, expected ${e}`);
  }
  ok(label: string, cond: boolean): void {
    this.n++;
    if (!cond) this.mismatches.push(label);
  }
}

/** JSON text with object keys sorted (jsonb keeps its own key order), numbers as JavaScript holds them. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
const big = (id: string) => BigInt(id);
const sortIds = (ids: readonly string[]) => [...ids].sort((a, b) => (big(a) < big(b) ? -1 : big(a) > big(b) ? 1 : 0));
const increasing = (ids: readonly string[]) => ids.every((id, i) => i === 0 || big(id) > big(ids[i - 1] as string));

function makeStore(driver: DriverName, schema: string): AnyStore {
  return (driver === 'pg' ? createPgStore({ connectionString: url, schema }) : createPostgresJsStore({ connectionString: url, schema })) as AnyStore;
}

async function freshSchema(prefix: string, driver: DriverName, restartAt: bigint): Promise<{ schema: string; store: AnyStore }> {
  const schema = uniqueSchemaName(prefix);
  schemas.push(schema);
  const store = makeStore(driver, schema);
  await store.migrate();
  await pool.query(`alter table "${schema}".task alter column id restart with ${restartAt.toString()}`);
  return { schema, store };
}

/** Every task row (live and finished) as exact text, by id. */
async function dbRows(schema: string): Promise<{ id: string; state: string; retryof: string | null; retriedas: string | null }[]> {
  const cols = 'id::text as id, state, retry_of::text as retryof, retried_as::text as retriedas';
  const { rows } = await pool.query(`select * from (select ${cols}, id as n from "${schema}".task union all select ${cols}, id from "${schema}".task_history) r order by n`);
  return rows.map(({ n: _n, ...r }) => r);
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(schema: string, args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--schema', schema, ...args], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

async function cliJson<T>(schema: string, args: readonly string[]): Promise<T> {
  const r = await cli(schema, ['--json', ...args]);
  if (r.code !== 0) throw new Error(`postpone ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** Starts the built binary's dashboard for `schema` on 127.0.0.1, port 0. */
function startDashboard(schema: string): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [BIN, '--schema', schema, 'dashboard', '--port', '0'], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`dashboard did not start: ${err}`)), 30_000);
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve({ child, base: m[1] as string });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`dashboard exited with ${code}: ${err}`));
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** GET `target` → parsed JSON body (the dashboard's API). */
function getJson<T>(target: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request(target, { method: 'GET', timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body) as T) : reject(new Error(`GET ${target}: ${res.statusCode} ${body}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${target} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** All ids of listTasks in `order`, page by page (`limit` small, so a cursor sits at the boundary). */
async function listAll(store: AnyStore, order: 'oldest' | 'newest', limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page = await store.listTasks({ order, limit, cursor });
    ids.push(...page.tasks.map((t) => t.id));
    cursor = page.nextCursor;
    pages++;
  } while (cursor !== null);
  return { ids, pages };
}

interface SegmentCounts {
  ids: number;
  below: number;
  atOrAbove: number;
}

/** The API, worker, CLI and dashboard run for one boundary on one driver. */
async function apiSegment(boundary: bigint, driver: DriverName, c: Checks): Promise<SegmentCounts> {
  const tag = `${driver}@${boundary}`;
  const { schema, store } = await freshSchema('lid', driver, boundary - 5n);
  const seen = new Map<string, Json>();
  try {
    const created: string[] = [];
    const add = (id: string) => {
      created.push(id);
      return id;
    };
    // schedule: ids boundary-5 .. boundary-3
    const ok1 = add((await store.schedule({ kind: 'work', payload: { mode: 'ok', ...EDGE_PAYLOAD } })).id);
    const dead1 = add((await store.schedule({ kind: 'work', key: 'k-dead', payload: { mode: 'dead', ...EDGE_PAYLOAD }, maxAttempts: 1 })).id);
    const man1 = add((await store.schedule({ kind: 'manual', payload: { n: 1 } })).id);
    c.eq(`${tag} first id`, ok1, (boundary - 5n).toString());
    // scheduleMany across the boundary, with keys
    const many = await store.scheduleMany([
      { kind: 'manual', payload: { n: 2 } },
      { kind: 'manual', key: 'k-m3', payload: { n: 3 } },
      { kind: 'work', key: 'k-flaky', payload: { mode: 'flaky' } },
      { kind: 'work', payload: { mode: 'ok' } },
      { kind: 'later', key: 'k-later', delayMs: 3_600_000 },
      { kind: 'later', delayMs: 3_600_000 },
    ]);
    c.eq(`${tag} scheduleMany created`, many.map((m) => m.created), [true, true, true, true, true, true]);
    const [man2, man3, flaky, ok2, later1, later2] = many.map((m) => add(m.id)) as [string, string, string, string, string, string];
    // dedup: a held key returns the holder's id, whatever its size
    const again = await store.schedule({ kind: 'later', key: 'k-later', delayMs: 3_600_000 });
    c.eq(`${tag} dedup schedule`, [again.id, again.created], [later1, false]);
    const againMany = await store.scheduleMany([{ kind: 'manual', key: 'k-m3' }, { kind: 'later', delayMs: 3_600_000 }]);
    c.eq(`${tag} dedup scheduleMany holder`, [againMany[0]?.id, againMany[0]?.created], [man3, false]);
    const later3 = add(againMany[1]?.id as string);
    const ok3 = add((await store.schedule({ kind: 'work', payload: { mode: 'ok' } })).id);
    c.ok(`${tag} created ids increase`, increasing(created));
    c.ok(`${tag} ids cross the boundary`, big(created[0] as string) < boundary && big(created.at(-1) as string) >= boundary);
    for (const id of created) c.eq(`${tag} getTask ${id}`, (await store.getTask(id))?.id, id);

    // UNSAFE_INTEGER: refused by schedule and scheduleMany
    for (const call of [() => store.schedule({ kind: 'work', payload: { n: 2 ** 53 } }), () => store.scheduleMany([{ kind: 'work', payload: { n: [1, 2 ** 53] } }])]) {
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      c.eq(`${tag} unsafe payload refused`, ValidationError.isInstance(error) ? error.code : String(error), 'UNSAFE_INTEGER');
    }

    // claim + completeMany of the manual tasks (the worker below only claims 'work')
    const claimed = await store.claim({ owner: 'manual-owner', limit: 10, leaseMs: 30_000, kinds: ['manual'] });
    c.eq(`${tag} claim ids`, claimed.map((t) => t.id), [man1, man2, man3]);
    const outcomes = await store.completeMany(claimed.map((t) => ({ id: t.id, attempt: t.attempt, owner: 'manual-owner', result: { id: t.id } })));
    c.eq(`${tag} completeMany`, outcomes, ['DONE', 'DONE', 'DONE']);
    for (const t of claimed) {
      c.eq(`${tag} completeMany result ${t.id}`, (await store.getTask(t.id))?.result, { id: t.id });
      c.eq(`${tag} completion ${t.id}`, (await store.getCompletion(t.id))?.taskId, t.id);
    }

    // a real worker: ok tasks DONE, flaky fails once and is retried by the worker, dead goes DEAD
    const worker = createWorker({
      store,
      id: `w-${tag}`,
      pollIntervalMs: 50,
      backoffBaseMs: 20,
      maxBackoffMs: 50,
      jitter: 'none',
      logLevel: 'silent',
      handlers: {
        work: async (task, ctx) => {
          seen.set(`${task.id}#${ctx.attempt}`, task.payload);
          const mode = (task.payload as { mode?: string }).mode;
          if (mode === 'dead' || (mode === 'flaky' && ctx.attempt === 1)) throw new Error(`fails ${mode}`);
          return { id: task.id, payload: task.payload };
        },
      },
    });
    worker.start();
    let retried1 = '';
    try {
      const state = async (id: string) => (await store.getTask(id))?.state;
      await waitUntil(`${tag} worker`, async () => (await Promise.all([ok1, ok2, ok3, flaky].map(state))).every((s) => s === 'DONE') && (await state(dead1)) === 'DEAD');
      for (const id of [ok1, ok2, ok3, flaky]) {
        const task = await store.getTask(id);
        c.eq(`${tag} worker result ${id}`, (task?.result as { id?: string } | null)?.id, id);
        c.eq(`${tag} worker completion ${id}`, (await store.getCompletion(id))?.taskId, id);
      }
      c.eq(`${tag} flaky retried by the worker`, [(await store.getTask(flaky))?.attempt, (await store.getTask(flaky))?.failures], [2, 1]);
      c.eq(`${tag} payload at claim`, seen.get(`${ok1}#1`), { mode: 'ok', ...EDGE_PAYLOAD });
      c.eq(`${tag} payload in result`, ((await store.getTask(ok1))?.result as { payload?: Json } | null | undefined)?.payload, { mode: 'ok', ...EDGE_PAYLOAD });

      // admin retry of the DEAD task: the new id is past the boundary, linked both ways
      const r = await store.retry({ id: dead1 });
      c.eq(`${tag} retry outcome`, r.outcome, 'RETRIED');
      retried1 = r.outcome === 'RETRIED' ? r.id : '';
      add(retried1);
      c.ok(`${tag} retry id past boundary`, retried1 !== '' && big(retried1) >= boundary && big(dead1) < boundary);
      c.eq(`${tag} retriedAs`, (await store.getTaskRecord(dead1))?.retriedAs, retried1);
      c.eq(`${tag} retryOf`, (await store.getTaskRecord(retried1))?.retryOf, dead1);
      c.eq(`${tag} retry again`, await store.retry({ id: dead1 }), { outcome: 'ALREADY_RETRIED', id: retried1 });
      // the worker runs the copy: same payload, exactly; it goes DEAD again (maxAttempts 1)
      await waitUntil(`${tag} retried copy`, async () => (await state(retried1)) === 'DEAD');
      c.eq(`${tag} retried payload at claim`, seen.get(`${retried1}#1`), { mode: 'dead', ...EDGE_PAYLOAD });
    } finally {
      await worker.stop();
    }

    // cancel through the API
    c.eq(`${tag} cancel`, await store.cancel(later2), 'CANCELLED');
    c.eq(`${tag} cancelled`, (await store.getTask(later2))?.state, 'CANCELLED');

    // listTasks, paged by 2 and 3 both ways, against the database
    let rows = await dbRows(schema);
    const dbIds = rows.map((r) => r.id);
    c.eq(`${tag} db holds what the API returned`, dbIds, sortIds(created));
    for (const limit of [2, 3]) {
      c.eq(`${tag} list oldest by ${limit}`, (await listAll(store, 'oldest', limit)).ids, dbIds);
      c.eq(`${tag} list newest by ${limit}`, (await listAll(store, 'newest', limit)).ids, [...dbIds].reverse());
    }

    // the CLI binary (node-postgres)
    const cliIds: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { tasks: { id: string }[]; nextCursor: string | null } = await cliJson(schema, ['list', '--limit', '4', ...(cursor === null ? [] : ['--cursor', cursor])]);
      cliIds.push(...page.tasks.map((t) => t.id));
      cursor = page.nextCursor;
    } while (cursor !== null);
    c.eq(`${tag} cli list`, cliIds, [...dbIds].reverse());
    const shown = await cliJson<{ task: TaskRecord; completion: unknown }>(schema, ['show', retried1]);
    c.eq(`${tag} cli show`, [shown.task.id, shown.task.retryOf, shown.task.payload], [retried1, dead1, { mode: 'dead', ...EDGE_PAYLOAD }]);
    const cliRetry = await cliJson<{ outcome: string; id: string }>(schema, ['retry', retried1]);
    c.eq(`${tag} cli retry outcome`, cliRetry.outcome, 'RETRIED');
    const retried2 = add(cliRetry.id);
    c.ok(`${tag} cli retry id`, increasing([retried1, retried2]));
    c.eq(`${tag} cli cancel`, await cliJson(schema, ['cancel', later3]), { id: later3, outcome: 'CANCELLED' });
    const refused = await cli(schema, ['schedule', 'work', '--payload', '{"n":9007199254740993}']);
    c.eq(`${tag} cli unsafe payload`, [refused.code, /UNSAFE_INTEGER/.test(refused.stderr)], [2, true]);
    rows = await dbRows(schema);
    const link = (id: string) => rows.find((r) => r.id === id);
    c.eq(`${tag} db links`, [link(dead1)?.retriedas, link(retried1)?.retryof, link(retried1)?.retriedas, link(retried2)?.retryof], [retried1, dead1, retried2, retried1]);
    c.eq(`${tag} db states`, [link(later3)?.state, link(retried2)?.state], ['CANCELLED', 'SCHEDULED']);

    // the dashboard's JSON API
    const dash = await startDashboard(schema);
    try {
      const dashIds: string[] = [];
      let dashCursor: string | null = null;
      do {
        const q: string = dashCursor === null ? '' : `&cursor=${encodeURIComponent(dashCursor)}`;
        const page: { tasks: { id: string }[]; nextCursor: string | null } = await getJson(`${dash.base}api/tasks?limit=3${q}`);
        dashIds.push(...page.tasks.map((t) => t.id));
        dashCursor = page.nextCursor;
      } while (dashCursor !== null);
      c.eq(`${tag} dashboard list`, dashIds, rows.map((r) => r.id).reverse());
      for (const id of [dead1, retried1, retried2, ok1, man3]) {
        const detail = await getJson<{ task: TaskRecord; completion: { taskId: string } | null }>(`${dash.base}api/tasks/${id}`);
        c.eq(`${tag} dashboard detail ${id}`, [detail.task.id, detail.task.retryOf, detail.task.retriedAs], [id, link(id)?.retryof ?? null, link(id)?.retriedas ?? null]);
        if (detail.completion !== null) c.eq(`${tag} dashboard completion ${id}`, detail.completion.taskId, id);
      }
      const detail = await getJson<{ task: TaskRecord }>(`${dash.base}api/tasks/${ok1}`);
      c.eq(`${tag} dashboard payload`, [detail.task.payload, (detail.task.result as { payload?: Json }).payload], [{ mode: 'ok', ...EDGE_PAYLOAD }, { mode: 'ok', ...EDGE_PAYLOAD }]);
    } finally {
      await stopChild(dash.child);
    }
    const ids = rows.map((r) => r.id);
    return { ids: ids.length, below: ids.filter((id) => big(id) < boundary).length, atOrAbove: ids.filter((id) => big(id) >= boundary).length };
  } finally {
    await store.close();
  }
}

/** A cron schedule firing every second across the boundary; a worker runs the occurrences. */
async function cronSegment(boundary: bigint, driver: DriverName, c: Checks): Promise<number> {
  const tag = `${driver}@${boundary} cron`;
  const { schema, store } = await freshSchema('lidc', driver, boundary - 1n);
  try {
    const cron = createCronScheduler({ store, schedules: [{ name: 'tick', cron: '* * * * * *', kind: 'tick', missed: 'skip' }], horizonMs: 3_000, intervalMs: 1_000 });
    await cron.reconcile();
    const report = await cron.runOnce();
    const fired = (report.scheduled.tick ?? []).map((s) => s.id);
    c.ok(`${tag} fired ${fired.join(',')}`, fired.length >= 2 && fired[0] === (boundary - 1n).toString() && increasing(fired) && big(fired.at(-1) as string) >= boundary);
    const ran: string[] = [];
    const worker = createWorker({ store, id: `wc-${driver}`, pollIntervalMs: 50, logLevel: 'silent', handlers: { tick: async (task) => void ran.push(task.id) } });
    worker.start();
    try {
      await waitUntil(`${tag} occurrences`, async () => (await Promise.all(fired.map((id) => store.getTask(id)))).every((t) => t?.state === 'DONE'), 10_000);
    } finally {
      await worker.stop();
    }
    c.eq(`${tag} ran`, sortIds(ran), fired);
    c.eq(`${tag} db`, (await dbRows(schema)).map((r) => r.id), fired);
    return fired.length;
  } finally {
    await store.close();
  }
}

/** The top of the range: ids up to bigint max work; then the sequence is exhausted (2200H). */
async function maxSegment(c: Checks): Promise<{ ids: number; exhausted: string }> {
  const { schema, store } = await freshSchema('lidm', 'pg', BIGINT_MAX - 3n);
  const other = makeStore('postgres', schema);
  try {
    const a = (await store.schedule({ kind: 'top', key: 'a' })).id;
    const [b, d] = (await other.scheduleMany([{ kind: 'top' }, { kind: 'top', key: 'd', maxAttempts: 1 }])).map((s) => s.id) as [string, string];
    const e = (await store.schedule({ kind: 'top' })).id;
    const ids = [a, b, d, e];
    c.eq('max ids', ids, [3n, 2n, 1n, 0n].map((k) => (BIGINT_MAX - k).toString()));
    for (const s of [store, other]) {
      c.eq(`max list newest ${s.name}`, (await listAll(s, 'newest', 3)).ids, [...ids].reverse());
      c.eq(`max list oldest ${s.name}`, (await listAll(s, 'oldest', 3)).ids, ids);
      for (const id of ids) c.eq(`max getTask ${s.name} ${id}`, (await s.getTask(id))?.id, id);
    }
    const claimed = await other.claim({ owner: 'o', limit: 4, leaseMs: 30_000 });
    c.eq('max claim', claimed.map((t) => t.id), ids);
    c.eq('max completeMany', await other.completeMany(claimed.filter((t) => t.id !== d).map((t) => ({ id: t.id, attempt: t.attempt, owner: 'o' }))), ['DONE', 'DONE', 'DONE']);
    c.eq('max fail', await store.fail({ id: d, attempt: 1, error: 'x', backoffMs: 0 }), { outcome: 'DEAD' });
    c.eq('max cli show', (await cliJson<{ task: TaskRecord }>(schema, ['show', e])).task.id, e);
    c.eq('max cli list', (await cliJson<{ tasks: { id: string }[] }>(schema, ['list'])).tasks.map((t) => t.id), [...ids].reverse());
    // The sequence is exhausted: retry and schedule fail with 2200H, nothing is written.
    const codes: string[] = [];
    for (const call of [() => store.retry({ id: d }), () => store.schedule({ kind: 'top' }), () => other.scheduleMany([{ kind: 'top' }])]) {
      const error = await call().then(
        () => null,
        (err: unknown) => err as { code?: string; sqlState?: string },
      );
      codes.push(`${error?.code}/${error?.sqlState}`);
    }
    c.eq('max exhausted', codes, ['STORE_ERROR/2200H', 'STORE_ERROR/2200H', 'STORE_ERROR/2200H']);
    c.eq('max db', (await dbRows(schema)).map((r) => r.id), ids);
    return { ids: ids.length, exhausted: codes[0] as string };
  } finally {
    await Promise.all([store.close(), other.close()]);
  }
}

beforeAll(() => {
  url = testDatabaseUrl();
  pool = new pg.Pool({ connectionString: url, max: 2 });
});

afterAll(async () => {
  await Promise.all(children.map(stopChild));
  for (const s of schemas) await dropSchema(url, s);
  await pool.end();
});

describe('large ids', () => {
  it('ids across 2^31 and 2^53 and up to bigint max stay exact on every path, both drivers', { timeout: 300_000 }, async () => {
    const c = new Checks();
    const fields: Record<string, string | number> = {};
    for (const [name, boundary] of Object.entries(BOUNDARIES)) {
      let ids = 0;
      let below = 0;
      let above = 0;
      let cronIds = 0;
      for (const driver of DRIVERS) {
        const s = await apiSegment(boundary, driver, c);
        ids += s.ids;
        below += s.below;
        above += s.atOrAbove;
        cronIds += await cronSegment(boundary, driver, c);
      }
      const key = name.replace('^', '');
      Object.assign(fields, { [`ids${key}`]: ids, [`below${key}`]: below, [`atOrAbove${key}`]: above, [`cron${key}`]: cronIds });
    }
    const top = await maxSegment(c);
    Object.assign(fields, { idsMax: top.ids, afterMax: top.exhausted, drivers: '[pg,postgres]', checks: c.n, mismatches: c.mismatches.length });
    recordCase('large_ids', c.mismatches.length === 0, fields);
    expect(c.mismatches).toEqual([]);
  });
});
