/**
 * postgres.js 3.4.9 throws from a `setImmediate` when a deferred write runs after its connection
 * closed (`socket.write` on null, porsager/postgres#1154 and #1208): an uncaught TypeError that ends
 * the process — seen in the soak as worker crashes. The workspace applies patches/postgres@3.4.9.patch
 * (pnpm `patchedDependencies`), which settles such a write with CONNECTION_CLOSED instead. This is
 * the upstream issue's reproduction, against a real PostgreSQL: a reserved connection whose backend
 * was terminated is written to again.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';

const quiet = { onnotice: () => {} };

describe('postgres.js write after close (patched)', () => {
  const admin = postgres(testDatabaseUrl(), { max: 1, ...quiet });
  const sql = postgres(testDatabaseUrl(), { max: 2, ...quiet });
  afterAll(async () => {
    await sql.end({ timeout: 1 });
    await admin.end({ timeout: 1 });
  });

  it('a query on a reserved connection whose backend was terminated rejects CONNECTION_CLOSED; nothing is thrown uncaught', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    const reserved = await sql.reserve();
    try {
      const [row] = await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const [killed] = await admin<{ ok: boolean }[]>`select pg_terminate_backend(${row!.pid}) as ok`;
      expect(killed!.ok).toBe(true);
      // Bounded wait until the reserved connection has seen its close.
      for (let i = 0; i < 50; i += 1) {
        const [alive] = await admin<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where pid = ${row!.pid}`;
        if (alive!.n === 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, 100));
      const outcomes: string[] = [];
      for (let i = 0; i < 3; i += 1) {
        outcomes.push(await reserved`select 1 as one`.then(() => 'ok', (error: { code?: string }) => String(error.code)));
      }
      await new Promise((r) => setImmediate(r)); // a deferred write, had it thrown, would have by now
      expect(outcomes).toEqual(['CONNECTION_CLOSED', 'CONNECTION_CLOSED', 'CONNECTION_CLOSED']);
      expect(uncaught).toEqual([]);
    } finally {
      // Not released: postgres.js 3.4.9 would put the closed connection back among the idle ones.
      process.off('uncaughtException', onUncaught);
    }
  });
});

/**
 * postgres.js 3.4.9 reads the array types on every new connection (`fetch_types`, on by default)
 * and drops that promise: when the query fails — cancelled, or its connection terminated — the
 * rejection is unhandled and ends the process (porsager/postgres#1192, #1205, #1223; seen as a
 * postgres.js hybrid worker crash in backend_terminated). The store's own `sql` has `fetch_types:
 * false`. A 1 ms `statement_timeout` cancels the types query every time (the upstream reproduction),
 * so each side runs in a child process of its own.
 */
describe('postgres.js array-type fetch on a new connection', () => {
  const cwd = fileURLToPath(new URL('..', import.meta.url));
  function child(body: string): Promise<{ code: number | null; stdout: string }> {
    const script = `
process.on('unhandledRejection', (e) => { console.log('UNHANDLED ' + (e && e.code)); process.exit(3); });
${body}
await new Promise((r) => setTimeout(r, 200));
console.log('DONE');`;
    return new Promise((resolve) => {
      execFile(process.execPath, ['--input-type=module', '-e', script], { cwd, env: { ...process.env, URL: testDatabaseUrl() }, timeout: 30_000 }, (error, stdout) =>
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout }),
      );
    });
  }

  it('with fetch_types on (the driver default), a cancelled types query is an unhandled rejection that ends the process', async () => {
    const r = await child(`
import postgres from 'postgres';
const sql = postgres(process.env.URL, { max: 1, connection: { statement_timeout: 1 }, onnotice() {} });
await sql\`select 1\`.catch((e) => console.log('QUERY ' + e.code));`);
    expect(r.stdout).toContain('UNHANDLED 57014');
    expect(r.code).toBe(3);
  });

  it('the store created from a connection string does not fetch types: its calls answer, the process lives', async () => {
    const r = await child(`
import { createPostgresJsStore } from '@postpone/postgres/postgres-js';
const store = createPostgresJsStore({ connectionString: process.env.URL, schema: 'never_migrated_fetch_types', connectionOptions: { max: 1, connection: { statement_timeout: 1 } } });
await store.getTask('1').catch((e) => console.log('STORE ' + e.code));
await store.close();`);
    expect(r.stdout).not.toContain('UNHANDLED');
    expect(r.stdout).toContain('DONE');
    expect(r.code).toBe(0);
  });
});
