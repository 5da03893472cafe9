/**
 * Migration 11 (live and history apart) against a real PostgreSQL, with no store in between: it
 * moves every finished row of a version-10 schema to `task_history` (ids, effects and retry links
 * kept, `finished_at` = `updated_at`), it is re-runnable, partitions are made ahead and listed with
 * their bounds, and the claim still reads only the live table through `task_claim_idx`. Then
 * migration 12: the CHECK `task_live_state` that keeps finished rows out of the live table.
 */
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPLETION_MIGRATION_VERSION, HISTORY_DAYS_AHEAD, HISTORY_MIGRATION_VERSION, historyStatements, LIVE_STATE_MIGRATION_VERSION, migrations, quoteIdent, statements } from '../../src/sql/index.js';
import { type PlanNode, planNodes } from '../support/plans.js';

const schema = uniqueSchemaName('hist');
const q = quoteIdent(schema);
const s = statements(schema);
const h = historyStatements(schema);
let pool: pg.Pool;

async function apply(versions: (v: number) => boolean): Promise<void> {
  for (const m of migrations(schema).filter((m) => versions(m.version))) {
    await pool.query(m.sql);
    await pool.query(s.migrationInsert, [m.version, m.name]);
  }
}

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 3 });
  pool.on('error', () => {});
  await pool.query(s.schemaCreate);
  await pool.query(s.migrationTableCreate);
  await apply((v) => v < HISTORY_MIGRATION_VERSION);
});
afterAll(async () => {
  await pool.end();
  await dropSchema(testDatabaseUrl(), schema);
});

/** The generic plan of a statement, as JSON text (`explain (generic_plan)`, PostgreSQL 17 EXPLAIN). */
const plan = async (text: string) => JSON.stringify((await pool.query(`explain (generic_plan, format json) ${text}`)).rows[0]);

type Counts = { live: Record<string, number>; history: Record<string, number>; effects: number };
async function counts(): Promise<Counts> {
  const by = async (table: string) =>
    Object.fromEntries((await pool.query<{ state: string; n: number }>(`select state, count(*)::int as n from ${q}.${table} group by state`)).rows.map((r) => [r.state, r.n]));
  const [e] = (await pool.query<{ n: number }>(`select count(*)::int as n from ${q}.effect`)).rows;
  return { live: await by('task'), history: await by('task_history'), effects: e?.n ?? -1 };
}

