/**
 * One-off administrative queries against the bench server (create/drop databases, read statistics).
 */
import pg from 'pg';

/** Runs `fn` with a fresh client connected to `url`, and always closes it. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'postpone-bench-admin' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The URL of database `name` on the server of `url`. */
export function databaseUrl(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}
