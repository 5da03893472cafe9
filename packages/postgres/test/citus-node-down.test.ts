/**
 * Issue #25, "one worker node stopped: tasks of its shard groups wait, the others go on", at the
 * store level (Citus suite only: `vitest.citus.config.ts`; skipped elsewhere). Two Postpone schemas,
 * each one shard group, on the two different worker nodes; the node of group A is stopped
 * (`pg_ctl stop -m immediate`) and, while it is down, every routine call of a scheduler and a worker
 * on group B must succeed with the right result: schedule (keyless, and keyed in each `onConflict`
 * mode), scheduleMany, claim, complete, completeMany, fail (retried and dead), extend, extendMany,
 * release, cancel (scheduled and claimed), reclaimExpired and a cron occurrence; through the sharded
 * front, keyless schedules aimed at A land in B. Group A's calls fail with a typed
 * error, fast (no hang). The node is started again in `finally`; then group A works again.
 *
 * Before `src/sql/citus-route.ts`, B's schedules, fails, releases, cancels, reclaims and
 * completeMany failed here (08006 / XX000 naming the stopped node): docs/sharding.md "A worker node down".
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DuplicateKeyError, PostponeError } from '@postpone/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createShardedStore, type PostgresStore, SHARD_ID_BITS } from '../src/index.js';
import { Admin, makeKit } from './support/kits.js';

const run = promisify(execFile);
const data = process.env.POSTPONE_CITUS_DATA;
const basePort = Number(process.env.POSTPONE_CITUS_BASEPORT ?? 0);

/** `pg_ctl` on one node of the suite's cluster, as user postgres when this process is root (as `citus-cluster.sh` runs them). */
async function pgCtl(node: string, op: 'stop' | 'start'): Promise<void> {
  const dir = join(data as string, node);
  const args = op === 'stop' ? ['-D', dir, 'stop', '-m', 'immediate', '-w'] : ['-D', dir, 'start', '-w', '-l', `${dir}.log`];
  const bin = '/usr/lib/postgresql/15/bin/pg_ctl';
  if (process.getuid?.() === 0) await run('su', ['postgres', '-c', [bin, ...args].join(' ')], { timeout: 60_000 });
  else await run(bin, args, { timeout: 60_000 });
}

