/**
 * The schema of docs/contract.md#data-model in PostgreSQL: the lease CHECK, the two partial indexes, the claim's
 * Index Cond on `task_claim_idx`, and migrations that are idempotent under concurrency.
 */
import { StoreError, TASK_STATES, TestClock } from '@postpone/core';
import { uniqueSchemaName } from '@postpone/embedded';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations, SqlState, statements, translateError } from '../src/index.js';
import { Admin, makeKit } from './support/kits.js';

const admin = Admin.create('schema');
const kit = makeKit('pg');
beforeAll(() => kit.store({ schema: admin.schema }).migrate());
afterAll(async () => {
  await kit.close();
  await admin.drop();
});

async function rawError(text: string, params: unknown[] = []): Promise<unknown> {
  try {
    await admin.query(text, params);
  } catch (error) {
    return error;
  }
  throw new Error(`expected ${text} to fail`);
}

type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Index Cond'?: string; Filter?: string; Plans?: PlanNode[] };

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

describe('task table', () => {
  it('the CHECK refuses CLAIMED without a full lease, and a lease outside CLAIMED (23514)', async () => {
    const [row] = await admin.query<{ id: string }>(
      `insert into ${admin.t('task')} (kind, state, due_at, max_attempts) values ('k', 'SCHEDULED', now(), 1) returning id::text`,
    );
    const id = row?.id;
    const bad: [string, string | null, string | null][] = [
      ['CLAIMED', null, null],
      ['CLAIMED', 'w', null],
      ['CLAIMED', null, '2031-01-01T00:00:00Z'],
      ['SCHEDULED', 'w', '2031-01-01T00:00:00Z'],
      ['DONE', 'w', '2031-01-01T00:00:00Z'],
    ];
    for (const [state, owner, until] of bad) {
      const error = await rawError(`update ${admin.t('task')} set state = $2, lease_owner = $3, lease_until = $4 where id = $1`, [id, state, owner, until]);
      const translated = translateError(error);
      expect(translated).toBeInstanceOf(StoreError);
      expect((translated as StoreError).sqlState).toBe(SqlState.CHECK_VIOLATION);
    }
    await admin.query(`update ${admin.t('task')} set state = 'CLAIMED', lease_owner = 'w', lease_until = now() where id = $1`, [id]);
    expect((await admin.query<{ state: string }>(`select state from ${admin.t('task')} where id = $1`, [id]))[0]?.state).toBe('CLAIMED');
    await admin.truncate();
  });

  it('the state CHECK lists exactly the core states: the live ones in task, the terminal ones only in task_history (migration 12)', async () => {
    const error = await rawError(`insert into ${admin.t('task')} (kind, state, due_at, max_attempts) values ('k', 'RUNNING', now(), 1)`);
    expect((translateError(error) as StoreError).sqlState).toBe(SqlState.CHECK_VIOLATION);
    const live = ['SCHEDULED', 'CLAIMED'];
    for (const [i, state] of TASK_STATES.entries()) {
      const lease = state === 'CLAIMED' ? `'w', now()` : 'null, null';
      const intoTask = `insert into ${admin.t('task')} (kind, state, due_at, max_attempts, lease_owner, lease_until) values ('k', $1, now(), 1, ${lease})`;
      if (live.includes(state)) {
        await admin.query(intoTask, [state]);
        continue;
      }
      const refused = translateError(await rawError(intoTask, [state]));
      expect(refused, state).toBeInstanceOf(StoreError);
      expect((refused as StoreError).sqlState, state).toBe(SqlState.CHECK_VIOLATION);
      expect((refused as StoreError).message, state).toContain('task_live_state');
      await admin.query(`insert into ${admin.t('task_history')} (id, kind, state, due_at, max_attempts, finished_at) values ($2, 'k', $1, now(), 1, now())`, [state, 900_000_000 + i]);
    }
    expect([await admin.count(), await admin.count('task_history')]).toEqual([live.length, TASK_STATES.length - live.length]);
    await admin.truncate();
  });

  it('both partial indexes exist with their predicates', async () => {
    const rows = await admin.query<{ indexname: string; indexdef: string }>(
      'select indexname, indexdef from pg_indexes where schemaname = $1 and tablename = $2 order by indexname',
      [admin.schema, 'task'],
    );
    const byName = Object.fromEntries(rows.map((r) => [r.indexname, r.indexdef]));
    // Migration 10 replaced task_due_idx (due_at, id) with the claim's index per queue, kind and priority.
    expect(byName.task_due_idx).toBeUndefined();
    expect(byName.task_claim_idx).toMatch(/USING btree \(queue, kind, priority, due_at, id\) WHERE \(state = 'SCHEDULED'::text\)$/);
    // Migration 7: reclaim reads CLAIMED rows by id; no index reads lease_until (HOT renewals).
    expect(byName.task_claimed_idx).toMatch(/USING btree \(id\) WHERE \(state = 'CLAIMED'::text\)$/);
    expect(byName.task_lease_idx).toBeUndefined();
    expect(Object.values(byName).filter((def) => /lease_until/.test(def))).toEqual([]);
  });

  it('ships its vacuum settings: fillfactor 90, autovacuum by dead-row count (migration 7)', async () => {
    const rows = await admin.query<{ options: string[] }>(
      `select c.reloptions as options from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relname = 'task'`,
      [admin.schema],
    );
    expect([...(rows[0]?.options ?? [])].sort()).toEqual([
      'autovacuum_analyze_scale_factor=0',
      'autovacuum_analyze_threshold=5000',
      'autovacuum_vacuum_scale_factor=0',
      'autovacuum_vacuum_threshold=1000',
      'fillfactor=90',
    ]);
  });

  it('a lease renewal is a HOT update: 30 renewals of 10 claimed tasks add no index entry', async () => {
    const ids = (
      await admin.query<{ id: string }>(
        `insert into ${admin.t('task')} (kind, state, due_at, max_attempts, attempt, lease_owner, lease_until)
         select 'hot', 'CLAIMED', now(), 3, 1, 'w1', now() + interval '1 hour' from generate_series(1, 10) returning id::text`,
      )
    ).map((r) => r.id);
    const extend = statements(admin.schema).taskExtend;
    const client = await admin.pool.connect();
    try {
      // pg_stat_xact_user_tables counts this transaction's own updates, HOT ones apart (PostgreSQL 17 §27.2.21).
      await client.query('begin');
      let renewed = 0;
      // Inside one transaction no old version can be pruned, so 10 rows and their 30 new versions
      // (about 40 × 140 bytes) must fit one 8 kB page: then HOT depends on the indexed columns alone.
      for (let round = 0; round < 3; round++) {
        for (const id of ids) renewed += (await client.query(extend, [null, id, 1, 60_000])).rowCount ?? 0;
      }
      const stats = await client.query<{ upd: string; hot: string }>(
        `select n_tup_upd::text as upd, n_tup_hot_upd::text as hot from pg_stat_xact_user_tables where schemaname = $1 and relname = 'task'`,
        [admin.schema],
      );
      await client.query('commit');
      expect(renewed).toBe(30);
      expect(Number(stats.rows[0]?.upd)).toBe(30);
      expect(Number(stats.rows[0]?.hot)).toBe(30);
    } finally {
      client.release();
      await admin.truncate();
    }
  });

  it('effect has task_id as primary key', async () => {
    const [row] = await admin.query<{ def: string }>(
      `select pg_get_constraintdef(c.oid) as def from pg_constraint c where c.conrelid = $1::regclass and c.contype = 'p'`,
      [admin.t('effect')],
    );
    expect(row?.def).toBe('PRIMARY KEY (task_id)');
  });
});

