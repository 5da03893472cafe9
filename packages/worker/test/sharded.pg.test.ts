/**
 * A worker on the sharded front (`createShardedStore` of `@postpone/postgres`, docs/sharding.md) over
 * two groups: two Postpone schemas of the test server, `pg` driver (the front passes every call to a
 * group's store unchanged, so the driver under it is covered by the front's own tests of both drivers).
 *
 * - Poll discovery: tasks of both groups, some scheduled through another front (another process),
 *   all DONE, each handled exactly once.
 * - Hybrid discovery: a task scheduled in group 1 (and one in group 0) through another front after the
 *   worker started reaches the worker's wheel by that group's notice and is claimed at or after its due
 *   time, with the fallback read a minute away and no fallback rebuild: the notice of each group, not a
 *   poll, found it. Its claim goes through the front's empty-group skip (60 s here), which the notice
 *   of that group ended.
 */
import { TaskState } from '@postpone/core';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createShardedStore, fnv1a32, SHARD_ID_BITS, type ShardedStore } from '@postpone/postgres';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker, type WorkerEvents } from '../src/index.js';
import { until } from './harness.js';

const schemas = [uniqueSchemaName('wsh0'), uniqueSchemaName('wsh1')] as const;
let pool: pg.Pool;
let other: pg.Pool;
/** The worker's front, and another process's front (its own pool) that schedules. */
let front: ShardedStore<PgTx>;
let theirs: ShardedStore<PgTx>;
const workers: Worker<PgTx>[] = [];

const groupOf = (id: string) => Number(BigInt(id) >> BigInt(SHARD_ID_BITS));
/** A dedup key the front places in group `g`. */
function keyIn(g: number, prefix: string): string {
  for (let i = 0; i < 1_000; i++) if (fnv1a32(`${prefix}-${i}`) % 2 === g) return `${prefix}-${i}`;
  throw new Error('no key found');
}

const make = (p: pg.Pool, emptyBackoffMs?: number) =>
  createShardedStore({ stores: schemas.map((schema) => createPgStore({ pool: p, schema })), ...(emptyBackoffMs === undefined ? {} : { emptyBackoffMs }) });

beforeAll(async () => {
  // One pool under both groups: 10 handlers + 3 for the worker + 2 LISTEN connections (one per group) = 15.
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 15 });
  other = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });
  front = make(pool, 60_000);
  theirs = make(other);
  await front.migrate();
});
afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop({ timeoutMs: 5_000 });
});
afterAll(async () => {
  await front.close();
  await theirs.close();
  await pool.end();
  await other.end();
  for (const s of schemas) await dropSchema(testDatabaseUrl(), s);
});

describe('a worker on the sharded front (2 groups)', () => {
  it('poll: every task of both groups DONE, each handled exactly once', async () => {
    // The shared pool counted once, less the second group's LISTEN connection.
    expect(front.connectionBudget).toEqual({ max: 14, listen: true, shared: true });
    const handled = new Map<string, number>();
    const worker = createWorker<PgTx>({
      store: front,
      discovery: 'poll',
      pollIntervalMs: 50,
      concurrency: 8,
      handlers: {
        'sh-poll': async (_payload, ctx) => {
          const id = ctx.idempotencyKey.replace(/^task-/, ''); // `task-<id>`
          handled.set(id, (handled.get(id) ?? 0) + 1);
          return null;
        },
      },
    });
    workers.push(worker);
    const mine = await front.scheduleMany(Array.from({ length: 30 }, (_, i) => ({ kind: 'sh-poll', payload: { i } })));
    const keyed = await Promise.all([0, 1, 0, 1].map((g, i) => theirs.schedule({ kind: 'sh-poll', key: keyIn(g, `poll-${i}`) })));
    const keyless = await Promise.all(Array.from({ length: 6 }, (_, i) => theirs.schedule({ kind: 'sh-poll', payload: { j: i } })));
    const ids = [...mine, ...keyed, ...keyless].map((t) => t.id);
    expect(new Set(ids.map(groupOf))).toEqual(new Set([0, 1]));
    worker.start();
    await until(() => handled.size === ids.length, `${ids.length} tasks handled`, 60_000);
    await until(async () => {
      const states = await Promise.all(ids.map(async (id) => (await front.getTask(id))?.state));
      return states.every((s) => s === TaskState.DONE);
    }, 'every task DONE', 30_000);
    expect([...handled.keys()].sort()).toEqual([...ids].sort());
    expect([...handled.values()].every((n) => n === 1)).toBe(true);
    for (const g of [0, 1]) expect(ids.filter((id) => groupOf(id) === g).length).toBeGreaterThan(0);
  });

  it('hybrid: notices of both groups reach the wheel; tasks scheduled elsewhere in group 1 and group 0 are claimed from their timers', async () => {
    const worker = createWorker<PgTx>({ store: front, discovery: 'hybrid', hybrid: { fallbackPollMs: 60_000 }, handlers: { 'sh-hybrid': async () => 'ok' } });
    workers.push(worker);
    const claimed: WorkerEvents['claimed'][] = [];
    worker.on('claimed', (e) => claimed.push(e));
    worker.start();
    await until(() => worker.discovery.rebuilds.start === 1 && worker.discovery.listening, 'the start load and the listener', 30_000);
    // Both groups answered the front's claims empty by now or will: the skip (60 s) must not hide what a notice announces.
    await front.claim({ owner: 'probe', limit: 1, leaseMs: 1_000, kinds: ['sh-none'] });
    await front.claim({ owner: 'probe', limit: 1, leaseMs: 1_000, kinds: ['sh-none'] });
    const inOne = await theirs.schedule({ kind: 'sh-hybrid', key: keyIn(1, 'hy1'), delayMs: 1_500 });
    const inZero = await theirs.schedule({ kind: 'sh-hybrid', key: keyIn(0, 'hy0'), delayMs: 1_500 });
    expect([groupOf(inOne.id), groupOf(inZero.id)]).toEqual([1, 0]);
    await until(() => claimed.length === 2, 'both claims', 30_000);
    const byId = new Map(claimed.map((e) => [e.task.id, e.task]));
    for (const t of [inOne, inZero]) {
      const c = byId.get(t.id);
      expect(c).toBeDefined();
      expect(c!.claimedAt.getTime()).toBeGreaterThanOrEqual(t.dueAt.getTime());
    }
    // Found by the notices of their groups: read once at start, never by the fallback (a minute away).
    expect(worker.discovery.notices).toBeGreaterThanOrEqual(2);
    expect(worker.discovery.rebuilds.fallback).toBe(0);
    await until(async () => (await front.getTask(inOne.id))?.state === TaskState.DONE && (await front.getTask(inZero.id))?.state === TaskState.DONE, 'both DONE', 30_000);
  });
});
