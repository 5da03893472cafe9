/**
 * The /proc reading of the server's CPU (src/peers/db/server-cpu.ts) on the embedded test server,
 * which runs on this host: it finds the postmaster from a session's backend, and a statement that
 * burns CPU in a backend raises the reading. Counts only, no timing bound: /proc counts in clock
 * ticks (10 ms), and counting five million rows takes well over one on any machine.
 */
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postmasterOf, serverCpuMs } from '../../dist/peers/db/server-cpu.js';

describe('serverCpuMs', () => {
  it.skipIf(process.env.DATABASE_URL !== undefined)('finds the postmaster of a session and grows while a backend works', async () => {
    const client = new pg.Client({ connectionString: testDatabaseUrl() });
    await client.connect();
    try {
      const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
      const postmaster = postmasterOf(rows[0]?.pid ?? -1);
      expect(postmaster).toBeTypeOf('number');
      const before = serverCpuMs(postmaster as number);
      expect(Number.isFinite(before)).toBe(true);
      await client.query('select count(*) from generate_series(1, 5000000)');
      const after = serverCpuMs(postmaster as number);
      expect(after).toBeGreaterThan(before);
      // Not a process of this host's PostgreSQL: NaN, never a wrong number.
      expect(postmasterOf(process.pid)).toBeUndefined();
      expect(serverCpuMs(2 ** 22 + 12_345)).toBeNaN();
    } finally {
      await client.end();
    }
  });
});
