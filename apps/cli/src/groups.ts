/**
 * A sharded deployment on the command line (docs/sharding.md, issue #25): `--groups s0,s1,…` (or
 * `POSTPONE_GROUPS`) names the Postpone schemas of one deployment's shard groups, in group order
 * (the order the application gives `createShardedStore`: the index is written in every id, never
 * reorder). With it, `migrate`, `stats`, `list`, `show` and `dashboard` run through the front
 * (`createShardedStore` of `@postpone/postgres`): `migrate` migrates every schema and sets each
 * group's id range, `stats` adds every group's counts, `list` merges every group's page in id order,
 * `show` reads the group the id names, the dashboard reads and acts through the front (by-id actions
 * reach the group the id names). The other commands read or write one schema: they refuse
 * `--groups` (exit 2) and name `--schema` of the group to use.
 */
import { createShardedStore, MAX_SHARD_GROUPS, type ShardedStore } from '@postpone/postgres';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import { UsageError } from './args.js';
import type { DashboardStore } from './dashboard/data.js';

/** A PostgreSQL identifier as `--schema` takes it: unquoted lower-case letters, digits, `_` and `$`, not starting with a digit, at most 63 bytes. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_$]{0,62}$/;

/**
 * The schemas of `--groups`: comma-separated, trimmed, each a plain lower-case identifier, distinct,
 * 1..{@link MAX_SHARD_GROUPS}.
 * @throws UsageError INVALID_OPTION naming `--groups`
 */
export function parseGroups(text: string): string[] {
  const schemas = text.split(',').map((s) => s.trim());
  const bad = schemas.find((s) => !SCHEMA_NAME.test(s));
  if (bad !== undefined) throw new UsageError('INVALID_OPTION', `--groups / POSTPONE_GROUPS: expected schema names separated by commas (postpone_g0,postpone_g1), got ${JSON.stringify(bad)}`);
  if (new Set(schemas).size !== schemas.length) throw new UsageError('INVALID_OPTION', '--groups / POSTPONE_GROUPS: a schema is named twice');
  if (schemas.length > MAX_SHARD_GROUPS) throw new UsageError('INVALID_OPTION', `--groups / POSTPONE_GROUPS: at most ${MAX_SHARD_GROUPS} groups, got ${schemas.length}`);
  return schemas;
}

/**
 * Opens the front over `schemas` of the database at `url` (one pool of 2 connections per group),
 * runs `fn`, closes it.
 */
export async function withFront<T>(url: string, schemas: readonly string[], fn: (front: ShardedStore<PgTx>) => Promise<T>): Promise<T> {
  const front = createShardedStore({ stores: schemas.map((schema) => createPgStore({ connectionString: url, schema, poolConfig: { max: 2, connectionTimeoutMillis: 10_000 } })) });
  try {
    return await fn(front);
  } finally {
    await front.close();
  }
}

/** The refusal of a one-schema command given `--groups`. */
export function oneSchemaOnly(): UsageError {
  return new UsageError('INVALID_OPTION', '--groups / POSTPONE_GROUPS: this command reads or writes one schema; run it with --schema <the group\'s schema> (migrate, stats, list, show and dashboard take --groups)');
}

/**
 * The dashboard's store over the front: every call the front's own, except `getBatch`, which answers
 * null (the batch page's 404): the front offers no batches (docs/sharding.md), and a batch id of one
 * group's table names no group. The other calls are checked against {@link DashboardStore} when compiled.
 */
export function frontDashboardStore(front: ShardedStore<PgTx>): DashboardStore {
  const checked: Omit<DashboardStore, 'getBatch'> = front;
  return new Proxy(checked, {
    get(target, prop) {
      if (prop === 'getBatch') return async () => null;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as DashboardStore;
}
