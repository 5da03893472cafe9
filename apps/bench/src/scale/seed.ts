/**
 * Bulk finished tasks for the scale bench, written with `INSERT ... SELECT generate_series`
 * (PostgreSQL 17 §9.26) in chunks, into whichever table holds finished tasks in the migrated schema:
 * `task_history` once the live/history split is in (docs/contract.md#history), else `task`. Only the
 * bench writes this way; the store's API would need one transaction per task.
 */
import pg from 'pg';

/** The columns the bench can fill, with the SQL that fills them (`g` is the series number). */
const FILLERS: Readonly<Record<string, string>> = {
  kind: `'bench_history'`,
  payload: `'{}'::jsonb`,
  state: `'DONE'`,
  due_at: `now() - interval '2 hours' + (g % 3600000) * interval '1 millisecond'`,
  attempt: '1',
  max_attempts: '5',
  result: `'null'::jsonb`,
  created_at: `now() - interval '2 hours'`,
  updated_at: `now() - interval '1 hour' + (g % 3600000) * interval '1 millisecond'`,
  finished_at: `now() - interval '1 hour' + (g % 3600000) * interval '1 millisecond'`,
};

/** The table finished tasks live in: `<schema>.task_history` when it exists, else `<schema>.task`. */
export async function historyTable(client: pg.ClientBase, schema: string): Promise<{ name: string; split: boolean }> {
  const { rows } = await client.query<{ t: string | null }>('select to_regclass($1)::text as t', [`${pg.escapeIdentifier(schema)}.task_history`]);
  const split = rows[0]?.t != null;
  return { name: `${pg.escapeIdentifier(schema)}.${split ? 'task_history' : 'task'}`, split };
}

/**
 * Adds `count` DONE tasks, finished within the last hour, in chunks of `chunk` rows (one statement
 * and one transaction each).
 * @param onChunk called after each chunk with the rows written so far
 */
export async function addFinished(client: pg.ClientBase, schema: string, count: number, chunk: number, onChunk?: (written: number) => void): Promise<void> {
  if (count <= 0) return;
  const table = await historyTable(client, schema);
  await addFinishedTo(client, table.name, schema, table.split ? 'task_history' : 'task', `${pg.escapeIdentifier(schema)}.task`, count, chunk, onChunk);
}

/**
 * {@link addFinished} into a given table `qualified` (`<schemaName>.<tableName>`, named apart for the
 * catalog look-up). When its `id` has no default (a history table takes the id of the live row it
 * moves), ids come from the sequence of `liveTask`'s `id`, the one id sequence of both tables.
 */
export async function addFinishedTo(client: pg.ClientBase, qualified: string, schemaName: string, tableName: string, liveTask: string, count: number, chunk: number, onChunk?: (written: number) => void): Promise<void> {
  const { rows } = await client.query<{ column_name: string; column_default: string | null; is_identity: string }>(
    'select column_name, column_default, is_identity from information_schema.columns where table_schema = $1 and table_name = $2',
    [schemaName, tableName],
  );
  const columns = rows.map((r) => r.column_name).filter((c) => c in FILLERS);
  const fill = columns.map((c) => FILLERS[c]);
  const id = rows.find((r) => r.column_name === 'id');
  if (id && id.column_default === null && id.is_identity !== 'YES') {
    columns.push('id');
    fill.push(`nextval(pg_get_serial_sequence(${pg.escapeLiteral(liveTask)}, 'id'))`);
  }
  const list = columns.join(', ');
  const values = fill.join(', ');
  for (let written = 0; written < count; ) {
    const n = Math.min(chunk, count - written);
    await client.query(`insert into ${qualified} (${list}) select ${values} from generate_series($1::bigint, $2::bigint) g`, [written + 1, written + n]);
    written += n;
    onChunk?.(written);
  }
}

/** `VACUUM (ANALYZE)` of the live table and the history table (PostgreSQL 17 §24.1), as autovacuum would after a bulk load. */
export async function vacuumAnalyze(client: pg.ClientBase, schema: string): Promise<void> {
  const table = await historyTable(client, schema);
  await client.query(`vacuum (analyze) ${pg.escapeIdentifier(schema)}.task`);
  if (table.split) await client.query(`vacuum (analyze) ${table.name}`);
}

/** Size of one table of the schema, partitions summed (`pg_partition_tree`, PostgreSQL 17 §9.27.10). */
export interface RelationSize {
  readonly table: string;
  /** Heap bytes (all partitions). */
  readonly heapBytes: number;
  /** Index bytes (all partitions). */
  readonly indexBytes: number;
  /** Heap + indexes + TOAST bytes. */
  readonly totalBytes: number;
}

/** Sizes of every top-level table of `schema`, largest first. */
export async function relationSizes(client: pg.ClientBase, schema: string): Promise<RelationSize[]> {
  const { rows } = await client.query<{ table: string; heap: string; idx: string; total: string }>(
    `select c.relname as table,
            sum(pg_relation_size(p.relid))::text as heap,
            sum(pg_indexes_size(p.relid))::text as idx,
            sum(pg_total_relation_size(p.relid))::text as total
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       cross join lateral (select t.relid from pg_partition_tree(c.oid) t union select c.oid) p
      where n.nspname = $1 and c.relkind in ('r', 'p') and not c.relispartition
      group by c.relname
      order by sum(pg_total_relation_size(p.relid)) desc`,
    [schema],
  );
  return rows.map((r) => ({ table: r.table, heapBytes: Number(r.heap), indexBytes: Number(r.idx), totalBytes: Number(r.total) }));
}
