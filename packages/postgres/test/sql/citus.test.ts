/**
 * The Citus dialect (`src/sql/citus.ts`): every rewrite still matches a statement of its frozen
 * migration, the plain dialect sends the split texts unchanged, and against the test database the
 * store detects its dialect from `pg_extension`; on a Citus coordinator `migrate()` leaves every
 * table of the schema in ONE shard group of schema-based sharding, on a worker node.
 */
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgStore } from '../../src/drivers/pg.js';
import { citusCompleteManySplit, citusCronSplit, citusInsertSplit, citusMoveSplit } from '../../src/sql/citus-route.js';
import { adminStatements, citusRewrites, citusStatement, cronStatements, dedupStatements, migrations, migrationStatements, rateLimitStatements, splitStatements, statements, withoutFinishHandoff } from '../../src/sql/index.js';
import type { TaskNotice } from '../../src/index.js';

describe('citus rewrites', () => {
  it('each replaces a statement that its migration still holds, and the postgres dialect changes nothing', () => {
    const schema = 'postpone';
    const all = migrations(schema);
    for (const r of citusRewrites(schema)) {
      const m = all.find((x) => x.version === r.version);
      expect(m && splitStatements(m.sql)).toContain(r.original);
    }
    for (const m of all) expect(migrationStatements(m, schema, 'postgres')).toEqual(splitStatements(m.sql));
    const v11 = all.find((m) => m.version === 11);
    if (v11 === undefined) throw new Error('migration 11 missing');
    const citus = migrationStatements(v11, schema, 'citus');
    expect(citus.some((s) => s.includes('partition by range'))).toBe(false);
    expect(citus.some((s) => s.includes('_legacy'))).toBe(false);
    expect(citus.filter((s) => s.startsWith('create or replace function "postpone".ensure_history_partitions'))).toHaveLength(1);
  });
});

describe('citusStatement', () => {
  it('leaves no clock function, NOTIFY or STABLE epoch in any task or admin statement, and keeps the rest', () => {
    const all = { ...statements('postpone'), ...adminStatements('postpone') };
    let timed = 0;
    let notifying = 0;
    for (const [name, text] of Object.entries(all)) {
      if (typeof text !== 'string') continue;
      const c = citusStatement(text);
      expect([name, c.text.replaceAll('default now()', '').includes('now()'), c.text.includes('clock_timestamp()'), c.text.includes('pg_notify(')]).toEqual([name, false, false, false]);
      expect([name, /extract\(epoch from [a-z$][\w.:$]*\)/.test(c.text)]).toEqual([name, false]);
      if (c.needsNow) timed += 1;
      if (c.channelParam !== undefined) notifying += 1;
      // No trigger reads the finish hand-off on Citus (migration 25): every statement goes without it.
      expect([name, c.text.includes('finish_handoff'), c.text.includes('postpone.finished')]).toEqual([name, false, false]);
      if (!c.needsNow && c.channelParam === undefined && !text.includes('extract(epoch')) expect(c.text).toBe(withoutFinishHandoff(text));
    }
    expect(timed).toBeGreaterThan(10);
    expect(notifying).toBe(8); // taskInsertManyKeyed notifies as taskInsertMany does
    // The INSERTs whose RETURNING Citus refuses return through a CTE (the rewrite still matches their text).
    const gate = citusStatement(dedupStatements('postpone').throttleGate);
    expect([gate.needsNow, gate.text.startsWith('with gate as (insert into "postpone".dedup_throttle as d'), gate.text.endsWith('  from gate g')]).toEqual([true, true, true]);
    expect(gate.text).toContain('select g.kind, g.key, g.closed_until > $1::timestamptz as throttled');
    const set = citusStatement(rateLimitStatements('postpone').rateLimitSet);
    expect([set.needsNow, set.text.startsWith('with r as (insert into "postpone".rate_limit as r'), set.text.includes('\nreturning r.*)\nselect r.scope, r.name, r.max_starts as maxstarts'), set.text.endsWith(' from r')]).toEqual([true, true, true, true]);
    expect(set.text).not.toContain('now()');
    const record = citusStatement(dedupStatements('postpone').throttleRecord);
    expect(record.text).toContain(`closed_until = to_timestamp(extract(epoch from ($1::timestamptz - timestamptz 'epoch'))::float8 + x."throttleMs"::float8 / 1000)`);
    const cancel = citusStatement(statements('postpone').taskCancel);
    expect(cancel.channelParam).toBe(2);
    expect(cancel.text).toContain(`case when $3::text is not null then '{"op":"cancelled","id":"' || c.id::text`);
  });
});

