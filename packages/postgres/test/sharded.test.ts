/**
 * The sharded front (`src/sharded/sharded-store.ts`, docs/scale.md#one-deployment-over-many-shard-groups):
 * one logical deployment over two Postpone schemas. On plain PostgreSQL (the normal suite) both are
 * schemas of one server; in the Citus suite (`vitest.citus.config.ts`) each is a shard group of
 * schema-based sharding, and the first test makes sure the two groups sit on different worker nodes
 * (`citus_shards`), moving one with `citus_move_shard_placement` when Citus put both on one.
 *
 * Covered: placement (round-robin without a key, by key hash with one), ids naming their group
 * (group 1's ids are past 2⁵³ and must come back exact), every by-id call reaching the right group,
 * dedup exact across two fronts racing on keys of both groups, claims across groups with the
 * empty-group skip (counted per group), and two claim loops draining both groups exactly once.
 */
import { overrideStore } from '@postpone/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createShardedStore, fnv1a32, type PostgresStore, SHARD_ID_BITS, type ShardedStore, shardIdRange } from '../src/index.js';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

const groups = [Admin.create('shard0'), Admin.create('shard1')] as const;
let citus = false;

beforeAll(async () => {
  const kit = makeKit('pg');
  try {
    const front = createShardedStore({ stores: groups.map((a) => kit.store({ schema: a.schema })) });
    await front.migrate();
    await front.close();
    citus = (await groups[0].query("select exists (select 1 from pg_extension where extname = 'citus') as citus"))[0]!.citus === true;
  } finally {
    await kit.close();
  }
});
afterAll(async () => {
  for (const a of groups) await a.drop();
});

/** The group index written in an id, with BigInt. */
const groupOf = (id: string) => Number(BigInt(id) >> BigInt(SHARD_ID_BITS));

describe('shard groups', () => {
  it('each group is a shard group of its own on its own worker node (Citus), and ids start in each group range', async () => {
    if (citus) {
      const node = async () =>
        await groups[0].query<{ schema: string; port: number; shardid: string; nodename: string }>(
          `select s.table_name::text as schema, s.nodeport as port, s.shardid::text as shardid, s.nodename from citus_shards s
            where s.table_name::text in ($1, $2)`,
          [`${groups[0].schema}.task`, `${groups[1].schema}.task`],
        );
      let rows = await node();
      expect(rows).toHaveLength(2);
      if (rows[0]!.port === rows[1]!.port) {
        const [{ port: other, name } = { port: 0, name: '' }] = await groups[0].query<{ port: number; name: string }>(
          "select nodeport as port, nodename as name from pg_dist_node where noderole = 'primary' and groupid <> 0 and nodeport <> $1 limit 1",
          [rows[1]!.port],
        );
        await groups[0].query("select citus_move_shard_placement($1::bigint, $2, $3, $4, $5, 'block_writes')", [rows[1]!.shardid, rows[1]!.nodename, rows[1]!.port, name, other]);
        rows = await node();
      }
      console.log(`shard groups on ports ${rows.map((r) => r.port).join(", ")}`);
      expect(new Set(rows.map((r) => r.port)).size).toBe(2);
      const schemas = await groups[0].query<{ schema: string; colocation: number }>(
        'select schema_name::text as schema, colocation_id as colocation from citus_schemas where schema_name::text in ($1, $2)',
        [groups[0].schema, groups[1].schema],
      );
      expect(new Set(schemas.map((s) => s.colocation)).size).toBe(2);
    }
    expect(shardIdRange(1)).toEqual({ first: 2n ** 56n, last: 2n ** 57n - 1n });
    expect(shardIdRange(0).first).toBe(1n);
  });
});

