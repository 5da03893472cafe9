/**
 * The bench's PostgreSQL: `DATABASE_URL` when set, else an embedded PostgreSQL 17 started with
 * `pg_stat_statements` preloaded, so the statements each system sends can be counted exactly
 * (PostgreSQL 17 §F.32: the module must be loaded through `shared_preload_libraries`).
 */
import { type RunningDatabase, resolveDatabase } from '@postpone/embedded';

/** Server flags the embedded bench server starts with. */
export const BENCH_POSTGRES_FLAGS: readonly string[] = [
  '-c',
  'shared_preload_libraries=pg_stat_statements',
  '-c',
  'pg_stat_statements.track=top',
  '-c',
  'pg_stat_statements.max=10000',
];

/** Starts (or attaches to) the bench server. */
export async function startBenchDatabase(env: NodeJS.ProcessEnv = process.env): Promise<RunningDatabase> {
  return await resolveDatabase(env, { postgresFlags: BENCH_POSTGRES_FLAGS });
}