describe('citus routing during another node outage (src/sql/citus-route.ts)', () => {
  const st = statements('postpone');
  it('gives every statement with an INSERT … SELECT in a CTE a runner of top-level INSERTs', () => {
    for (const name of ['taskInsertMany', 'taskFail', 'taskRelease', 'taskSnooze', 'taskCancel', 'taskReclaimExpired', 'taskCompleteManyFenced'] as const) {
      expect([name, citusStatement(st[name]).run !== undefined]).toEqual([name, true]);
    }
    for (const name of ['taskClaim', 'taskCompleteFenced', 'taskExtend'] as const) expect([name, citusStatement(st[name]).run]).toEqual([name, undefined]);
  });
  it('splits fail into the live UPDATE and the finish INSERT, without the channel or unread parameters', () => {
    const split = citusMoveSplit(withoutFinishHandoff(st.taskFail), 6);
    if (split === undefined) throw new Error('taskFail has no split');
    expect(split.live).not.toContain('task_history');
    expect(split.live).toContain('), left_claim as (\n  select * from stay\n)');
    expect(split.finish).toMatch(/^with fenced as materialized \(/);
    expect(split.finish).toContain('\n), gone as (\n');
    expect(split.finish).not.toContain('), stay as (');
    expect(split.finish).toContain('\ninsert into "postpone".task_history (');
    // $1 now, $2 id, $3 attempt, $4 error, $7 retryable, $8 limit are read; $5 backoff (the live UPDATE's) and $6 channel are not.
    expect(split.finishParams).toEqual([0, 1, 2, 3, 6, 7]);
    expect(split.finish.slice(split.finish.lastIndexOf('returning '))).not.toContain('$');
    const reclaim = citusMoveSplit(withoutFinishHandoff(st.taskReclaimExpired), 3);
    expect(reclaim?.finish).toContain('for update skip locked');
    expect(citusMoveSplit(withoutFinishHandoff(st.taskCancel), 3)?.finishNotice).toBe('cancelled');
  });
  it('makes the schedule an id draw and a top-level upsert per mode, and completeMany a top-level INSERT', () => {
    const split = citusInsertSplit(st.taskInsertMany);
    if (split === undefined) throw new Error('taskInsertMany has no split');
    expect(split.ids).toMatch(/^select nextval\(pg_get_serial_sequence\('"postpone"\.task', 'id'\)::regclass\)::text as id from generate_series\(1, \$1::int\) g$/);
    for (const text of [split.upsert.keep, split.upsert.replace]) {
      expect(text).toMatch(/^with input as \(/);
      expect(text).toContain('\n)\ninsert into "postpone".task as t (');
      expect([text.includes('nextval'), text.includes('holders'), text.includes('keylocks'), text.includes('$4')]).toEqual([false, false, false, false]);
    }
    expect(split.upsert.replace).toContain("'replace' = 'replace'");
    expect(split.upsert.keep).toContain("'keep' = 'replace'");
    const cron = citusCronSplit(cronStatements('postpone').cronScheduleOccurrence, 10);
    expect(cron?.text).toContain('\n)\ninsert into "postpone".task (');
    expect(cron?.params).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12]);
    expect(citusStatement(cronStatements('postpone').cronScheduleOccurrence).run).toBeDefined();
    expect(citusCompleteManySplit(withoutFinishHandoff(st.taskCompleteManyFenced))).toMatch(/\n\)\ninsert into "postpone"\.task_history \([\s\S]*\nreturning id::text as id$/);
  });
});

