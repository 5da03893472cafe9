/**
 * Evidence `version_skew` (issue #26 item 2, README "Failure modes", docs/guides/deploy.md "Version
 * skew"): code and schema one migration apart in a rolling deploy, on a server of its own whose log
 * names the session (`log_line_prefix` `%p|%e|`), so every error is counted per connection and statement.
 *
 * - A future migration under running workers (prepared statements on, both drivers): a column added
 *   to `task` and `task_history` with a default and a migration row `SCHEMA_VERSION` + 1 recorded, then a column the
 *   code does not read dropped. The workers (claim, renew, fail once, complete) go on; a worker
 *   started after the migration checks the schema (`SCHEMA_VERSION` + 1, code `SCHEMA_VERSION`) and runs. Every task DONE exactly
 *   once, no call failed, and no statement failed twice on one connection (0A000 or otherwise).
 * - Controls: a prepared `select t.*` fails with 0A000 "cached plan must not change result type" on
 *   every execution on its connection after a column is added (node-postgres never re-prepares it);
 *   the same text through the store's drivers fails once per connection and is retried on a fresh
 *   statement (autocommit and in a transaction).
 * - New code against a schema behind what it needs (`MIN_SCHEMA_VERSION` − 1; on 10 and before no `min_reader`
 *   column): `checkSchema`, `claim` and `reclaimExpired` throw `SchemaVersionError` `SCHEMA_BEHIND`
 *   naming both; no task touched; after `migrate()` they run. (Since migration 13 this code needs
 *   the newest schema: its complete writes `task_history.finished_by`.)
 * - A schema whose newest migration needs newer code (`min_reader` `SCHEMA_VERSION` + 1): `SCHEMA_TOO_NEW` naming it
 *   and this code's; and a schema ahead that dropped a column this code reads: the claim's 42703 becomes
 *   `SCHEMA_TOO_NEW` naming both.
 */
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { SchemaVersionError } from '@postpone/core';
import { recordCase } from '@postpone/testkit';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIN_SCHEMA_VERSION, migrations, type PostgresStore, SCHEMA_VERSION } from '../src/index.js';
import { createPgDriver, createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsDriver } from '../src/drivers/postgres-js.js';
import { DRIVERS, type DriverName, type Kit, makeKit } from './support/kits.js';

let server: EmbeddedDatabase;
let serverLog = '';
let admin: pg.Pool;

beforeAll(async () => {
  server = await startEmbeddedPostgres({
    postgresFlags: ['-c', 'log_line_prefix=%p|%e|', '-c', 'log_min_error_statement=error'],
    onLog: (chunk) => {
      serverLog += chunk;
    },
  });
  admin = new pg.Pool({ connectionString: server.url, max: 3 });
  admin.on('error', () => {});
}, 60_000);
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

interface LoggedError {
  readonly pid: string;
  readonly sqlState: string;
  readonly message: string;
  statement: string;
}

/** The ERROR entries of the server log since `from` (an offset in it), each with its STATEMENT. */
function loggedErrors(from: number): LoggedError[] {
  const errors: LoggedError[] = [];
  let last: LoggedError | undefined;
  let inStatement = false;
  for (const line of serverLog.slice(from).split('\n')) {
    const m = /^(\d+)\|([0-9A-Z]{5})\|(ERROR|STATEMENT|LOG|DETAIL|HINT|CONTEXT|WARNING|NOTICE|FATAL):\s+(.*)$/.exec(line);
    if (m) {
      inStatement = false;
      if (m[3] === 'ERROR') {
        last = { pid: m[1] as string, sqlState: m[2] as string, message: m[4] as string, statement: '' };
        errors.push(last);
      } else if (m[3] === 'STATEMENT' && last !== undefined && last.pid === m[1]) {
        last.statement = m[4] as string;
        inStatement = true;
      }
    } else if (inStatement && last !== undefined) {
      last.statement += `\n${line}`;
    }
  }
  return errors;
}

/** (connection, statement) pairs that failed more than once. */
function failedTwice(errors: readonly LoggedError[]): number {
  const counts = new Map<string, number>();
  for (const e of errors) counts.set(`${e.pid}\u0000${e.statement}`, (counts.get(`${e.pid}\u0000${e.statement}`) ?? 0) + 1);
  return [...counts.values()].filter((n) => n > 1).length;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** DDL under running workers; a deadlock with one of their writes may pick it as the victim: then it runs again. */
async function ddl(text: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const client = await admin.connect();
    try {
      await client.query(text);
      return;
    } catch (error) {
      await client.query('rollback').catch(() => {});
      if ((error as { code?: string }).code !== '40P01' || attempt >= 5) throw error;
    } finally {
      client.release();
    }
  }
}