describe('migration 11: live and history apart', () => {
  it('moves every DONE, DEAD and CANCELLED row to task_history with its id, effect and retry link; the live table keeps SCHEDULED and CLAIMED', async () => {
    // Version-10 rows: finished two days ago (the legacy partition) and an hour ago (today's or the legacy one).
    const { rows } = await pool.query<{ id: string; state: string; updatedms: number }>(
      `insert into ${q}.task (kind, state, due_at, attempt, max_attempts, lease_owner, lease_until, result, updated_at)
       select 'k', st, now(), case when st = 'SCHEDULED' then 0 else 1 end, 3,
              case when st = 'CLAIMED' then 'w' end, case when st = 'CLAIMED' then now() + interval '1 hour' end,
              case when st = 'DONE' then '{"ok":true}'::jsonb end, now() - ago
         from unnest(array['SCHEDULED', 'CLAIMED', 'DONE', 'DONE', 'DEAD', 'CANCELLED']) with ordinality as x(st, n),
              lateral (select case when x.n % 2 = 0 then interval '2 days' else interval '1 hour' end as ago) a
       returning id::text as id, state, floor(extract(epoch from updated_at) * 1000)::float8 as updatedms`,
    );
    const done = rows.filter((r) => r.state === 'DONE');
    for (const d of done) await pool.query(`insert into ${q}.effect (task_id, attempt, worker) values ($1, 1, 'w')`, [d.id]);
    const dead = rows.find((r) => r.state === 'DEAD')!;
    await pool.query(`update ${q}.task set retried_as = 999 where id = $1`, [dead.id]);
    const { rows: before } = await pool.query<{ n: number }>(`select count(*)::int as n from ${q}.task`);
    expect(before[0]?.n).toBe(6);

    await apply((v) => v === HISTORY_MIGRATION_VERSION);
    expect(await counts()).toEqual({ live: { SCHEDULED: 1, CLAIMED: 1 }, history: { DONE: 2, DEAD: 1, CANCELLED: 1 }, effects: 2 });
    const moved = await pool.query<{ id: string; state: string; finishedms: number; retriedas: string | null; result: unknown; leaf: string }>(
      `select id::text as id, state, floor(extract(epoch from finished_at) * 1000)::float8 as finishedms, retried_as::text as retriedas, result,
              tableoid::regclass::text as leaf
         from ${q}.task_history order by id`,
    );
    const finished = rows.filter((r) => ['DONE', 'DEAD', 'CANCELLED'].includes(r.state));
    expect(moved.rows.map((r) => [r.id, r.state, r.finishedms])).toEqual(finished.map((r) => [r.id, r.state, r.updatedms]));
    expect(moved.rows.find((r) => r.id === dead.id)?.retriedas).toBe('999');
    expect(moved.rows.filter((r) => r.state === 'DONE').every((r) => (r.result as { ok?: boolean }).ok === true)).toBe(true);
    // Each row is in its state's partition; two days ago is before the migration's day: `_legacy`.
    for (const r of moved.rows) expect(r.leaf).toMatch(new RegExp(`task_history_${r.state.toLowerCase()}_(legacy|\\d{8})$`));
    expect(moved.rows.filter((r) => r.leaf.endsWith('_legacy')).length).toBeGreaterThanOrEqual(2);
    // Effects point at moved tasks (no foreign key any more; the primary key still allows one per task).
    const dup = await pool.query(`insert into ${q}.effect (task_id, attempt, worker) values ($1, 1, 'w')`, [done[0]!.id]).then(
      () => 'inserted',
      (e: { code?: string }) => e.code,
    );
    expect(dup).toBe('23505');
  });

  it('is re-runnable: its SQL again moves nothing, creates nothing twice, and ids keep rising from the one sequence', async () => {
    const before = await counts();
    const [max] = (await pool.query<{ id: string }>(`select greatest((select max(id) from ${q}.task), (select max(id) from ${q}.task_history))::text as id`)).rows;
    const migration = migrations(schema).find((m) => m.version === HISTORY_MIGRATION_VERSION)!;
    await pool.query(migration.sql);
    await pool.query(migration.sql);
    expect(await counts()).toEqual(before);
    const input = JSON.stringify([{ kind: 'k', key: null, payload: null, delayMs: 0, runAt: null, maxAttempts: 1, traceContext: null, retry: null, queue: 'default', priority: 0 }]);
    const { rows } = await pool.query<{ id: string }>(s.taskInsertMany, [null, input, 'postpone_hist_test', 'keep']);
    expect(BigInt(rows[0]!.id) > BigInt(max!.id)).toBe(true);
    await pool.query(`delete from ${q}.task where id = $1`, [rows[0]!.id]);
  });

  it('partitions: each state has _legacy, _default and the days from today through HISTORY_DAYS_AHEAD more; ensure makes only the missing ones', async () => {
    const leaves = (await pool.query<{ name: string; state: string; upperms: number | null }>(h.historyPartitions)).rows;
    for (const state of ['DONE', 'DEAD', 'CANCELLED']) {
      const mine = leaves.filter((l) => l.state === state);
      expect(mine.filter((l) => l.upperms === null).map((l) => l.name)).toEqual([`task_history_${state.toLowerCase()}_default`]);
      expect(mine.filter((l) => /_\d{8}$/.test(l.name))).toHaveLength(HISTORY_DAYS_AHEAD + 1);
      const legacy = mine.find((l) => l.name.endsWith('_legacy'));
      expect(legacy?.upperms).toBe(Math.floor(Date.now() / 86_400_000) * 86_400_000);
    }
    expect((await pool.query(h.ensurePartitions, [null, HISTORY_DAYS_AHEAD])).rows).toEqual([{ created: 0 }]);
    // Ten days on: the two days beyond today's horizon, per state.
    const later = new Date(Date.now() + 10 * 86_400_000).toISOString();
    expect((await pool.query(h.ensurePartitions, [later, 0])).rows).toEqual([{ created: 3 }]);
  });

  it('a finished row whose day has no partition lands in the default partition, and ensure then skips that day', async () => {
    const far = Date.UTC(2040, 5, 1, 12);
    await pool.query(
      `insert into ${q}.task_history (id, kind, state, due_at, attempt, max_attempts, finished_at) values (900000001, 'k', 'DEAD', now(), 1, 1, $1)`,
      [new Date(far).toISOString()],
    );
    const [row] = (await pool.query<{ leaf: string }>(`select tableoid::regclass::text as leaf from ${q}.task_history where id = 900000001`)).rows;
    expect(row?.leaf).toMatch(/task_history_dead_default$/);
    // DONE and CANCELLED get their day; DEAD's day is skipped (its row stays in the default partition).
    expect((await pool.query(h.ensurePartitions, [new Date(far).toISOString(), 0])).rows).toEqual([{ created: 2 }]);
    const cut = new Date(far + 1).toISOString();
    expect((await pool.query(h.pruneDefault('task_history_dead_default'), [cut])).rows).toEqual([{ deleted: 1, effectsdeleted: 0 }]);
  });

  it('the claim reads only the live table, through task_claim_idx', async () => {
    // The claim as a store on this schema (before the pause table of migration 15) sends it.
    const claim = await plan(statements(schema, { pause: false }).taskClaim);
    expect(claim).toContain('task_claim_idx');
    expect(claim).not.toContain('task_history');
    expect(claim).not.toContain('Seq Scan');
  });
});

