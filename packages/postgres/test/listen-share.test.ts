/**
 * The connection budget (docs/contract.md#connection-budget): every `listen` of one driver shares
 * ONE server connection (channels reference-counted, one LISTEN each, notices fanned out), counted
 * in pg_stat_activity by application_name; when that backend is terminated it is opened again,
 * every channel works again and every subscriber hears `onReconnect`. And one reclaimer at a time:
 * while a transaction holds the schema's reclaim lock, `reclaimExpired` returns [] at once and
 * moves nothing; after it, one call reclaims every expired lease.
 */
import { TestClock } from '@postpone/core';
import pg from 'pg';
import postgres from 'postgres';
import { RECLAIM_LOCK_SQL } from '../src/sql/reclaim-lock-sql.js';
import { statements } from '../src/sql/sql.js';
import { describe, expect, it } from 'vitest';
import { type Driver, PostgresStore } from '../src/index.js';
import { createPgDriver, createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsDriver, createPostgresJsStore } from '../src/drivers/postgres-js.js';
import { DRIVERS, type DriverName, makeKit, migratedSchema, waitFor } from './support/kits.js';

const admin = migratedSchema('lshare');

let apps = 0;
const appName = (driver: DriverName) => `lshare_${driver}_${process.pid}_${++apps}`;

/** A driver that owns its pool / sql, every connection of which carries `application`. */
function driverFor(driver: DriverName, application: string): Driver<unknown> {
  if (driver === 'pg') {
    const pool = new pg.Pool({ connectionString: admin.url, application_name: application, max: 4 });
    return createPgDriver(pool, true) as Driver<unknown>;
  }
  const sql = postgres(admin.url, { max: 4, onnotice: () => {}, fetch_types: false, connection: { application_name: application } });
  return createPostgresJsDriver(sql, true) as Driver<unknown>;
}

async function backends(application: string): Promise<number[]> {
  const rows = await admin.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [application]);
  return rows.map((r) => r.pid);
}

describe.each(DRIVERS)('one listening connection per driver (%s)', (driver) => {
  it('4 channels, 6 listen() calls → 1 server connection; after pg_terminate_backend every channel delivers again', async () => {
    const application = appName(driver);
    const d = driverFor(driver, application);
    const channels = ['lshare_a', 'lshare_b', 'lshare_c', 'lshare_d'];
    // Two subscribers on the first two channels, one on the others.
    const plan = [...channels, channels[0], channels[1]] as string[];
    const heard = plan.map(() => [] as string[]);
    const reconnects = plan.map(() => 0);
    try {
      const unlistens = [];
      for (const [i, channel] of plan.entries()) {
        unlistens.push(await d.listen(channel, (payload) => heard[i]?.push(payload), { onReconnect: () => (reconnects[i] = (reconnects[i] ?? 0) + 1) }));
      }
      expect(await backends(application)).toHaveLength(1);
      const [first] = await backends(application);

      const notifyAll = async (tag: string) => {
        for (const channel of channels) await admin.query('select pg_notify($1, $2)', [channel, `${tag}:${channel}`]);
      };
      const everyoneHeard = (tag: string) => plan.every((channel, i) => heard[i]?.includes(`${tag}:${channel}`));
      await notifyAll('before');
      await waitFor(() => everyoneHeard('before'), 'every subscriber hears its channel');
      // Fan-out is per channel: no subscriber hears another channel's notice.
      for (const [i, channel] of plan.entries()) expect(heard[i]?.every((p) => p.endsWith(`:${channel}`))).toBe(true);

      await admin.query('select pg_terminate_backend($1)', [first]);
      await waitFor(() => reconnects.every((n) => n === 1), 'every subscriber told of the reconnect', 15_000);
      const after = await backends(application);
      expect(after).toHaveLength(1);
      expect(after[0]).not.toBe(first);
      await notifyAll('after');
      await waitFor(() => everyoneHeard('after'), 'every channel delivers after the reconnect');

      // The second subscriber of channel a leaves: the first still hears a, the leaver nothing more.
      await unlistens[4]?.();
      await unlistens[4]?.(); // idempotent
      await admin.query('select pg_notify($1, $2)', [channels[0], 'third']);
      await waitFor(() => heard[0]?.includes('third') === true, 'the remaining subscriber of a');
      expect(heard[4]?.includes('third')).toBe(false);
      expect(await backends(application)).toHaveLength(1);
      for (const unlisten of unlistens) await unlisten();
      if (driver === 'postgres') await waitFor(async () => (await backends(application)).length === 0, 'the listening instance ended with its last subscriber');
    } finally {
      await d.close();
    }
    await waitFor(async () => (await backends(application)).length === 0, 'no connection left after close');
  }, 40_000);

  it('5 store.listen() calls on one store → 1 listening connection; each hears every notice', async () => {
    const application = appName(driver);
    const listenUrl = `${admin.url}${admin.url.includes('?') ? '&' : '?'}application_name=${application}`;
    const options = { schema: admin.schema, connectionString: admin.url, listenConnectionString: listenUrl };
    const store = driver === 'pg' ? createPgStore(options) : createPostgresJsStore(options);
    try {
      const seen: string[][] = Array.from({ length: 5 }, () => []);
      for (const list of seen) await store.listen((notice) => list.push(notice.id));
      expect(await backends(application)).toHaveLength(1);
      const { id } = await store.schedule({ kind: 'share', delayMs: 20_000 });
      await waitFor(() => seen.every((list) => list.includes(id)), 'all five listeners hear the schedule');
    } finally {
      await store.close();
    }
  }, 30_000);
});

