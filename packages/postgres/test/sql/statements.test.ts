/**
 * The statement layer against a real PostgreSQL, with no store in between: the migrations apply
 * (numbered, frozen text), the state CHECK is generated from core, every statement parses and plans
 * on the migrated schema, and the NOTIFY the SQL sends is what `parseTaskNotice` reads.
 * The store's behaviour over these statements is tested in `@postpone/postgres` (both drivers).
 */
import { TASK_STATES, TaskState } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminStatements,
  defaultNotifyChannel,
  MAX_IDENTIFIER_LENGTH,
  MAX_TASKS_PER_NOTICE,
  migrations,
  parseScheduledMany,
  parseTaskNotice,
  parseWorkerNotice,
  quoteIdent,
  scheduledManyPayloads,
  statements,
  workerNoticePayload,
} from '../../src/sql/index.js';
import { splitStatements } from '../../src/sql/split.js';

const schema = uniqueSchemaName('sql');
const s = statements(schema);
const task = `${quoteIdent(schema)}.task`;
let pool: pg.Pool;

/** Applies the missing migrations as `PostgresStore.migrate()` does: one transaction under the advisory lock. */
async function migrate(): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(s.migrationQuiet);
    await client.query(s.migrationLock, [schema]);
    await client.query(s.schemaCreate);
    await client.query(s.migrationTableCreate);
    const applied = new Set((await client.query<{ version: number }>(s.migrationVersions)).rows.map((r) => r.version));
    for (const m of migrations(schema)) {
      if (applied.has(m.version)) continue;
      for (const one of splitStatements(m.sql)) await client.query(one);
      await client.query(s.migrationInsert, [m.version, m.name]);
    }
    await client.query('commit');
  } catch (error) {
    await client.query('rollback');
    throw error;
  } finally {
    client.release();
  }
}

/** Runs `fn` in a transaction that is always rolled back. */
async function rolledBack(fn: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    await fn(client);
  } finally {
    await client.query('rollback');
    client.release();
  }
}

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 3 });
  pool.on('error', () => {});
  await migrate();
});
afterAll(async () => {
  await pool.end();
  await dropSchema(testDatabaseUrl(), schema);
});

describe('migrations', () => {
  it('are numbered 1..n, frozen, and the same text on every call', () => {
    const list = migrations(schema);
    expect(list.map((m) => m.version)).toEqual(list.map((_, i) => i + 1));
    expect(Object.isFrozen(list)).toBe(true);
    expect(list.every((m) => Object.isFrozen(m))).toBe(true);
    expect(migrations(schema)).toEqual(list);
  });

  it('apply once: the migration table lists every version, and a second run adds nothing', async () => {
    await migrate();
    const { rows } = await pool.query<{ version: number; name: string }>(`select version, name from ${quoteIdent(schema)}.migration order by version`);
    expect(rows).toEqual(migrations(schema).map((m) => ({ version: m.version, name: m.name })));
  });

  it('the state CHECK takes exactly the core states: the live ones in task, the terminal ones in task_history only (migration 12)', async () => {
    const refusal = (text: string, params: unknown[]) =>
      pool.query(text, params).then(
        () => undefined,
        (error: { code?: string; constraint?: string }) => [error.code, error.constraint],
      );
    for (const state of TASK_STATES) {
      const live = state === TaskState.SCHEDULED || state === TaskState.CLAIMED;
      await rolledBack(async (client) => {
        const claimed = state === TaskState.CLAIMED;
        if (live) {
          await client.query(`insert into ${task} (kind, state, due_at, max_attempts, lease_owner, lease_until) values ('k', $1, now(), 1, $2, $3)`, [
            state,
            claimed ? 'w' : null,
            claimed ? new Date() : null,
          ]);
        } else {
          await client.query(`insert into ${task}_history (id, kind, state, due_at, max_attempts, finished_at) values (900000001, 'k', $1, now(), 1, now())`, [state]);
        }
      });
      if (!live) {
        expect(await refusal(`insert into ${task} (kind, state, due_at, max_attempts) values ('k', $1, now(), 1)`, [state]), state).toEqual(['23514', 'task_live_state']);
      }
    }
    const refused = await refusal(`insert into ${task} (kind, state, due_at, max_attempts) values ('k', 'RUNNING', now(), 1)`, []);
    expect(refused?.[0]).toBe('23514');
    expect((await pool.query<{ n: number }>(`select count(*)::int as n from ${task}`)).rows[0]?.n).toBe(0);
  });
});

describe('statements', () => {
  it('every statement of statements() and adminStatements() plans on the migrated schema', async () => {
    const all = { ...s, ...adminStatements(schema) };
    const planned: string[] = [];
    for (const [name, text] of Object.entries(all)) {
      // Utility statements (set, create, do) have no plan; the migration run above executed them (do: `migrate()` runs it).
      if (/^(set|create|savepoint|rollback|release|lock|do)\b/.test(text)) continue;
      await pool.query(`explain (generic_plan) ${text}`);
      planned.push(name);
    }
    expect(planned).toContain('taskClaim');
    expect(planned).toContain('listNewestByKind');
    expect(planned.length).toBe(Object.keys(all).length - 8);
  });

  it('txCheck passes inside a transaction block and fails with 25P01 outside one', async () => {
    const client = await pool.connect();
    try {
      await expect(client.query(s.txCheck)).rejects.toMatchObject({ code: '25P01' });
      await client.query('begin');
      await client.query(s.txCheck);
      await client.query('rollback');
    } finally {
      client.release();
    }
  });

  it('quoteIdent doubles embedded quotes', async () => {
    const { rows } = await pool.query(`select 1 as ${quoteIdent('a"b')}`);
    expect(Object.keys(rows[0] ?? {})).toEqual(['a"b']);
  });
});