describe.each(DRIVERS)('sharded front over two groups (%s)', (driver) => {
  const kit = makeKit(driver);
  const other = makeKit(driver);
  const claimsPerGroup = [0, 0];
  let front: ShardedStore<any>;
  let second: ShardedStore<any>;
  const make = (k: typeof kit, emptyBackoffMs: number, counting = false) =>
    createShardedStore({
      stores: groups.map((a, g) => {
        const store = k.store({ schema: a.schema }) as PostgresStore<any>;
        if (!counting) return store;
        return overrideStore(store, {
          claim: (params: Parameters<PostgresStore<any>['claim']>[0]) => {
            claimsPerGroup[g]! += 1;
            return store.claim(params);
          },
        });
      }),
      emptyBackoffMs,
    });
  beforeAll(async () => {
    front = make(kit, 60_000, true);
    second = make(other, 0);
    await front.migrate();
  });
  afterAll(async () => {
    await front.close();
    await second.close();
    await kit.close();
    await other.close();
  });

  it('places keyless tasks round-robin and keyed ones by key hash; the id names the group, exact past 2^53', async () => {
    const kind = `place-${driver}`;
    const keyless = await Promise.all(Array.from({ length: 10 }, () => front.schedule({ kind, delayMs: 60_000 })));
    const perGroup = [0, 1].map((g) => keyless.filter((t) => groupOf(t.id) === g).length);
    expect(perGroup).toEqual([5, 5]);
    const keys = Array.from({ length: 12 }, (_, i) => `${driver}-k${i}`);
    const keyed = await Promise.all(keys.map((key) => front.schedule({ kind, key, delayMs: 60_000 })));
    for (const [i, t] of keyed.entries()) expect(groupOf(t.id)).toBe(fnv1a32(keys[i]!) % 2);
    // Each group's table holds exactly the ids the front said, in its range, as the database's id::text.
    for (const [g, a] of groups.entries()) {
      const rows = await a.query<{ id: string }>(`select id::text as id from ${a.t('task')} where kind = $1 order by id`, [kind]);
      const expected = [...keyless, ...keyed].filter((t) => groupOf(t.id) === g).map((t) => t.id);
      expect(rows.map((r) => r.id).sort()).toEqual(expected.sort());
      const { first, last } = shardIdRange(g);
      for (const r of rows) expect(BigInt(r.id) >= first && BigInt(r.id) <= last).toBe(true);
    }
    expect(keyed.some((t) => BigInt(t.id) > 2n ** 53n)).toBe(true);
    // A batch of keys of both groups: ids in input order, each in its key's group.
    const batch = await front.scheduleMany(keys.map((key) => ({ kind: `${kind}-many`, key, delayMs: 60_000 })));
    expect(batch.map((t) => groupOf(t.id))).toEqual(keys.map((key) => fnv1a32(key) % 2));
    for (const [i, t] of batch.entries()) expect(await front.getTask(t.id)).toMatchObject({ id: t.id, key: keys[i], kind: `${kind}-many` });
  });

  it('reaches the one group an id names: getTask, cancel, claim, extend, complete, fail, getCompletion', async () => {
    const kind = `byid-${driver}`;
    const tasks = await front.scheduleMany([0, 1, 2, 3].map((i) => ({ kind, key: `${driver}-byid-${i}`, maxAttempts: 1 })));
    expect(new Set(tasks.map((t) => groupOf(t.id))).size).toBe(2);
    for (const t of tasks) expect((await front.getTask(t.id))?.id).toBe(t.id);
    // An id of group 1 read through a store of group 0 alone is not there.
    const inOne = tasks.find((t) => groupOf(t.id) === 1)!;
    expect(await front.stores[0]!.getTask(inOne.id)).toBeNull();
    expect(await front.cancel(tasks[0]!.id)).toBe('CANCELLED');
    const claimed = await front.claim({ owner: 'w', limit: 10, leaseMs: 30_000, kinds: [kind] });
    expect(claimed.map((c) => c.id).sort()).toEqual(tasks.slice(1).map((t) => t.id).sort());
    for (const c of claimed) expect(await front.extend({ id: c.id, attempt: c.attempt, leaseMs: 30_000 })).toBe(true);
    expect(await front.complete({ id: claimed[0]!.id, attempt: 1, owner: 'w' })).toBe('DONE');
    expect(await front.completeMany(claimed.slice(1, 2).map((c) => ({ id: c.id, attempt: 1, owner: 'w' })))).toEqual(['DONE']);
    expect(await front.fail({ id: claimed[2]!.id, attempt: 1, error: 'boom', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
    expect(await front.getCompletion(claimed[0]!.id)).toMatchObject({ taskId: claimed[0]!.id, attempt: 1, worker: 'w' });
    expect((await front.getTask(claimed[2]!.id))?.state).toBe('DEAD');
    const retried = await front.retry({ id: claimed[2]!.id });
    expect(retried.outcome).toBe('RETRIED');
    expect(groupOf((retried as { id: string }).id)).toBe(groupOf(claimed[2]!.id));
    // An id of no group answers as an unknown id.
    expect(await front.getTask((3n << 56n).toString())).toBeNull();
    expect(await front.cancel((3n << 56n).toString())).toBe('NOT_FOUND');
  });

  it('keeps dedup exact: two fronts racing on keys of both groups create one task per key', async () => {
    const kind = `dedup-${driver}`;
    const keys = Array.from({ length: 6 }, (_, i) => `${driver}-race-${i}`);
    expect(new Set(keys.map((k) => fnv1a32(k) % 2)).size).toBe(2);
    const results = await Promise.all(keys.flatMap((key) => [front, second, front, second].map((f) => f.schedule({ kind, key, delayMs: 60_000 }))));
    for (const key of keys) {
      const mine = results.filter((_, i) => keys[Math.floor(i / 4)] === key);
      expect(new Set(mine.map((r) => r.id)).size).toBe(1);
      expect(mine.filter((r) => r.created)).toHaveLength(1);
    }
    let rows = 0;
    for (const a of groups) rows += Number((await a.query<{ n: number }>(`select count(*)::int as n from ${a.t('task')} where kind = $1`, [kind]))[0]!.n);
    expect(rows).toBe(keys.length);
  });

  it('claims across groups, skipping a group that answered empty until a schedule or a notice wakes it', async () => {
    const kind = `skip-${driver}`;
    const params = { owner: 'w', limit: 5, leaseMs: 30_000, kinds: [kind] };
    expect(await front.claim(params)).toEqual([]);
    expect(await front.claim(params)).toEqual([]);
    claimsPerGroup.fill(0);
    // Both groups answered empty: ten idle claims ask one group each, not two.
    for (let i = 0; i < 10; i++) expect(await front.claim(params)).toEqual([]);
    expect(claimsPerGroup[0]! + claimsPerGroup[1]!).toBe(10);
    // Through this front: the group scheduled into is asked again at once.
    const own = await front.schedule({ kind, key: `${driver}-own` });
    expect((await front.claim(params)).map((t) => t.id)).toEqual([own.id]);
    // Through another process: its notice wakes the group for a listening front.
    for (let i = 0; i < 2; i++) await front.claim(params);
    const seen: string[] = [];
    const unlisten = await front.listen((n) => seen.push(n.id));
    try {
      const theirs = await second.schedule({ kind, key: `${driver}-theirs-${groupOf(own.id) === 0 ? 'x' : 'y'}` });
      const deadline = Date.now() + 10_000;
      while (!seen.includes(theirs.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toContain(theirs.id);
      expect((await front.claim(params)).map((t) => t.id)).toEqual([theirs.id]);
    } finally {
      await unlisten();
    }
  });

  it('two claim loops drain both groups: every task done once', async () => {
    const kind = `drain-${driver}`;
    const n = 120;
    const ids = (await front.scheduleMany(Array.from({ length: n }, (_, i) => ({ kind, payload: { i } })))).map((t) => t.id);
    const more = await Promise.all(Array.from({ length: 40 }, (_, i) => second.schedule({ kind, payload: { i: n + i } })));
    const all = [...ids, ...more.map((t) => t.id)];
    expect(new Set(all.map(groupOf)).size).toBe(2);
    const done: string[] = [];
    const loop = async (f: ShardedStore<any>, owner: string) => {
      for (let round = 0; round < 200 && done.length < all.length; round++) {
        const got = await f.claim({ owner, limit: 7, leaseMs: 30_000, kinds: [kind] });
        if (got.length === 0) {
          await new Promise((r) => setTimeout(r, 5));
          continue;
        }
        const outcomes = await f.completeMany(got.map((t) => ({ id: t.id, attempt: t.attempt, owner })));
        expect(outcomes.every((o) => o === 'DONE')).toBe(true);
        done.push(...got.map((t) => t.id));
      }
    };
    await Promise.all([loop(front, 'a'), loop(second, 'b')]);
    expect(done.sort()).toEqual([...all].sort());
    expect(new Set(done).size).toBe(all.length);
    const counts = await front.countByState();
    expect(counts.DONE).toBeGreaterThanOrEqual(all.length);
    const stats = await front.stats();
    expect(stats.byKind.find((k) => k.kind === kind)).toBeUndefined();
  });
});
