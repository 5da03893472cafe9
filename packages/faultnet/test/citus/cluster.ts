/**
 * The Citus cluster of the faultnet Citus suite, as its fault cases need it: which node holds a
 * Postpone schema's shard group, stopping and starting one node with `pg_ctl` on its data folder
 * (the folder and base port that `packages/postgres/test/citus/citus-setup.ts` exports as
 * `POSTPONE_CITUS_DATA` and `POSTPONE_CITUS_BASEPORT`; nodes `coordinator`, `worker1`, `worker2` of
 * `citus-cluster.sh` on the base port and the next two), and moving a schema's shard group to
 * another node (`citus_schema_move`, Citus 12+).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);
const PGBIN = process.env.PGBIN || '/usr/lib/postgresql/15/bin';

export type CitusNode = 'coordinator' | 'worker1' | 'worker2';
const NODES: readonly CitusNode[] = ['coordinator', 'worker1', 'worker2'];

/** @throws Error when the suite's setup did not export the cluster (not run by vitest.citus.config.ts) */
export function citusCluster(): { readonly dir: string; readonly basePort: number } {
  const dir = process.env.POSTPONE_CITUS_DATA;
  const basePort = Number(process.env.POSTPONE_CITUS_BASEPORT);
  if (!dir || !Number.isInteger(basePort)) throw new Error('POSTPONE_CITUS_DATA / POSTPONE_CITUS_BASEPORT unset: run through vitest.citus.config.ts');
  return { dir, basePort };
}

export function portOf(node: CitusNode): number {
  return citusCluster().basePort + NODES.indexOf(node);
}

/** The worker node holding `schema`'s shard group (where its `task` table's one shard is placed). */
export async function nodeOfSchema(pool: pg.Pool, schema: string): Promise<CitusNode> {
  const { rows } = await pool.query<{ port: number }>(`select nodeport as port from citus_shards where table_name = $1::regclass`, [`${pg.escapeIdentifier(schema)}.task`]);
  const port = rows[0]?.port;
  const node = NODES.find((n) => portOf(n) === port);
  if (rows.length !== 1 || node === undefined || node === 'coordinator') throw new Error(`schema ${schema}: task shard placed on ${JSON.stringify(rows)}, not on one worker node`);
  return node;
}

/** The other worker node. */
export function otherWorker(node: CitusNode): CitusNode {
  return node === 'worker1' ? 'worker2' : 'worker1';
}

/** `pg_ctl` on a node's data folder, as the OS user `postgres` when root (as citus-cluster.sh runs the servers). */
async function pgCtl(node: CitusNode, args: readonly string[]): Promise<void> {
  const { dir } = citusCluster();
  const command = [join(PGBIN, 'pg_ctl'), '-D', join(dir, node), ...args];
  const asRoot = process.getuid?.() === 0;
  await run(asRoot ? 'runuser' : command[0] ?? '', asRoot ? ['-u', process.env.CITUS_PG_USER || 'postgres', '--', ...command] : command.slice(1), { cwd: '/', timeout: 90_000 });
}

/** Stops a node in immediate mode (no shutdown checkpoint, clients cut: as a crash of the server). */
export async function stopNode(node: CitusNode): Promise<void> {
  await pgCtl(node, ['-m', 'immediate', '-w', '-t', '60', 'stop']);
}

/** Starts a stopped node again (same port and data; logs appended to `<node>.log`) and waits until it accepts connections. */
export async function startNode(node: CitusNode): Promise<void> {
  const { dir } = citusCluster();
  await pgCtl(node, ['-l', join(dir, `${node}.log`), '-w', '-t', '60', 'start']);
}

/**
 * Moves `schema`'s shard group to `to` with `citus_schema_move` in `block_writes` mode: writes to
 * the group wait during the copy (the case measures that wait as the claim gap); the logical modes
 * would need a replica identity on every table, and the harness's `history_effect` has none.
 */
export async function moveSchema(pool: pg.Pool, schema: string, to: CitusNode): Promise<void> {
  await pool.query(`select citus_schema_move($1::regnamespace, '127.0.0.1', $2::int, shard_transfer_mode => 'block_writes')`, [schema, portOf(to)]);
}

/**
 * `synchronous_commit = on` on every node (`alter system`, then a reload): `citus-cluster.sh` sets it
 * off for speed, and then an immediate stop loses commits already acknowledged to the client (up to
 * three `wal_writer_delay`s, PostgreSQL 15 §30.4 "Asynchronous Commit") — the history checker sees
 * such a lost claim as attempt 1 claimed twice. The node fault cases want a crash, not that loss.
 */
export async function durableCommits(): Promise<void> {
  for (const node of NODES) {
    const client = new pg.Client({ host: '127.0.0.1', port: portOf(node), user: 'postgres', database: 'postgres' });
    await client.connect();
    try {
      await client.query('alter system set synchronous_commit = on');
      await client.query('select pg_reload_conf()');
    } finally {
      await client.end();
    }
  }
}