describe('notices', () => {
  it('the NOTIFY of taskInsertMany parses into the notice of the inserted row', async () => {
    const channel = defaultNotifyChannel(schema);
    const listener = await pool.connect();
    try {
      const payloads: string[] = [];
      listener.on('notification', (m) => payloads.push(m.payload ?? ''));
      await listener.query(`listen ${quoteIdent(channel)}`);
      const input = JSON.stringify([{ kind: 'k', key: null, payload: { a: 1 }, delayMs: 60_000, runAt: null, maxAttempts: 3, traceContext: null, retry: null, queue: 'default', priority: 0 }]);
      const { rows } = await pool.query<{ id: string; dueatms: number }>(s.taskInsertMany, [null, input, channel, 'keep']);
      const deadline = Date.now() + 5_000;
      while (payloads.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(payloads).toHaveLength(1);
      expect(parseTaskNotice(payloads[0] as string)).toEqual({ op: 'scheduled', id: rows[0]?.id, dueAt: new Date(Number(rows[0]?.dueatms)) });
      await listener.query(`unlisten ${quoteIdent(channel)}`);
    } finally {
      listener.release();
    }
  });

  it('taskInsertMany with a null channel sends no NOTIFY (the store announces after commit)', async () => {
    const channel = defaultNotifyChannel(schema);
    const listener = await pool.connect();
    try {
      const payloads: string[] = [];
      listener.on('notification', (m) => payloads.push(m.payload ?? ''));
      await listener.query(`listen ${quoteIdent(channel)}`);
      const input = JSON.stringify([{ kind: 'quiet', key: null, payload: null, delayMs: 0, runAt: null, maxAttempts: 3, traceContext: null, retry: null, queue: 'default', priority: 0 }]);
      const { rows } = await pool.query<{ id: string; notified: boolean | null }>(s.taskInsertMany, [null, input, null, 'keep']);
      expect(rows).toHaveLength(1);
      expect(rows[0]?.notified).toBeNull();
      // A marker NOTIFY sent afterwards arrives; notifications keep commit order, so none came before it.
      await pool.query('select pg_notify($1, $2)', [channel, 'marker']);
      const deadline = Date.now() + 5_000;
      while (!payloads.includes('marker') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(payloads).toEqual(['marker']);
      await listener.query(`unlisten ${quoteIdent(channel)}`);
    } finally {
      listener.release();
    }
  });

  it('scheduledManyPayloads and parseScheduledMany round-trip, at most MAX_TASKS_PER_NOTICE tasks a payload, each under 8 000 bytes', () => {
    const tasks = Array.from({ length: 2 * MAX_TASKS_PER_NOTICE + 1 }, (_, i) => [String(9_000_000_000_000_000_000n + BigInt(i)), 1_780_000_000_000 + i] as const);
    const payloads = scheduledManyPayloads(tasks);
    expect(payloads).toHaveLength(3);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThan(8_000);
    const parsed = payloads.flatMap((p) => parseScheduledMany(p) ?? []);
    expect(parsed).toEqual(tasks.map(([id, at]) => ({ op: 'scheduled', id, dueAt: new Date(at) })));
    for (const junk of ['x', '{"op":"scheduledMany"}', '{"op":"scheduledMany","tasks":[["1","2"]]}', '{"op":"scheduledMany","tasks":[[1,2]]}', '{"op":"scheduled","id":"1","dueAtMs":1}']) {
      expect(parseScheduledMany(junk)).toBeNull();
    }
    expect(parseTaskNotice(payloads[0] as string)).toBeNull();
  });

  it('workerNoticePayload and parseWorkerNotice round-trip', () => {
    const payload = workerNoticePayload({ worker: 'w-1', group: 'g', hello: true });
    expect(parseWorkerNotice(payload)).toEqual({ op: 'worker', worker: 'w-1', group: 'g', hello: true });
    expect(parseTaskNotice(payload)).toBeNull();
    for (const junk of ['x', '{"op":"worker","worker":"","group":"g","hello":true}', '{"op":"worker","worker":"w","group":"g"}']) expect(parseWorkerNotice(junk)).toBeNull();
  });

  it('parseTaskNotice returns null for any other payload', () => {
    for (const payload of ['not json', 'null', '42', '{"op":"probe","nonce":"x"}', '{"op":"scheduled","id":1,"dueAtMs":1}', '{"op":"scheduled","id":"1","dueAtMs":"1"}']) {
      expect(parseTaskNotice(payload)).toBeNull();
    }
    expect(parseTaskNotice('{"op":"cancelRequested","id":"7","dueAtMs":0}')).toEqual({ op: 'cancelRequested', id: '7', dueAt: new Date(0) });
  });

  it('defaultNotifyChannel is postpone_<schema>, cut to 63 bytes', () => {
    expect(defaultNotifyChannel('s')).toBe('postpone_s');
    expect(defaultNotifyChannel('s'.repeat(80))).toHaveLength(MAX_IDENTIFIER_LENGTH);
  });
});
