/**
 * A vitest `globalSetup` module: one PostgreSQL for the whole test run of a package.
 *
 * Uses `DATABASE_URL` when set, else starts an embedded server. Test files read the URL with
 * `testDatabaseUrl()` (from `process.env.POSTPONE_TEST_DATABASE_URL`, which vitest's workers
 * inherit) and isolate themselves in a schema of their own.
 */
import { type RunningDatabase, resolveDatabase } from './index.js';

interface SetupProject {
  provide(key: 'databaseUrl', value: string): void;
}

let db: RunningDatabase | undefined;

export async function setup(project: SetupProject): Promise<void> {
  db = await resolveDatabase();
  process.env.POSTPONE_TEST_DATABASE_URL = db.url;
  project.provide('databaseUrl', db.url);
}

export async function teardown(): Promise<void> {
  await db?.stop();
  db = undefined;
}

/** The URL set up by this globalSetup. @throws Error when the setup did not run */
export function testDatabaseUrl(): string {
  const url = process.env.POSTPONE_TEST_DATABASE_URL;
  if (!url) throw new Error('POSTPONE_TEST_DATABASE_URL is not set: add @postpone/embedded/vitest-setup to globalSetup');
  return url;
}