/** Settles within `ms` or fails the test: every call during the outage must end, not hang. */
async function bounded<T>(promise: Promise<T>, ms = 20_000): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(data === undefined || basePort === 0)('a worker node down (Citus)', () => {
  const groups = [Admin.create('downa'), Admin.create('downb')] as const;
  const kit = makeKit('pg');
  let a: PostgresStore<unknown>;
  let b: PostgresStore<unknown>;
  let nodeOfA = '';

  beforeAll(async () => {
    a = kit.store({ schema: groups[0].schema }) as PostgresStore<unknown>;
    b = kit.store({ schema: groups[1].schema }) as PostgresStore<unknown>;
    // Through the front: each schema migrated and given its group's id range (A group 0, B group 1).
    await createShardedStore({ stores: [a, b] }).migrate();
    const shards = async () =>
      await kit.query(
        `select s.table_name::text as name, s.nodeport as port, s.shardid::text as shardid from citus_shards s where s.table_name::text in ($1, $2) order by s.table_name::text = $1 desc`,
        [`${groups[0].schema}.task`, `${groups[1].schema}.task`],
      );
    let rows = await shards();
    if (rows[0]?.port === rows[1]?.port) {
      const other = rows[1]?.port === basePort + 1 ? basePort + 2 : basePort + 1;
      await kit.query("select citus_move_shard_placement($1::bigint, '127.0.0.1', $2::int, '127.0.0.1', $3::int, 'block_writes')", [String(rows[1]?.shardid), Number(rows[1]?.port), other]);
      rows = await shards();
    }
    expect(rows.map((r) => r.port)).toHaveLength(2);
    expect(rows[0]?.port).not.toBe(rows[1]?.port);
    nodeOfA = rows[0]?.port === basePort + 1 ? 'worker1' : 'worker2';
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await kit.close();
    for (const g of groups) await g.drop();
  });

  it("group B schedules, claims, finishes and reclaims while group A's node is down; A fails fast and works again after", async () => {
    // Before the outage: a cron schedule in B, B's tasks to work on, one of them with a lease that expires at once.
    const cron = { name: 'every-minute', cron: '* * * * *', timeZone: 'UTC', task: { kind: 'cron' } } as const;
    await b.reconcileCronSchedules({ schedules: [cron] });
    await b.scheduleMany(Array.from({ length: 12 }, (_, i) => ({ kind: 'work', payload: { i } })));
    const [expired] = await b.claim({ owner: 'crashed', limit: 1, leaseMs: 1 });
    const claimed = await b.claim({ owner: 'w', limit: 9, leaseMs: 60_000 });
    expect(claimed).toHaveLength(9);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const [c0, c1, c2, c3, c4, c5, c6] = claimed;
    if (expired === undefined || c0 === undefined || c1 === undefined || c2 === undefined || c3 === undefined || c4 === undefined || c5 === undefined || c6 === undefined) {
      throw new Error('claims came back short');
    }

    await pgCtl(nodeOfA, 'stop');
    try {
      // Scheduling into B: keyless, a batch, and each onConflict mode twice on one key.
      const one = await b.schedule({ kind: 'work', payload: 1 });
      expect(one.created).toBe(true);
      const batch = await b.scheduleMany([
        { kind: 'work', key: 'm1', payload: 1 },
        { kind: 'work', payload: 2 },
        { kind: 'work', key: 'm2', payload: 3 },
      ]);
      expect(batch.map((t) => t.created)).toEqual([true, true, true]);
      const ids = batch.map((t) => BigInt(t.id));
      expect(ids[0]! < ids[1]! && ids[1]! < ids[2]!).toBe(true); // drawn in input order
      for (const mode of ['keep', 'replace', 'fail', 'debounce', 'queueBehind', 'throttle'] as const) {
        const options = mode === 'throttle' ? { onConflict: mode, throttleMs: 60_000 } : { onConflict: mode };
        const first = await b.schedule({ kind: 'keyed', key: mode, payload: 1, delayMs: 60_000 }, options);
        expect([mode, first.created]).toEqual([mode, true]);
        const again = b.schedule({ kind: 'keyed', key: mode, payload: 2, delayMs: 120_000 }, options);
        if (mode === 'fail') {
          await expect(again).rejects.toBeInstanceOf(DuplicateKeyError);
          continue;
        }
        const second = await again;
        expect([mode, second.id, second.created]).toEqual([mode, first.id, false]);
        expect([mode, second.replaced]).toEqual([mode, mode === 'replace' || mode === 'debounce']);
        expect([mode, second.throttled === true]).toEqual([mode, mode === 'throttle']);
        expect((await b.getTask(first.id))?.payload).toEqual(mode === 'replace' || mode === 'debounce' ? 2 : 1);
      }

      // Working in B: claim, complete, completeMany, fail (retried, dead), extend, release, cancel, reclaim.
      expect((await b.claim({ owner: 'w2', limit: 2, leaseMs: 60_000 })).length).toBe(2);
      expect(await b.complete({ id: c0.id, attempt: c0.attempt, owner: 'w', result: { ok: true } })).toBe('DONE');
      expect(await b.completeMany([{ id: c1.id, attempt: c1.attempt, owner: 'w' }])).toEqual(['DONE']);
      expect((await b.getTask(c1.id))?.state).toBe('DONE');
      expect((await b.fail({ id: c2.id, attempt: c2.attempt, error: 'boom', backoffMs: 10 })).outcome).toBe('SCHEDULED');
      expect((await b.fail({ id: c3.id, attempt: c3.attempt, error: 'fatal', backoffMs: 10, retryable: false })).outcome).toBe('DEAD');
      expect((await b.getTask(c3.id))?.state).toBe('DEAD');
      expect(await b.extend({ id: c4.id, attempt: c4.attempt, leaseMs: 60_000 })).toBe(true);
      expect(await b.extendMany({ items: [{ id: c4.id, attempt: c4.attempt }], leaseMs: 60_000 })).toEqual([true]);
      expect(await b.release({ id: c4.id, attempt: c4.attempt })).toBe('SCHEDULED');
      expect(await b.cancel(c5.id)).toBe('REQUESTED');
      expect(await b.release({ id: c5.id, attempt: c5.attempt })).toBe('CANCELLED');
      expect(await b.cancel(one.id)).toBe('CANCELLED');
      const reclaimed = await b.reclaimExpired({ limit: 10 });
      expect(reclaimed.map((r) => [r.id, r.outcome])).toEqual([[expired.id, 'SCHEDULED']]);

      // A cron occurrence in B: scheduled once, and only once.
      const occurrence = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 60_000);
      const fired = await b.scheduleCronOccurrence({ ...cron, occurrence });
      expect(fired.outcome).toBe('SCHEDULED');
      expect((await b.scheduleCronOccurrence({ ...cron, occurrence })).outcome).not.toBe('SCHEDULED');

      // The sharded front over A and B: keyless schedules aimed at A go to B; a key of A's group fails, typed.
      const front = createShardedStore({ stores: [a, b] });
      const placed = await Promise.all([1, 2, 3, 4].map((i) => front.schedule({ kind: 'front', payload: i })));
      expect(placed.map((t) => Number(BigInt(t.id) >> BigInt(SHARD_ID_BITS)))).toEqual([1, 1, 1, 1]);
      expect((await front.scheduleMany([{ kind: 'front', payload: 5 }, { kind: 'front', payload: 6 }])).map((t) => front.groupOfId(t.id))).toEqual([1, 1]);
      const keyOfA = Array.from({ length: 100 }, (_, i) => `k${i}`).find((k) => front.groupOfKey(k) === 0) as string;
      const keyedOfA = await bounded(front.schedule({ kind: 'front', key: keyOfA, payload: 0 }));
      expect(keyedOfA.ok).toBe(false);
      if (!keyedOfA.ok) expect(keyedOfA.error).toBeInstanceOf(PostponeError);

      // Group A: a typed error, fast, for a schedule and a claim.
      for (const call of [(): Promise<unknown> => a.schedule({ kind: 'work', payload: 1 }), (): Promise<unknown> => a.claim({ owner: 'w', limit: 1, leaseMs: 60_000 })]) {
        const outcome = await bounded(call());
        expect(outcome.ok).toBe(false);
        if (!outcome.ok) expect(outcome.error).toBeInstanceOf(PostponeError);
      }
    } finally {
      await pgCtl(nodeOfA, 'start');
    }

    // The node is back: A schedules, claims and completes again (bounded retries while Citus reconnects).
    let scheduled: { id: string } | undefined;
    for (let i = 0; i < 50 && scheduled === undefined; i += 1) {
      const outcome = await bounded(a.schedule({ kind: 'work', payload: 'back' }));
      if (outcome.ok) scheduled = outcome.value;
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(scheduled).toBeDefined();
    const [task] = await a.claim({ owner: 'w', limit: 1, leaseMs: 60_000 });
    expect(task?.id).toBe(scheduled?.id);
    expect(await a.complete({ id: String(task?.id), attempt: Number(task?.attempt), owner: 'w', result: null })).toBe('DONE');
  });
});