describe('claim plan', () => {
  it('with the database clock (null $now) the claim reads task_claim_idx with an Index Cond on now(); clock_timestamp() would be a Filter', async () => {
    const store = kit.store({ schema: admin.schema });
    // 20 000 tasks not yet due, none due (the seed's boundary_partial_due_index shape, halved).
    await store.scheduleMany(Array.from({ length: 20_000 }, (_, i) => ({ kind: 'later', delayMs: 3_600_000 + i })));
    await admin.query(`analyze ${admin.t('task')}`);
    const claim = statements(admin.schema).taskClaim;
    const explain = async (text: string) => {
      const [row] = await admin.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (format json) ${text}`, [null, 'w', 1_000, 10, 'default', null]);
      // The level's range scan: the one whose Index Cond bounds due_at (the others find the levels).
      return planNodes((row!['QUERY PLAN'][0] as { Plan: PlanNode }).Plan).filter((n) => n['Index Name'] === 'task_claim_idx' && `${n['Index Cond'] ?? ''} ${n.Filter ?? ''}`.includes('due_at'));
    };
    const [withNow] = await explain(claim);
    // The null parameter folds away: `COALESCE(now())`, STABLE, so usable as an index bound (§38.7).
    expect(withNow?.['Index Cond']).toMatch(/\(due_at <= (COALESCE\()?now\(\)\)?\)\)$/);
    // Only the partial-index predicate is rechecked (kept because the rows are locked); due_at is not filtered.
    expect(withNow?.Filter ?? '').not.toContain('due_at');

    const volatile = claim.replace('s.due_at <= coalesce($1::timestamptz, now())', 's.due_at <= coalesce($1::timestamptz, clock_timestamp())');
    expect(volatile).not.toBe(claim);
    const [withClock] = await explain(volatile);
    expect(withClock?.['Index Cond'] ?? '').not.toContain('due_at');
    expect(withClock?.Filter).toContain('clock_timestamp()');

    expect(await store.claim({ owner: 'w', limit: 10, leaseMs: 1_000 })).toEqual([]);
    await admin.truncate();
  });
});

describe('claim and reclaim limits', () => {
  it('never exceed the limit, whatever the plan: the pick is a MATERIALIZED CTE evaluated once', async () => {
    const s = statements(admin.schema);
    for (const name of ['taskClaim', 'taskReclaimExpired'] as const) {
      const plan = (await admin.query<{ 'QUERY PLAN': string }>(`explain ${s[name]}`, name === 'taskClaim' ? [null, 'w', 1_000, 2, 'default', null] : [null, 2, 'c']))
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      expect(plan, name).toContain('CTE picked');
      // The reclaim lock gates the scan: taken before any row is read, or nothing is read at all.
      if (name === 'taskReclaimExpired') expect(plan, name).toMatch(/One-Time Filter: \(InitPlan \d+\)/);
    }
    const clock = new TestClock();
    const store = kit.store({ schema: admin.schema, clock });
    for (const n of [1, 3, 7, 25]) {
      await store.scheduleMany(Array.from({ length: n }, () => ({ kind: 'k' })));
      const claims: number[] = [];
      for (let round = 0; round <= n; round++) claims.push((await store.claim({ owner: 'w', limit: 2, leaseMs: 1_000 })).length);
      clock.tick(1_001);
      const reclaims: number[] = [];
      for (let round = 0; round <= n; round++) reclaims.push((await store.reclaimExpired({ limit: 2 })).length);
      const expected = Array.from({ length: n + 1 }, (_, i) => Math.max(0, Math.min(2, n - 2 * i)));
      expect(claims, `claims of ${n}`).toEqual(expected);
      expect(reclaims, `reclaims of ${n}`).toEqual(expected);
      await admin.truncate();
    }
  });
});

describe('migrate', () => {
  it('five concurrent migrate() calls on a fresh schema apply each version once; a sixth is a no-op', async () => {
    const schema = uniqueSchemaName('migrate');
    const fresh = new Admin(admin.url, schema);
    const kits = [makeKit('pg'), makeKit('postgres'), makeKit('pg'), makeKit('postgres'), makeKit('pg')];
    try {
      const results = await Promise.all(kits.map((k) => k.store({ schema }).migrate()));
      const versions = await fresh.query<{ version: number; name: string }>(`select version, name from ${fresh.t('migration')} order by version`);
      expect(versions).toEqual(migrations(schema).map((m) => ({ version: m.version, name: m.name })));
      // Each version applied by exactly one of the five calls, and each call reports what it applied.
      expect(results.flatMap((r) => r.applied).sort((a, b) => a - b)).toEqual(migrations(schema).map((m) => m.version));
      expect(await kits[0]?.store({ schema }).migrate()).toEqual({ applied: [], version: migrations(schema).at(-1)?.version });
      expect(await fresh.count('migration')).toBe(migrations(schema).length);
      const tables = await fresh.query<{ tablename: string }>('select tablename from pg_tables where schemaname = $1 order by tablename', [schema]);
      expect(tables.map((t) => t.tablename).filter((t) => !t.startsWith('task_history'))).toEqual(['cron_schedule', 'dedup_throttle', 'effect', 'key_limit', 'key_rate_limit', 'key_rate_log', 'migration', 'pause', 'rate_limit', 'task', 'task_batch', 'task_dependency', 'task_waiter']);
      // Migration 11: history partitioned by state, then by UTC day (docs/contract.md#live-and-history).
      expect(tables.map((t) => t.tablename)).toEqual(expect.arrayContaining(['task_history', 'task_history_done', 'task_history_done_default', 'task_history_dead_legacy']));
    } finally {
      await Promise.all(kits.map((k) => k.close()));
      await fresh.drop();
    }
  });
  it('version 3 gives rows of version 2 the failures they had used up, so each live task keeps the attempts it had left', async () => {
    const schema = uniqueSchemaName('migrate3');
    const old = new Admin(admin.url, schema);
    const s = statements(schema);
    const k = makeKit('pg');
    try {
      // The schema as version 2 left it, with rows that version 2 wrote.
      await old.query(s.schemaCreate);
      await old.query(s.migrationTableCreate);
      for (const m of migrations(schema).filter((m) => m.version <= 2)) {
        await old.query(m.sql);
        await old.query(s.migrationInsert, [m.version, m.name]);
      }
      const rows: [label: string, state: string, attempt: number, maxAttempts: number, failures: number][] = [
        ['new', 'SCHEDULED', 0, 3, 0],
        ['retry after 2 ended claims', 'SCHEDULED', 2, 3, 2],
        ['running attempt 2', 'CLAIMED', 2, 3, 1],
        ['running the last attempt', 'CLAIMED', 3, 3, 2],
        ['running past maxAttempts (after old releases)', 'CLAIMED', 4, 3, 3],
        ['done first time', 'DONE', 1, 3, 0],
        ['done at attempt 3', 'DONE', 3, 3, 2],
        ['dead', 'DEAD', 3, 3, 3],
        ['cancelled waiting', 'CANCELLED', 0, 3, 0],
        ['cancelled after 2 claims', 'CANCELLED', 2, 3, 2],
      ];
      const ids = new Map<string, string>();
      for (const [label, state, attempt, maxAttempts] of rows) {
        const lease = state === 'CLAIMED' ? `'w', now() + interval '1 hour'` : 'null, null';
        const [row] = await old.query<{ id: string }>(
          `insert into ${old.t('task')} (kind, state, due_at, attempt, max_attempts, lease_owner, lease_until) values ($1, $2, now(), $3, $4, ${lease}) returning id::text as id`,
          [label, state, attempt, maxAttempts],
        );
        ids.set(label, row!.id);
      }

      const store = k.store({ schema });
      await store.migrate();
      for (const [label, , attempt, , failures] of rows) {
        expect(await store.getTask(ids.get(label)!), label).toMatchObject({ attempt, failures });
      }
      const id = (label: string) => ids.get(label)!;
      // The same answers version 2 gave (it compared attempt with max_attempts): a fail of attempt 2 of 3 retries…
      expect((await store.fail({ id: id('running attempt 2'), attempt: 2, error: 'e', backoffMs: 0 })).outcome).toBe('SCHEDULED');
      // …a fail of attempt 3 of 3 is DEAD, and so is one past it…
      expect(await store.fail({ id: id('running the last attempt'), attempt: 3, error: 'e', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
      expect(await store.fail({ id: id('running past maxAttempts (after old releases)'), attempt: 4, error: 'e', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
      // …and a task that had 2 ended claims of 3 gets one more try; from now on a release is not a failure.
      const claimed = await store.claim({ owner: 'w', limit: 10, leaseMs: 60_000 });
      const retry = claimed.find((c) => c.id === id('retry after 2 ended claims'));
      expect(retry).toMatchObject({ attempt: 3, failures: 2 });
      expect(await store.release({ id: retry!.id, attempt: 3 })).toBe('SCHEDULED');
      const again = (await store.claim({ owner: 'w', limit: 10, leaseMs: 60_000 })).find((c) => c.id === retry!.id);
      expect(again).toMatchObject({ attempt: 4, failures: 2 });
      expect(await store.fail({ id: retry!.id, attempt: 4, error: 'e', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
      expect(await store.getTask(retry!.id)).toMatchObject({ state: 'DEAD', attempt: 4, failures: 3 });

      const [check] = await old.query<{ def: string }>(
        `select pg_get_constraintdef(c.oid) as def from pg_constraint c where c.conrelid = $1::regclass and c.contype = 'c' and pg_get_constraintdef(c.oid) like '%failures%'`,
        [old.t('task')],
      );
      expect(check?.def).toBe('CHECK ((failures >= 0))');
      await store.close();
    } finally {
      await k.close();
      await old.drop();
    }
  });
});

describe('vacuumHealth', () => {
  it('reports dead rows and autovacuum per table, and the transaction holding back cleanup', async () => {
    const store = kit.store({ schema: admin.schema });
    // A REPEATABLE READ transaction elsewhere, holding its snapshot, is what keeps dead rows from being removed.
    const holder = await admin.pool.connect();
    try {
      await holder.query(`set application_name = 'long-report'`);
      await holder.query('begin isolation level repeatable read');
      const [{ pid }] = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows as [{ pid: number }];
      const writer = await admin.pool.connect();
      try {
        const ids = (
          await writer.query<{ id: string }>(
            `insert into ${admin.t('task')} (kind, state, due_at, max_attempts) select 'vh', 'SCHEDULED', now(), 1 from generate_series(1, 200) returning id::text`,
          )
        ).rows.map((r) => r.id);
        await writer.query(`delete from ${admin.t('task')} where id = any($1::bigint[])`, [ids.slice(0, 150)]);
        // A backend sends its statistics when it goes idle, at most once a second unless asked (PostgreSQL 17 §27.2.2, pg_stat_force_next_flush).
        await writer.query('select pg_stat_force_next_flush()');
      } finally {
        writer.release();
      }
      // Statistics reach the shared view when a backend goes idle (PostgreSQL 17 §27.2.2): poll, bounded.
      let health = await store.vacuumHealth();
      for (let i = 0; i < 40 && (health.tables.find((t) => t.table === 'task')?.deadRows ?? 0) < 150; i++) {
        await new Promise((r) => setTimeout(r, 100));
        health = await store.vacuumHealth();
      }
      expect(health.tables.map((t) => t.table)).toEqual(['effect', 'task', 'task_history']);
      const task = health.tables.find((t) => t.table === 'task');
      expect(task?.deadRows).toBeGreaterThanOrEqual(150);
      expect(health.oldestSnapshot).not.toBeNull();
      // Other test files may hold older snapshots in the same database; ours must be found when it is the oldest.
      const ours = await store.vacuumHealth();
      if (ours.oldestSnapshot?.pid === pid) {
        expect(ours.oldestSnapshot).toMatchObject({ source: 'session', holder: 'long-report', state: 'idle in transaction' });
        expect(ours.oldestSnapshot.ageMs).toBeGreaterThanOrEqual(0);
      } else {
        expect(ours.oldestSnapshot?.xminAge).toBeGreaterThanOrEqual(0);
      }
      await holder.query('commit');
    } finally {
      holder.release();
      await admin.truncate();
    }
  });
});
