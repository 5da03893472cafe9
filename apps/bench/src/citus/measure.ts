/**
 * The measurements of `pnpm bench --citus` on one started cluster ({@link startCitusCluster}):
 * three set-ups, each Postpone's sharded front (`createShardedStore`) over two shard groups, run in
 * turn for a number of rounds (the first set-up moves by one each round, so none always runs first):
 *
 * - `pg15`: plain PostgreSQL 15 — a database without the Citus extension on worker 1's server
 *   (the same binary and settings; `citus.so` is loaded but the extension not created), two schemas;
 * - `citus-1w`: the coordinator, both groups' shards placed on worker 1;
 * - `citus-2w`: the coordinator, group 0 on worker 1 and group 1 on worker 2.
 *
 * Per set-up and round: `scheduleMany` of keyless tasks due now in batches (rows/s), then a drain by
 * concurrent claim loops (`limit` per claim, `completeMany` of each claim's tasks: tasks/s, and the
 * latency of every claim that took tasks, p50/p99), with `pg_stat_statements` reset on every node
 * before the schedule and read after the drain (statements and server time per task and node); then
 * the coordinator's overhead per statement: one single-row statement by id (a read and an update)
 * sent alternately to the group's shard table on its worker and to the table through the
 * coordinator, p50/p99 each.
 */
import { performance } from 'node:perf_hooks';
import type { ScheduleInput } from '@postpone/core';
import { createShardedStore, type PostgresStore } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import type { CitusCluster } from './cluster.js';

export const SETUPS = ['pg15', 'citus-1w', 'citus-2w'] as const;
export type SetupName = (typeof SETUPS)[number];

export interface CitusBenchOptions {
  readonly tasks: number;
  readonly batch: number;
  readonly loops: number;
  readonly claimLimit: number;
  readonly probes: number;
  readonly rounds: number;
  /** Bound on one drain, ms (a drain that does not finish in time is reported as such). */
  readonly drainTimeoutMs: number;
}

export const CITUS_BENCH_DEFAULTS: CitusBenchOptions = { tasks: 2_000, batch: 100, loops: 4, claimLimit: 20, probes: 300, rounds: 3, drainTimeoutMs: 120_000 };

/** Statements and server time one node recorded (`pg_stat_statements`, the set-up's database) per task scheduled and drained. */
export interface NodeCost {
  readonly node: string;
  readonly statementsPerTask: number;
  readonly serverMsPerTask: number;
  /** `PREPARE TRANSACTION`s per task: this node's part in two-phase commits. */
  readonly preparedPerTask: number;
}

export interface Latency {
  readonly p50: number;
  readonly p99: number;
}

export interface Overhead {
  /** The same statement straight to the shard table on its worker (on `pg15`: to the table, there is no coordinator). */
  readonly direct: { readonly read: Latency; readonly update: Latency };
  /** Through the coordinator (Citus only). */
  readonly coordinator: { readonly read: Latency; readonly update: Latency } | null;
}

export interface SetupRound {
  readonly setup: SetupName;
  readonly round: number;
  /** Where each group's `task` shard sits (`coordinator`, `worker1`, `worker2`; `pg15`: `worker1`). */
  readonly placement: readonly string[];
  readonly scheduleRowsPerSec: number;
  readonly drainTasksPerSec: number;
  readonly drained: number;
  readonly claims: number;
  readonly emptyClaims: number;
  /** Claims that took at least one task, ms. */
  readonly claimMs: Latency;
  readonly nodes: readonly NodeCost[];
  /** Per node, its most frequent statements in this round. */
  readonly top: readonly { readonly node: string; readonly statements: readonly TopStatement[] }[];
  readonly overhead: Overhead;
}

/** The `p`-quantile (0..1) of `values`, nearest rank; 0 for none. */
export function quantile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

const latency = (values: readonly number[]): Latency => ({ p50: quantile(values, 0.5), p99: quantile(values, 0.99) });

/** Statements of the bench itself and Citus's background work (deadlock detection, 2PC recovery), left out of the counts. */
const PSS_READ = `select coalesce(sum(calls), 0)::float8 as calls, coalesce(sum(total_exec_time), 0)::float8 as ms
  from pg_stat_statements
 where dbid = (select oid from pg_database where datname = current_database())
   and query not like '%pg_stat_statements%' and query not like '%wait_edges%'
   and query not like '%pg_prepared_xacts%' and query not like '%citus_internal%'`;