describe.each(DRIVERS)('one listening connection per pool / sql in the process (%s)', (driver) => {
  it('two stores on one pool (or sql) you pass → 1 listening connection; closing one store leaves the other listening', async () => {
    const application = appName(driver);
    const pool = driver === 'pg' ? new pg.Pool({ connectionString: admin.url, application_name: application, max: 4 }) : undefined;
    const sql = driver === 'postgres' ? postgres(admin.url, { max: 4, onnotice: () => {}, fetch_types: false, connection: { application_name: application } }) : undefined;
    const make = () => (pool ? createPgStore({ schema: admin.schema, pool }) : createPostgresJsStore({ schema: admin.schema, sql: sql! }));
    const [a, b] = [make(), make()];
    // The backends whose last statement was a LISTEN (the pool's other connections sent the probes).
    const listening = async () =>
      (await admin.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where application_name = $1 and query ilike 'listen %'", [application]))[0]?.n;
    try {
      const seenA: string[] = [];
      const seenB: string[] = [];
      await a.listen((n) => seenA.push(n.id));
      await b.listen((n) => seenB.push(n.id));
      expect(await listening()).toBe(1);
      const first = await a.schedule({ kind: 'share2', delayMs: 20_000 });
      await waitFor(() => seenA.includes(first.id) && seenB.includes(first.id), 'both stores hear the notice');
      await a.close();
      const second = await b.schedule({ kind: 'share2', delayMs: 20_000 });
      await waitFor(() => seenB.includes(second.id), 'the other store still hears notices');
      expect(seenA.includes(second.id)).toBe(false);
      expect(await listening()).toBe(1);
    } finally {
      await a.close();
      await b.close();
      await pool?.end();
      await sql?.end({ timeout: 5 });
    }
  }, 30_000);
});

describe.each(DRIVERS)('one reclaimer at a time (%s)', (driver) => {
  it('while the reclaim lock is held elsewhere reclaimExpired returns [] and moves nothing; then one call reclaims all 20', async () => {
    const kit = makeKit(driver);
    const clock = new TestClock();
    const store = kit.store({ schema: admin.schema, clock });
    const holder = new pg.Client({ connectionString: admin.url });
    await holder.connect();
    try {
      const kind = `reclaim_${driver}`;
      await store.scheduleMany(Array.from({ length: 20 }, () => ({ kind })));
      const claimed = await store.claim({ owner: 'w', limit: 20, leaseMs: 1_000, kinds: [kind] });
      expect(claimed).toHaveLength(20);
      clock.tick(1_001);
      await holder.query('begin');
      const [held] = (await holder.query(RECLAIM_LOCK_SQL, [admin.schema])).rows;
      expect(held?.locked).toBe(true);
      // Several callers at once while it is held: none waits for the lock, none moves a row.
      const skipped = await Promise.all([store.reclaimExpired(), store.reclaimExpired(), store.reclaimExpired()]);
      expect(skipped).toEqual([[], [], []]);
      const stillClaimed = await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task')} where kind = $1 and state = 'CLAIMED'`, [kind]);
      expect(stillClaimed).toEqual([{ n: 20 }]);
      await holder.query('commit');
      const reclaimed = await store.reclaimExpired();
      expect(reclaimed).toHaveLength(20);
      expect(new Set(reclaimed.map((r) => r.id))).toEqual(new Set(claimed.map((c) => c.id)));
      const rows = await admin.query<{ state: string; n: number }>(
        `select state, count(*)::int as n from ${admin.t('task')} where kind = $1 and last_error = 'lease expired' group by state`,
        [kind],
      );
      expect(rows).toEqual([{ state: 'SCHEDULED', n: 20 }]);
      // The lock is transaction-level: nothing of it outlives the reclaim.
      const locks = await admin.query<{ n: number }>(
        `select count(*)::int as n from pg_locks where locktype = 'advisory' and ((classid::bigint << 32) | objid::bigint) = hashtextextended('postpone:reclaim:' || $1::text, 0)`,
        [admin.schema],
      );
      expect(locks).toEqual([{ n: 0 }]);
    } finally {
      await holder.end();
      await kit.close();
    }
  });

  it('reclaimExpired is one statement in autocommit, the lock included: 1 query, no transaction, whether it reclaims or finds the lock held', async () => {
    const inner = driverFor(driver, appName(driver));
    const calls = { query: 0, transaction: 0 };
    const counted: Driver<unknown> = {
      name: inner.name,
      directListen: inner.directListen,
      ...(inner.connectionBudget === undefined ? {} : { connectionBudget: inner.connectionBudget }),
      isTx: (value: unknown): value is unknown => inner.isTx(value),
      queryIn: (tx, text, params) => inner.queryIn(tx, text, params),
      listen: (channel, onNotify, options) => inner.listen(channel, onNotify, options),
      close: () => inner.close(),
      query: (text, params) => {
        calls.query++;
        return inner.query(text, params);
      },
      transaction: (fn) => {
        calls.transaction++;
        return inner.transaction(fn);
      },
    };
    const clock = new TestClock();
    const store = new PostgresStore(counted, { schema: admin.schema, clock });
    const holder = new pg.Client({ connectionString: admin.url });
    await holder.connect();
    try {
      const kind = `reclaim1_${driver}`;
      await store.scheduleMany(Array.from({ length: 5 }, () => ({ kind })));
      expect(await store.claim({ owner: 'w', limit: 5, leaseMs: 1_000, kinds: [kind] })).toHaveLength(5);
      clock.tick(1_001);
      await holder.query('begin');
      expect((await holder.query(RECLAIM_LOCK_SQL, [admin.schema])).rows).toEqual([{ locked: true }]);
      calls.query = 0;
      calls.transaction = 0;
      expect(await store.reclaimExpired()).toEqual([]);
      expect(calls).toEqual({ query: 1, transaction: 0 });
      await holder.query('commit');
      expect(await store.reclaimExpired()).toHaveLength(5);
      expect(calls).toEqual({ query: 2, transaction: 0 });
    } finally {
      await holder.end();
      await store.close();
      await inner.close();
    }
  });

  it('two concurrent reclaims over 20 expired leases, the first held inside its statement after picking 10: the second returns [] at once and moves nothing; every task reclaimed once', async () => {
    const kit = makeKit(driver);
    const clock = new TestClock();
    const [a, b] = [kit.store({ schema: admin.schema, clock }), kit.store({ schema: admin.schema, clock })];
    const kind = `reclaim2_${driver}`;
    const blocker = new pg.Client({ connectionString: admin.url });
    await blocker.connect();
    const fn = admin.t(`reclaim_park_${driver}`);
    try {
      const tasks = await a.scheduleMany(Array.from({ length: 20 }, () => ({ kind, maxAttempts: 3 })));
      expect(await a.claim({ owner: 'w', limit: 20, leaseMs: 1_000, kinds: [kind] })).toHaveLength(20);
      clock.tick(1_001);
      // Test instrumentation: a trigger that parks the reclaim's UPDATE of the first task (the pick
      // takes the reclaim lock, then locks its rows in lease order, equal here, then id) while
      // `blocker` holds advisory lock 4242. Only the call that picked the first task parks.
      const firstId = Math.min(...tasks.map((t) => Number(t.id)));
      await admin.query(
        `create function ${fn}() returns trigger language plpgsql as $$ begin
           if new.id = ${firstId} then perform pg_advisory_xact_lock(4242); end if;
           return new;
         end $$`,
      );
      await admin.query(`create trigger reclaim_park_${driver} before update on ${admin.t('task')} for each row execute function ${fn}()`);
      await blocker.query('select pg_advisory_lock(4242)');
      const first = a.reclaimExpired({ limit: 10 });
      const parked = async () => (await admin.query<{ n: number }>(`select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = 4242 and not granted`))[0]?.n === 1;
      await waitFor(parked, 'the first reclaim parked inside its statement');
      // The first holds the reclaim lock until its statement ends: the second scans nothing. Without
      // the lock it would take the 10 expired leases the first did not pick (FOR UPDATE SKIP LOCKED).
      expect(await b.reclaimExpired()).toEqual([]);
      const claimed = () => admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task')} where kind = $1 and state = 'CLAIMED'`, [kind]);
      expect(await claimed()).toEqual([{ n: 20 }]);
      await blocker.query('select pg_advisory_unlock(4242)');
      const x = await first;
      expect(x).toHaveLength(10);
      const y = await b.reclaimExpired();
      expect(y).toHaveLength(10);
      expect(new Set([...x, ...y].map((r) => r.id)).size).toBe(20);
      expect(await claimed()).toEqual([{ n: 0 }]);
    } finally {
      await blocker.end();
      await admin.query(`drop trigger if exists reclaim_park_${driver} on ${admin.t('task')}`);
      await admin.query(`drop function if exists ${fn}()`);
      await kit.close();
    }
  });
});

describe('the reclaim lock gates the pick', () => {
  it('while another session holds the lock, the reclaim statement (EXPLAIN ANALYZE) never executes its scan: a One-Time Filter on an InitPlan, evaluated before any row is locked', async () => {
    const kit = makeKit('pg');
    const clock = new TestClock();
    const store = kit.store({ schema: admin.schema, clock });
    const holder = new pg.Client({ connectionString: admin.url });
    await holder.connect();
    try {
      const kind = 'reclaim_gate';
      await store.scheduleMany(Array.from({ length: 10 }, () => ({ kind })));
      expect(await store.claim({ owner: 'w', limit: 10, leaseMs: 1_000, kinds: [kind] })).toHaveLength(10);
      const later = new Date(clock.now() + 60_000).toISOString();
      const explain = async () =>
        (await admin.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off, timing off) ${statements(admin.schema).taskReclaimExpired}`, [later, 1_000, 'c']))
          .map((r) => r['QUERY PLAN'])
          .join('\n');
      await holder.query('begin');
      expect((await holder.query(RECLAIM_LOCK_SQL, [admin.schema])).rows).toEqual([{ locked: true }]);
      const gated = await explain();
      // The pick: LockRows over the gate, whose scan of task never ran.
      const pick = gated.slice(gated.indexOf('CTE picked'), gated.indexOf('CTE stay'));
      expect(pick).toMatch(/LockRows[\s\S]*One-Time Filter: \(InitPlan \d+\)\.col1[\s\S]*Scan[^\n]* on task s[^\n]*\(never executed\)/);
      const claimed = () => admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task')} where kind = $1 and state = 'CLAIMED'`, [kind]);
      expect(await claimed()).toEqual([{ n: 10 }]);
      await holder.query('commit');
      // Free: the same statement scans and reclaims the ten.
      const open = await explain();
      expect(open.slice(open.indexOf('CTE picked'), open.indexOf('CTE stay'))).not.toContain('never executed');
      expect(await claimed()).toEqual([{ n: 0 }]);
    } finally {
      await holder.end();
      await kit.close();
    }
  });
});
