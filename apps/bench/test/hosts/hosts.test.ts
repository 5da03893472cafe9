/**
 * The hosts bench on a real PostgreSQL: the counting proxy counts exactly the statements a client
 * sends (simple and extended protocol), and a small run (1 and 2 hosts × 1 process) reports rows
 * whose figures come from real processes in network namespaces (skipped where netns is refused).
 */
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { netnsUnavailable } from '@postpone/faultnet';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { CountingProxy, runHostsBench } from '../../src/hosts/index.js';

describe('CountingProxy', () => {
  it('counts one statement per simple query and per Execute, none for the startup', async () => {
    const url = new URL(testDatabaseUrl());
    const proxy = await CountingProxy.start('127.0.0.1', url.hostname, Number(url.port));
    const client = new pg.Client({ connectionString: proxy.rewrite(url.toString()) });
    try {
      await client.connect();
      expect(proxy.statements).toBe(0);
      expect(proxy.open).toBe(1);
      await client.query('select 1');
      await client.query('select 2; select 3'); // one simple-query message
      for (let i = 0; i < 3; i++) expect((await client.query('select $1::int as n', [i])).rows).toEqual([{ n: i }]);
      expect(proxy.statements).toBe(5);
    } finally {
      await client.end();
      await proxy.close();
    }
    expect(proxy.statements).toBe(5);
  });
});

const unavailable = netnsUnavailable();

describe.skipIf(unavailable !== undefined)('runHostsBench', () => {
  it('1 and 2 hosts × 1 process: one row each, every task claimed, connections and statements counted', async () => {
    const result = await runHostsBench({ databaseUrl: testDatabaseUrl(), hostCounts: [1, 2], processesPerHost: 1, idleMs: 1_000, busyMs: 1_000, tasksPerSecond: 20 });
    expect(result.skipped).toBeUndefined();
    expect(result.rows.map((r) => [r.hosts, r.processes, r.tasks])).toEqual([
      [1, 1, 20],
      [2, 2, 20],
    ]);
    for (const r of result.rows) {
      expect(r.claimsPerTask).toBeGreaterThanOrEqual(1);
      expect(r.serverConnections).toBeGreaterThanOrEqual(r.processes);
      expect(r.idleStatementsPerSecPerHost).toBeGreaterThan(0);
      expect(r.busyStatementsPerSecPerHost).toBeGreaterThan(0);
      expect(Number.isFinite(r.latenessP99Ms)).toBe(true);
    }
  }, 180_000);
});