/** Two-phase commits a node took part in: its `PREPARE TRANSACTION` statements (each gid is a text of its own). */
const PSS_PREPARED = `select coalesce(sum(calls), 0)::float8 as n from pg_stat_statements
 where dbid = (select oid from pg_database where datname = current_database()) and query ilike 'prepare transaction%'`;

/** The statements behind a node's count, most frequent first: the first 70 characters of the normalised text. */
const PSS_TOP = `select left(regexp_replace(query, '\\s+', ' ', 'g'), 70) as query, sum(calls)::float8 as calls, sum(total_exec_time)::float8 as ms
  from pg_stat_statements
 where dbid = (select oid from pg_database where datname = current_database())
   and query not like '%pg_stat_statements%' and query not like '%wait_edges%'
   and query not like '%pg_prepared_xacts%' and query not like '%citus_internal%'
 group by 1 order by 2 desc limit 8`;

/** One kind of statement a node ran, per task. */
export interface TopStatement {
  readonly query: string;
  readonly perTask: number;
  readonly msPerTask: number;
}

interface Node {
  readonly name: string;
  readonly client: pg.Client;
}

interface Setup {
  readonly name: SetupName;
  readonly pool: pg.Pool;
  readonly stores: readonly PostgresStore<unknown>[];
  /** The nodes whose statements count for this set-up (their database's `pg_stat_statements`). */
  readonly nodes: readonly Node[];
  readonly placement: readonly string[];
  /** Group 0's task table: a direct client to its node, and the shard table's qualified name there. */
  readonly direct: { readonly client: pg.Client; readonly table: string };
  readonly coordinator: pg.Client | null;
  readonly schemas: readonly string[];
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  return client;
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function groupNode(coordinator: pg.Client, schema: string, byPort: ReadonlyMap<number, string>): Promise<{ node: string; port: number; shardTable: string }> {
  const { rows } = await coordinator.query<{ port: number; shard: string }>(
    `select nodeport as port, shard_name as shard from citus_shards where table_name = $1::regclass`,
    [`${schema}.task`],
  );
  const row = rows[0];
  if (row === undefined) throw new Error(`no Citus shard for ${schema}.task: is the schema distributed?`);
  return { node: byPort.get(row.port) ?? String(row.port), port: row.port, shardTable: row.shard };
}

/**
 * Creates the set-ups' schemas (migrated through the front) and places the Citus groups. Schemas are
 * `postpone_cb_<setup>_g<i>`; `pg15` uses database `postpone_plain` on worker 1's server.
 */
async function prepare(cluster: CitusCluster, name: SetupName, admin: Map<string, pg.Client>, log: (line: string) => void): Promise<Setup> {
  const [coord, w1, w2] = cluster.nodes as [CitusCluster['nodes'][0], CitusCluster['nodes'][0], CitusCluster['nodes'][0]];
  const schemas = [0, 1].map((g) => `postpone_cb_${name.replace('-', '_')}_g${g}`);
  const plain = name === 'pg15';
  const url = plain ? cluster.url(w1.port, 'postpone_plain') : cluster.url(coord.port);
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  pool.on('error', () => {});
  const stores = schemas.map((schema) => createPgStore({ pool, schema }) as PostgresStore<unknown>);
  const front = createShardedStore({ stores });
  await front.migrate();
  const pss = (n: string) => admin.get(n) as pg.Client;
  if (plain) {
    const client = await connect(url);
    return { name, pool, stores, nodes: [{ name: 'worker1', client: pss('worker1/plain') }], placement: ['worker1', 'worker1'], direct: { client, table: `${quoteIdent(schemas[0] as string)}.task` }, coordinator: null, schemas };
  }
  const coordinator = pss('coordinator');
  const byPort = new Map(cluster.nodes.map((n) => [n.port, n.name]));
  const want = name === 'citus-1w' ? [w1, w1] : [w1, w2];
  for (const [g, schema] of schemas.entries()) {
    const at = await groupNode(coordinator, schema, byPort);
    const target = want[g] as (typeof want)[number];
    if (at.port !== target.port) {
      log(`citus: moving ${schema} to ${target.name}`);
      await coordinator.query(`select citus_schema_move($1::regnamespace, '127.0.0.1', $2, 'block_writes')`, [schema, target.port]);
    }
  }
  const placed = await Promise.all(schemas.map((s) => groupNode(coordinator, s, byPort)));
  const first = placed[0] as (typeof placed)[number];
  const direct = await connect(cluster.url(first.port));
  return {
    name,
    pool,
    stores,
    nodes: [{ name: 'coordinator', client: coordinator }, ...cluster.nodes.slice(1).map((n) => ({ name: n.name, client: pss(n.name) }))],
    placement: placed.map((p) => p.node),
    direct: { client: direct, table: first.shardTable }, // `citus_shards.shard_name` is schema-qualified
    coordinator: await connect(url),
    schemas,
  };
}

async function nodeCounts(nodes: readonly Node[]): Promise<{ calls: number; ms: number }[]> {
  return Promise.all(nodes.map(async (n) => (await n.client.query<{ calls: number; ms: number }>(PSS_READ)).rows[0] as { calls: number; ms: number }));
}

async function timeStatement(client: pg.Client, sql: string, id: string): Promise<number> {
  const t0 = performance.now();
  await client.query(sql, [id]);
  return performance.now() - t0;
}

/** One round of one set-up (see the module docstring). */
async function runRound(setup: Setup, round: number, o: CitusBenchOptions): Promise<SetupRound> {
  const front = createShardedStore({ stores: setup.stores });
  const owner = `bench-${setup.name}-${round}`;
  await Promise.all(setup.nodes.map((n) => n.client.query('select pg_stat_statements_reset()')));
  const before = await nodeCounts(setup.nodes);

  const t0 = performance.now();
  for (let done = 0; done < o.tasks; done += o.batch) {
    const n = Math.min(o.batch, o.tasks - done);
    const inputs: ScheduleInput[] = Array.from({ length: n }, (_, i) => ({ kind: 'citus-bench', payload: { i: done + i }, delayMs: 0 }));
    await front.scheduleMany(inputs);
  }
  const scheduleMs = performance.now() - t0;

  const claimMs: number[] = [];
  let drained = 0;
  let claims = 0;
  let emptyClaims = 0;
  const d0 = performance.now();
  const deadline = d0 + o.drainTimeoutMs;
  const loop = async (k: number) => {
    // Bounded: by the deadline, and by the number of claims a drain can need several times over.
    for (let i = 0; i < o.tasks * 4 && drained < o.tasks && performance.now() < deadline; i += 1) {
      const c0 = performance.now();
      const tasks = await front.claim({ owner: `${owner}-${k}`, limit: o.claimLimit, leaseMs: 60_000, kinds: ['citus-bench'] });
      const took = performance.now() - c0;
      claims += 1;
      if (tasks.length === 0) {
        emptyClaims += 1;
        await new Promise((r) => setTimeout(r, 5));
        continue;
      }
      claimMs.push(took);
      await front.completeMany(tasks.map((t) => ({ id: t.id, attempt: t.attempt, owner: `${owner}-${k}` })));
      drained += tasks.length;
    }
  };
  await Promise.all(Array.from({ length: o.loops }, (_, k) => loop(k)));
  const drainMs = performance.now() - d0;
  const after = await nodeCounts(setup.nodes);
  const prepared = await Promise.all(setup.nodes.map(async (n) => ((await n.client.query<{ n: number }>(PSS_PREPARED)).rows[0]?.n ?? 0) / o.tasks));
  const nodes = setup.nodes.map((n, i) => ({
    preparedPerTask: prepared[i] ?? 0,
    node: n.name,
    statementsPerTask: ((after[i]?.calls ?? 0) - (before[i]?.calls ?? 0)) / o.tasks,
    serverMsPerTask: ((after[i]?.ms ?? 0) - (before[i]?.ms ?? 0)) / o.tasks,
  }));

  const top = await Promise.all(
    setup.nodes.map(async (n) => ({
      node: n.name,
      statements: (await n.client.query<{ query: string; calls: number; ms: number }>(PSS_TOP)).rows.map((r) => ({ query: r.query, perTask: r.calls / o.tasks, msPerTask: r.ms / o.tasks })),
    })),
  );

  // The coordinator's overhead per statement: one task of group 0 kept pending for the probes.
  const probe = await (setup.stores[0] as PostgresStore<unknown>).schedule({ kind: 'citus-bench-probe', payload: null, delayMs: 3_600_000 });
  const logical = `${quoteIdent(setup.schemas[0] as string)}.task`;
  const read = (table: string) => `select id, state from ${table} where id = $1`;
  const update = (table: string) => `update ${table} set due_at = due_at where id = $1`;
  const samples = { dr: [] as number[], du: [] as number[], cr: [] as number[], cu: [] as number[] };
  for (let i = 0; i < o.probes; i += 1) {
    samples.dr.push(await timeStatement(setup.direct.client, read(setup.direct.table), probe.id));
    if (setup.coordinator) samples.cr.push(await timeStatement(setup.coordinator, read(logical), probe.id));
    samples.du.push(await timeStatement(setup.direct.client, update(setup.direct.table), probe.id));
    if (setup.coordinator) samples.cu.push(await timeStatement(setup.coordinator, update(logical), probe.id));
  }
  await (setup.stores[0] as PostgresStore<unknown>).cancel(probe.id);
  return {
    setup: setup.name,
    round,
    placement: setup.placement,
    scheduleRowsPerSec: o.tasks / (scheduleMs / 1000),
    drainTasksPerSec: drained / (drainMs / 1000),
    drained,
    claims,
    emptyClaims,
    claimMs: latency(claimMs),
    nodes,
    top,
    overhead: {
      direct: { read: latency(samples.dr), update: latency(samples.du) },
      coordinator: setup.coordinator ? { read: latency(samples.cr), update: latency(samples.cu) } : null,
    },
  };
}

/** Runs every set-up for `o.rounds` rounds on `cluster`, in rotating order. */
export async function runCitusBench(cluster: CitusCluster, o: CitusBenchOptions, log: (line: string) => void): Promise<SetupRound[]> {
  const [coord, w1, w2] = cluster.nodes as [CitusCluster['nodes'][0], CitusCluster['nodes'][0], CitusCluster['nodes'][0]];
  const admin = new Map<string, pg.Client>();
  const setups: Setup[] = [];
  try {
    const w1Admin = await connect(cluster.url(w1.port));
    admin.set('worker1', w1Admin);
    await w1Admin.query('create database postpone_plain');
    admin.set('coordinator', await connect(cluster.url(coord.port)));
    admin.set('worker2', await connect(cluster.url(w2.port)));
    admin.set('worker1/plain', await connect(cluster.url(w1.port, 'postpone_plain')));
    // Citus refuses CREATE EXTENSION on a worker node; on the coordinator it creates it on the workers too.
    await (admin.get('coordinator') as pg.Client).query('create extension if not exists pg_stat_statements');
    await (admin.get('worker1/plain') as pg.Client).query('create extension if not exists pg_stat_statements');
    for (const c of admin.values()) await c.query('select count(*) from pg_stat_statements');
    for (const name of SETUPS) {
      log(`citus: preparing ${name}`);
      setups.push(await prepare(cluster, name, admin, log));
    }
    const out: SetupRound[] = [];
    for (let round = 1; round <= o.rounds; round += 1) {
      for (let k = 0; k < setups.length; k += 1) {
        const setup = setups[(k + round - 1) % setups.length] as Setup;
        const r = await runRound(setup, round, o);
        log(
          `citus: round ${round} ${setup.name}: schedule ${Math.round(r.scheduleRowsPerSec)} rows/s, drain ${Math.round(r.drainTasksPerSec)} tasks/s, claim p50 ${r.claimMs.p50.toFixed(1)} ms p99 ${r.claimMs.p99.toFixed(1)} ms`,
        );
        out.push(r);
      }
    }
    return out;
  } finally {
    for (const s of setups) {
      await Promise.all(s.stores.map((st) => st.close().catch(() => undefined)));
      await s.pool.end().catch(() => undefined);
      await s.direct.client.end().catch(() => undefined);
      await s.coordinator?.end().catch(() => undefined);
    }
    for (const c of admin.values()) await c.end().catch(() => undefined);
  }
}