describe('migration 12: the live table holds live states only', () => {
  const constraint = async () =>
    (
      await pool.query<{ validated: boolean }>(
        `select convalidated as validated from pg_constraint where conrelid = to_regclass($1) and conname = 'task_live_state'`,
        [`${q}.task`],
      )
    ).rows;
  const insertInto = (state: string) =>
    pool.query<{ id: string }>(`insert into ${q}.task (kind, state, due_at, attempt, max_attempts) values ('k12', $1, now(), 1, 3) returning id::text as id`, [state]);

  it('moves a finished row a pre-11 process left in task, then refuses every terminal state in task with 23514; re-runnable', async () => {
    expect(await constraint()).toEqual([]);
    // Before version 12 nothing refuses it: a process of a version before 11 completing in place.
    const [stray] = (await insertInto('DONE')).rows;
    const live = await counts();
    await apply((v) => v === LIVE_STATE_MIGRATION_VERSION);
    expect(await constraint()).toEqual([{ validated: true }]);
    const after = await counts();
    expect(after.live).toEqual({ ...live.live, DONE: undefined });
    expect(after.history.DONE).toBe((live.history.DONE ?? 0) + 1);
    const [moved] = (await pool.query<{ state: string }>(`select state from ${q}.task_history where id = $1`, [stray!.id])).rows;
    expect(moved?.state).toBe('DONE');
    for (const state of ['DONE', 'DEAD', 'CANCELLED']) {
      const refused = await insertInto(state).then(
        () => undefined,
        (e: { code?: string; constraint?: string }) => [e.code, e.constraint],
      );
      expect(refused, state).toEqual(['23514', 'task_live_state']);
    }
    // An UPDATE into a terminal state in place is refused too: a finished task must move.
    const [scheduled] = (await insertInto('SCHEDULED')).rows;
    const updated = await pool.query(`update ${q}.task set state = 'CANCELLED' where id = $1`, [scheduled!.id]).then(
      () => 'updated',
      (e: { code?: string }) => e.code,
    );
    expect(updated).toBe('23514');
    await pool.query(`delete from ${q}.task where id = $1`, [scheduled!.id]);
    // The migration's SQL again (as migrate_concurrently runs the last one before migrate() does): nothing changes.
    const migration = migrations(schema).find((m) => m.version === LIVE_STATE_MIGRATION_VERSION)!;
    await pool.query(migration.sql);
    await pool.query(migration.sql);
    expect(await constraint()).toEqual([{ validated: true }]);
    expect(await counts()).toEqual(after);
  });
});