/** The server log has caught up (the server writes it asynchronously): waits for a marker error. */
async function flushLog(): Promise<void> {
  const marker = `skew_flush_${Math.random().toString(36).slice(2)}`;
  await admin.query(`select 1 from ${marker}`).catch(() => {});
  for (let i = 0; i < 100 && !serverLog.includes(marker); i++) await sleep(20);
}

/** Creates `schema` as the previous code left it at `version`: migrations 1..version, a `migration` table without `min_reader`. */
async function migrateThrough(schema: string, version: number): Promise<void> {
  const q = pg.escapeIdentifier(schema);
  await admin.query(`create schema ${q}`);
  await admin.query(`create table ${q}.migration (version integer primary key, name text not null, applied_at timestamptz not null default now())`);
  for (const m of migrations(schema).filter((m) => m.version <= version)) {
    await admin.query(m.sql);
    await admin.query(`insert into ${q}.migration (version, name) values ($1, $2)`, [m.version, m.name]);
  }
}

const fields: Record<string, number | string | boolean> = {};
let pass = true;
let checks = 0;
/** Every check of the case: 1 control, 2 × 2 driver retries, 2 × 4 under running workers, 2 × 6 behind / too new. */
const CHECKS = 25;
function check(ok: boolean, key: string, value: number | string | boolean): void {
  fields[key] = value;
  checks++;
  pass &&= ok;
}