describe('dialect on the test database', () => {
  const schema = uniqueSchemaName('citus');
  let client: pg.Client;
  let citusVersion: string | undefined;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: testDatabaseUrl() });
    await client.connect();
    citusVersion = (await client.query<{ extversion: string }>(`select extversion from pg_extension where extname = 'citus'`)).rows[0]?.extversion;
  });
  afterAll(async () => {
    await client.end();
    await dropSchema(testDatabaseUrl(), schema);
  });

  it('is detected from pg_extension; on Citus every table of the schema is one shard group on a worker', async () => {
    const store = createPgStore({ connectionString: testDatabaseUrl(), schema, scheduleNotices: 'each' });
    try {
      expect(await store.dialect()).toBe(citusVersion === undefined ? 'postgres' : 'citus');
      const result = await store.migrate();
      expect(result.version).toBe(migrations(schema).at(-1)?.version);
      // The notice of a schedule reaches a listener on the coordinator (on Citus: sent from it).
      const heard: TaskNotice[] = [];
      const unlisten = await store.listen((n) => heard.push(n));
      const before = Date.now();
      const scheduled = await store.schedule({ kind: 'k', payload: { a: 1 }, delayMs: 60_000 });
      expect((await store.getTask(scheduled.id))?.payload).toEqual({ a: 1 });
      for (let i = 0; i < 100 && heard.length === 0; i += 1) await new Promise((r) => setTimeout(r, 20));
      await unlisten();
      expect(heard).toHaveLength(1);
      expect(heard[0]).toMatchObject({ op: 'scheduled', id: scheduled.id });
      // The due time is the database's clock + 60 s (same machine: within a few seconds of ours).
      expect(Math.abs(scheduled.dueAt.getTime() - (before + 60_000))).toBeLessThan(5_000);
    } finally {
      await store.close();
    }
    if (citusVersion === undefined) return;
    const { rows } = await client.query<{ name: string; type: string; colocation: number; nodes: number }>(
      `select t.table_name::text as name, t.citus_table_type as type, t.colocation_id::int as colocation,
              (select count(distinct s.nodeport)::int from citus_shards s where s.table_name = t.table_name) as nodes
         from citus_tables t where t.table_name::text like $1 order by 1`,
      [`${schema}.%`],
    );
    expect(rows.map((r) => r.name.slice(schema.length + 1))).toEqual([
      'cron_schedule',
      'dedup_throttle',
      'effect',
      'key_limit',
      'key_rate_limit',
      'key_rate_log',
      'migration',
      'pause',
      'rate_limit',
      'task',
      'task_batch',
      'task_dependency',
      'task_history',
      'task_history_cancelled',
      'task_history_dead',
      'task_history_done',
      'task_waiter',
    ]);
    // Migration 18's finish trigger is not made on Citus (citusRewrites): waitFor polls there.
    const triggers = await client.query(`select tgname from pg_trigger where not tgisinternal and tgrelid = to_regclass($1)`, [`${schema}.task`]);
    expect(triggers.rows).toEqual([]);
    expect(new Set(rows.map((r) => r.type))).toEqual(new Set(['schema']));
    expect(new Set(rows.map((r) => r.colocation)).size).toBe(1);
    expect(rows.every((r) => r.nodes === 1)).toBe(true);
    const coordinator = (await client.query<{ port: number }>(`select current_setting('port')::int as port`)).rows[0]?.port;
    const placed = await client.query<{ port: number }>(`select distinct nodeport::int as port from citus_shards where table_name::text like $1`, [`${schema}.%`]);
    expect(placed.rows).toHaveLength(1);
    expect(placed.rows[0]?.port).not.toBe(coordinator);
  });
});
