/**
 * Retention cost: removing 1 M finished tasks by deleting rows (in batches of 10 000 by id, as a
 * row-by-row `prune` must, then the `VACUUM` that makes the space reusable) against dropping the one
 * partition that holds them (PostgreSQL 17 §5.12.2: "removing old data … by dropping the partition is
 * far faster than a bulk DELETE, and avoids VACUUM overhead"). Both tables are copies of the schema's
 * history table (`LIKE … INCLUDING ALL`, its columns and indexes) in a scratch schema that is dropped
 * afterwards; the partitioned copy is ranged on the finish time.
 */
import pg from 'pg';
import { addFinishedTo, historyTable } from './seed.js';

export interface RetentionResult {
  readonly rows: number;
  /** DELETE in batches of 10 000, ms; and the VACUUM after it, ms. */
  readonly deleteMs: number;
  readonly deleteBatches: number;
  readonly vacuumMs: number;
  /** DETACH + DROP of the partition holding the same rows, ms. */
  readonly dropMs: number;
}

export async function measureRetention(client: pg.ClientBase, schema: string, rows: number): Promise<RetentionResult> {
  const scratch = pg.escapeIdentifier(`${schema}_retention`);
  const source = (await historyTable(client, schema)).name;
  const { rows: cols } = await client.query<{ c: string }>(`select column_name as c from information_schema.columns where table_schema = $1 and table_name = $2 and column_name = 'finished_at'`, [schema, source.endsWith('task_history') ? 'task_history' : 'task']);
  const finishedColumn = cols.length > 0 ? 'finished_at' : 'updated_at';
  await client.query(`drop schema if exists ${scratch} cascade`);
  await client.query(`create schema ${scratch}`);
  try {
    await client.query(`create table ${scratch}.plain (like ${source} including all)`);
    await client.query(`create table ${scratch}.part (like ${source} including defaults including identity) partition by range (${finishedColumn})`);
    await client.query(`create table ${scratch}.part_old partition of ${scratch}.part for values from (now() - interval '1 day') to (now() + interval '1 hour')`);
    await addFinishedTo(client, `${scratch}.plain`, `${schema}_retention`, 'plain', `${pg.escapeIdentifier(schema)}.task`, rows, 1_000_000);
    await addFinishedTo(client, `${scratch}.part`, `${schema}_retention`, 'part', `${pg.escapeIdentifier(schema)}.task`, rows, 1_000_000);
    await client.query(`vacuum (analyze) ${scratch}.plain`);
    await client.query(`vacuum (analyze) ${scratch}.part`);
    let t0 = performance.now();
    let batches = 0;
    for (; batches < 10_000; batches++) {
      const r = await client.query(`delete from ${scratch}.plain where id in (select id from ${scratch}.plain order by id limit 10000)`);
      if ((r.rowCount ?? 0) === 0) break;
    }
    const deleteMs = performance.now() - t0;
    t0 = performance.now();
    await client.query(`vacuum ${scratch}.plain`);
    const vacuumMs = performance.now() - t0;
    t0 = performance.now();
    await client.query(`alter table ${scratch}.part detach partition ${scratch}.part_old`);
    await client.query(`drop table ${scratch}.part_old`);
    const dropMs = performance.now() - t0;
    return { rows, deleteMs, deleteBatches: batches, vacuumMs, dropMs };
  } finally {
    await client.query(`drop schema if exists ${scratch} cascade`);
  }
}