describe('evidence: version_skew', () => {
  // A filtered run (-t) records nothing it did not measure as a pass.
  afterAll(() => recordCase('version_skew', pass && checks === CHECKS, fields));

  it('control: a prepared select t.* fails with 0A000 on every execution on its connection after a column is added', async () => {
    await admin.query('create schema if not exists skew_control; create table skew_control.t (id int primary key, a text); insert into skew_control.t values (1, $$x$$)');
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      const query = { name: 'skew_control_select', text: 'select t.* from skew_control.t t where t.id = $1::int', values: [1] };
      await client.query(query);
      await admin.query('alter table skew_control.t add column b text default $$y$$');
      let failures = 0;
      for (let i = 0; i < 3; i++) {
        try {
          await client.query(query);
        } catch (error) {
          expect((error as { code?: string }).code).toBe('0A000');
          failures++;
        }
      }
      check(failures === 3, 'controlSameConnectionFailures', failures);
      expect(failures).toBe(3);
    } finally {
      await client.end();
    }
  });

  describe.each(DRIVERS)('the store\'s %s driver: a statement whose cached plan changed', (driver) => {
    it('fails at most once per connection and is retried on a fresh statement, in autocommit and in a transaction', async () => {
      const table = `skew_retry_${driver}`;
      await admin.query(`create schema if not exists skew_control; create table skew_control.${table} (id int primary key, a text); insert into skew_control.${table} values (1, 'x')`);
      const text = `select t.* from skew_control.${table} t where t.id = $1::int`;
      // One connection, so every execution meets the same prepared statement.
      const pool = new pg.Pool({ connectionString: server.url, max: 1 });
      const sql = postgres(server.url, { max: 1, onnotice: () => {} });
      const store = driver === 'pg' ? createPgStore({ pool }) : undefined; // registers the pool as one with named statements
      const d = driver === 'pg' ? createPgDriver(pool, false) : createPostgresJsDriver(sql, false);
      const from = serverLog.length;
      let failedCalls = 0;
      const run = async (inTx: boolean) => {
        try {
          const rows = inTx ? await d.transaction((query) => query(text, [1])) : await d.query(text, [1]);
          return Object.keys(rows[0] ?? {}).length;
        } catch {
          failedCalls++;
          return -1;
        }
      };
      const mine = (errors: LoggedError[]) => errors.filter((e) => e.statement.includes(`skew_control.${table}`) && e.sqlState === '0A000');
      try {
        expect(await run(false)).toBe(2);
        expect(await run(true)).toBe(2);
        // Two changes of shape, each judged on its own: a statement may fail once per change.
        await admin.query(`alter table skew_control.${table} add column b text default 'y'`);
        const widths = [await run(false), await run(false), await run(false)];
        await flushLog();
        const middle = serverLog.length;
        await admin.query(`alter table skew_control.${table} add column c text default 'z'`);
        const txWidths = [await run(true), await run(true), await run(false)];
        await flushLog();
        const first = mine(loggedErrors(from).slice(0, loggedErrors(from).length - loggedErrors(middle).length));
        const second = mine(loggedErrors(middle));
        const cachedPlan = first.length + second.length;
        const twice = failedTwice(first) + failedTwice(second);
        check(failedCalls === 0, `${driver}_retryFailedCalls`, failedCalls);
        check(twice === 0, `${driver}_retryFailedTwiceOnAConnection`, twice);
        fields[`${driver}_retryCachedPlanErrors`] = cachedPlan;
        expect(widths).toEqual([3, 3, 3]);
        expect(txWidths).toEqual([4, 4, 4]);
        expect(failedCalls).toBe(0);
        // Each change of shape costs at most one failed execution on the one connection.
        expect(cachedPlan).toBeLessThanOrEqual(2);
      } finally {
        await store?.close();
        await pool.end();
        await sql.end({ timeout: 1 });
      }
    });
  });

  describe.each(DRIVERS)('%s: a future migration under running workers', (driver: DriverName) => {
    let kit: Kit<any>;
    const schema = `skew_run_${driver}`;
    const q = pg.escapeIdentifier(schema);
    beforeAll(async () => {
      kit = makeKit(driver, server.url);
      const store = kit.store({ schema });
      await store.migrate();
      await store.close();
      // A column the code does not read, there before the workers prepare their statements.
      await admin.query(`alter table ${q}.task add column doomed integer; alter table ${q}.task_history add column doomed integer`);
    });
    afterAll(async () => {
      await kit.close();
    });

    it(`column added (migration ${SCHEMA_VERSION + 1} recorded), then a column dropped: every task DONE once, no failed call, no statement failed twice on a connection`, { timeout: 60_000 }, async () => {
      const TASKS = 240;
      const stores: PostgresStore<any>[] = [];
      const newStore = () => {
        const s = kit.store({ schema });
        stores.push(s);
        return s;
      };
      const scheduler = newStore();
      const failedCalls: string[] = [];
      const retried: Record<string, number> = {};
      // As the worker does: a call the database gave no verdict on (`transient`: a deadlock victim of
      // the migration's DDL, say) is tried again, up to 40 times.
      const guard = async <T>(what: string, op: () => Promise<T>): Promise<T | undefined> => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await op();
          } catch (error) {
            const transient = (error as { transient?: unknown }).transient === true || (error as { code?: unknown }).code === 'CONNECTION_LOST';
            if (transient && attempt < 40) {
              const key = `${String((error as { sqlState?: unknown }).sqlState ?? (error as { code?: unknown }).code)}`;
              retried[key] = (retried[key] ?? 0) + 1;
              await sleep(50);
              continue;
            }
            failedCalls.push(`${what}: ${(error as Error).message}`);
            return undefined;
          }
        }
      };
      // Half the tasks up front, the rest scheduled while the schema changes (prepared schedule statements too).
      await scheduler.scheduleMany(Array.from({ length: TASKS / 2 }, (_, i) => ({ kind: 'skew', payload: { i } })));
      const completions = new Map<string, number>();
      let stop = false;
      const failedOnce = new Set<string>();
      const work = async (name: string, store: PostgresStore<any>) => {
        while (!stop) {
          const claimed = (await guard(`${name} claim`, () => store.claim({ owner: name, limit: 4, leaseMs: 30_000 }))) ?? [];
          if (claimed.length === 0) {
            await sleep(10);
            continue;
          }
          for (const task of claimed) {
            await guard(`${name} extend`, () => store.extend({ id: task.id, attempt: task.attempt, leaseMs: 30_000 }));
            await guard(`${name} getTask`, () => store.getTask(task.id));
            // Every seventh task fails its first attempt: the fail statement runs under the changes too.
            if (Number(task.id) % 7 === 0 && !failedOnce.has(task.id)) {
              failedOnce.add(task.id);
              await guard(`${name} fail`, () => store.fail({ id: task.id, attempt: task.attempt, error: 'once', backoffMs: 0 }));
              continue;
            }
            const outcome = await guard(`${name} complete`, () => store.complete({ id: task.id, attempt: task.attempt, owner: name }));
            if (outcome === 'DONE') completions.set(task.id, (completions.get(task.id) ?? 0) + 1);
          }
          await guard(`${name} reclaim`, () => store.reclaimExpired());
        }
      };
      const from = serverLog.length;
      const workers = [work('w1', newStore()), work('w2', newStore()), work('w3', newStore())];
      const doneCount = async () => Number((await admin.query(`select count(*)::int as n from ${q}.task_history where state = 'DONE'`)).rows[0].n);
      const waitDone = async (n: number) => {
        for (let i = 0; i < 1_500 && (await doneCount()) < n; i++) await sleep(20);
      };
      await waitDone(TASKS / 6);
      // The future migration: a column with a default on both tables, and its row in `migration`.
      await ddl(`begin;
alter table ${q}.task add column future_note text not null default 'n';
alter table ${q}.task_history add column future_note text not null default 'n';
insert into ${q}.migration (version, name, min_reader) values (${SCHEMA_VERSION + 1}, 'future: a column', null);
commit`);
      const rest = scheduler.scheduleMany(Array.from({ length: TASKS / 2 }, (_, i) => ({ kind: 'skew', payload: { i: TASKS / 2 + i } })));
      // A process started after the migration: the schema is ahead, its migrations additive.
      const late = newStore();
      const seen = await late.checkSchema();
      check(seen.schemaVersion === SCHEMA_VERSION + 1 && seen.codeVersion === SCHEMA_VERSION, `${driver}_lateWorkerSchema`, `${seen.schemaVersion}/${seen.codeVersion}`);
      workers.push(work('w4', late));
      await guard('schedule rest', () => rest);
      await waitDone(TASKS / 2);
      await flushLog();
      const dropAt = serverLog.length;
      // A column none of this code reads, dropped under the workers.
      await ddl(`alter table ${q}.task drop column doomed; alter table ${q}.task_history drop column doomed`);
      await waitDone(TASKS);
      stop = true;
      await Promise.all(workers);
      for (const s of stores) await s.close();
      await flushLog();
      const all = loggedErrors(from).filter((e) => !e.message.includes('skew_flush'));
      const afterDrop = loggedErrors(dropAt).filter((e) => !e.message.includes('skew_flush'));
      const errors = all;
      // Per change of shape (the add, then the drop): a statement failing twice on one connection in either.
      const twiceOnConnection = failedTwice(all.slice(0, all.length - afterDrop.length)) + failedTwice(afterDrop);
      const [counts] = (
        await admin.query(`select (select count(*)::int from ${q}.task_history where state = 'DONE') as done,
          (select count(*)::int from ${q}.task) as live,
          (select count(*)::int from ${q}.task_history where state = 'DONE' and finished_by is not null) as completions,
          (select count(*)::int from (select id from ${q}.task_history group by id having count(*) > 1) d) as duplicates,
          (select count(*)::int from ${q}.task_history where future_note = 'n') as withdefault`)
      ).rows;
      const twice = [...completions.values()].filter((n) => n > 1).length;
      check(counts.done === TASKS && counts.live === 0 && counts.completions === TASKS && counts.duplicates === 0 && twice === 0, `${driver}_done`, counts.done);
      fields[`${driver}_tasks`] = TASKS;
      fields[`${driver}_completions`] = counts.completions;
      fields[`${driver}_duplicates`] = counts.duplicates + twice;
      check(failedCalls.length === 0, `${driver}_failedCalls`, failedCalls.length);
      fields[`${driver}_serverErrors`] = errors.length;
      fields[`${driver}_cachedPlanErrors`] = errors.filter((e) => e.sqlState === '0A000').length;
      fields[`${driver}_retriedNoVerdict`] = Object.entries(retried).map(([k, n]) => `${k}x${n}`).join('+') || 0;
      check(twiceOnConnection === 0, `${driver}_failedTwiceOnAConnection`, twiceOnConnection);
      expect(failedCalls).toEqual([]);
      expect(counts).toMatchObject({ done: TASKS, live: 0, completions: TASKS, duplicates: 0, withdefault: TASKS });
      expect(twice).toBe(0);
      expect(twiceOnConnection).toBe(0);
    });
  });

  describe.each(DRIVERS)('%s: new code against a schema behind what it needs, or too new', (driver: DriverName) => {
    let kit: Kit<any>;
    beforeAll(() => {
      kit = makeKit(driver, server.url);
    });
    afterAll(async () => {
      await kit.close();
    });

    it(`schema at ${MIN_SCHEMA_VERSION - 1}: checkSchema, claim and reclaimExpired refuse naming both versions; no task touched; after migrate() they run`, async () => {
      const schema = `skew_behind_${driver}`;
      const q = pg.escapeIdentifier(schema);
      await migrateThrough(schema, MIN_SCHEMA_VERSION - 1);
      await admin.query(`insert into ${q}.task (kind, state, due_at, max_attempts) select 'skew', 'SCHEDULED', now() - interval '1 second', 5 from generate_series(1, 5)`);
      const store = kit.store({ schema });
      try {
        const refusals = await Promise.all([store.checkSchema(), store.claim({ owner: 'new', limit: 10, leaseMs: 30_000 }), store.reclaimExpired()].map((p) => p.then(() => null, (e: unknown) => e)));
        const codes = refusals.map((e) => (SchemaVersionError.isInstance(e) ? `${e.code}:${(e as SchemaVersionError).schemaVersion}/${(e as SchemaVersionError).codeVersion}` : String(e)));
        const [first] = refusals as Error[];
        check(codes.every((c) => c === `SCHEMA_BEHIND:${MIN_SCHEMA_VERSION - 1}/${MIN_SCHEMA_VERSION}`), `${driver}_behind`, codes[1] as string);
        expect(first?.message).toBe(`schema ${schema} is at migration ${MIN_SCHEMA_VERSION - 1}, this code needs ${MIN_SCHEMA_VERSION}: run migrate() first`);
        const [untouched] = (await admin.query(`select count(*) filter (where state = 'SCHEDULED' and attempt = 0)::int as n from ${q}.task`)).rows;
        check(untouched.n === 5, `${driver}_behindTasksUntouched`, untouched.n);
        const migrated = await store.migrate();
        expect(migrated.applied).toEqual(migrations(schema).map((m) => m.version).filter((v) => v >= MIN_SCHEMA_VERSION));
        const claimed = await store.claim({ owner: 'new', limit: 10, leaseMs: 30_000 });
        check(claimed.length === 5, `${driver}_claimedAfterMigrate`, claimed.length);
        const [row] = (await admin.query(`select min_reader from ${q}.migration where version = $1`, [SCHEMA_VERSION])).rows;
        expect(row.min_reader).toBe(migrations(schema).at(-1)?.minReader ?? null);
      } finally {
        await store.close();
      }
    });

    it('a migration that needs newer code (min_reader), and a schema ahead that dropped a column this code reads: SCHEMA_TOO_NEW naming both', async () => {
      const schema = `skew_ahead_${driver}`;
      const q = pg.escapeIdentifier(schema);
      const setup = kit.store({ schema });
      await setup.migrate();
      await setup.schedule({ kind: 'skew' });
      await setup.close();
      await admin.query(`insert into ${q}.migration (version, name, min_reader) values ($1, 'future: needs new code', $1)`, [SCHEMA_VERSION + 1]);
      const store = kit.store({ schema });
      try {
        const error = await store.claim({ owner: 'old', limit: 10, leaseMs: 30_000 }).then(() => null, (e: unknown) => e);
        expect(SchemaVersionError.isInstance(error) && error.code).toBe('SCHEMA_TOO_NEW');
        expect((error as Error).message).toBe(
          `schema ${schema} is at migration ${SCHEMA_VERSION + 1}, which needs code of migration ${SCHEMA_VERSION + 1} or later; this code knows up to ${SCHEMA_VERSION}: deploy the newer code`,
        );
        check(SchemaVersionError.isInstance(error) && error.code === 'SCHEMA_TOO_NEW', `${driver}_minReader`, SchemaVersionError.isInstance(error) ? error.code : String(error));
        const [claimedRows] = (await admin.query(`select count(*) filter (where state = 'CLAIMED')::int as n from ${q}.task`)).rows;
        check(claimedRows.n === 0, `${driver}_tooNewTasksClaimed`, claimedRows.n);
      } finally {
        await store.close();
      }
      // No min_reader declared, but the newer migration renamed a column this code reads.
      await admin.query(`update ${q}.migration set min_reader = null where version = $1`, [SCHEMA_VERSION + 1]);
      await admin.query(`alter table ${q}.task rename column retry to retry_policy`);
      const old = kit.store({ schema });
      try {
        expect((await old.checkSchema()).schemaVersion).toBe(SCHEMA_VERSION + 1);
        const error = await old.claim({ owner: 'old', limit: 10, leaseMs: 30_000 }).then(() => null, (e: unknown) => e);
        const ok = SchemaVersionError.isInstance(error) && error.code === 'SCHEMA_TOO_NEW' && (error.cause as { code?: string }).code === '42703';
        check(ok, `${driver}_shapeError`, SchemaVersionError.isInstance(error) ? `${error.code}(42703)` : String(error));
        expect((error as Error).message).toBe(
          `schema ${schema} is at migration ${SCHEMA_VERSION + 1}, ahead of this code (${SCHEMA_VERSION}), and a statement of this code no longer fits it: deploy the newer code`,
        );
        expect(ok).toBe(true);
      } finally {
        await old.close();
      }
    });
  });
});
