/**
 * postgres.js 3.4.9 throws from a `setImmediate` when a deferred write runs after its connection
 * closed (`socket.write` on null, porsager/postgres#1154 and #1208): an uncaught TypeError that ends
 * the process — seen in the soak as worker crashes. The workspace applies patches/postgres@3.4.9.patch
 * (pnpm `patchedDependencies`), which settles such a write with CONNECTION_CLOSED instead. This is
 * the upstream issue's reproduction, against a real PostgreSQL: a reserved connection whose backend
 * was terminated is written to again.
 */
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