describe('migration 13: no effect row of the library; the worker of a DONE is in history', () => {
  const columns = async () =>
    (
      await pool.query<{ rel: string; nullable: string; type: string }>(
        `select c.relname::text as rel, a.is_nullable as nullable, a.data_type as type
           from pg_class c join information_schema.columns a on a.table_schema = $1 and a.table_name = c.relname
          where c.relnamespace = to_regnamespace($1) and c.relname like 'task_history%' and a.column_name = 'finished_by'
          order by 1`,
        [schema],
      )
    ).rows;
  const historyTables = async () =>
    (await pool.query<{ rel: string }>(`select relname::text as rel from pg_class where relnamespace = to_regnamespace($1) and relname like 'task_history%' and relkind in ('r', 'p') order by 1`, [schema])).rows.map((r) => r.rel);

  it('adds task_history.finished_by (nullable text) to every partition, present and made later; effect stays, commented unused; re-runnable', async () => {
    expect(await columns()).toEqual([]);
    const before = await counts();
    await apply((v) => v === COMPLETION_MIGRATION_VERSION);
    const tables = await historyTables();
    expect(tables.length).toBeGreaterThan(1);
    expect((await columns()).map((c) => c.rel)).toEqual(tables);
    expect(new Set((await columns()).map((c) => `${c.nullable}:${c.type}`))).toEqual(new Set(['YES:text']));
    // Rows already there read null (catalog only, no rewrite); the effect rows of earlier code stay.
    expect((await pool.query(`select count(*)::int as n from ${q}.task_history where finished_by is not null`)).rows).toEqual([{ n: 0 }]);
    expect(await counts()).toEqual(before);
    const [comment] = (await pool.query<{ c: string }>(`select obj_description(to_regclass($1), 'pg_class') as c`, [`${q}.effect`])).rows;
    expect(comment?.c).toMatch(/^Unused since migration 13/);
    // A day partition made afterwards (`like task_history`) has the column too.
    const far = Date.UTC(2041, 0, 1);
    expect((await pool.query(h.ensurePartitions, [new Date(far).toISOString(), 0])).rows).toEqual([{ created: 3 }]);
    expect((await columns()).map((c) => c.rel)).toEqual(await historyTables());
    const migration = migrations(schema).find((m) => m.version === COMPLETION_MIGRATION_VERSION)!;
    expect(migration.minReader).toBeUndefined();
    await pool.query(migration.sql);
    expect(await counts()).toEqual(before);
  });

  it('a complete is one statement through an index of id, writing no effect row; its history row keeps the worker', async () => {
    // Today's complete names columns of later migrations (`progress`, 18): bring the schema up to date first.
    await apply((v) => v > COMPLETION_MIGRATION_VERSION);
    // A table of a few rows is cheaper to read whole; what is asked is whether an index of id can serve the complete.
    const client = await pool.connect();
    let complete: string;
    try {
      await client.query('set enable_seqscan = off');
      complete = JSON.stringify((await client.query(`explain (generic_plan, format json) ${s.taskCompleteFenced}`)).rows[0]);
    } finally {
      await client.query('reset enable_seqscan');
      client.release();
    }
    expect(complete).toMatch(/"Index Name":"task_(pkey|claimed_idx)"/);
    // The one sequential scan allowed: the finish hand-off's look at the few rows of `task_waiter` (migration 25, once per statement).
    const seqScans = planNodes((JSON.parse(complete) as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan).filter((n) => n['Node Type'] === 'Seq Scan');
    expect(seqScans.map((n) => n['Relation Name'])).toEqual(['task_waiter']);
    expect(s.taskCompleteFenced).not.toMatch(/effect/);
    expect(s.taskCompleteManyFenced).not.toMatch(/effect/);
    const [t] = (
      await pool.query<{ id: string }>(
        `insert into ${q}.task (kind, state, due_at, attempt, max_attempts, lease_owner, lease_until) values ('k13', 'CLAIMED', now(), 1, 3, 'w13', now() + interval '1 hour') returning id::text as id`,
      )
    ).rows;
    const before = await counts();
    expect((await pool.query(s.taskCompleteFenced, [null, t!.id, 1, '{"ok":1}', 'w13'])).rows).toEqual([{ id: t!.id }]);
    expect((await counts()).effects).toBe(before.effects);
    expect((await pool.query(s.completionGet, [t!.id])).rows).toMatchObject([{ taskid: t!.id, attempt: 1, worker: 'w13' }]);
  });
});
