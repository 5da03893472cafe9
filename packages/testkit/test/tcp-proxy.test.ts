import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_LATENCY_MS, TcpProxy } from '../src/tcp-proxy.js';

/** A pg client through the proxy; it never waits longer than `timeoutMs` for a query. */
async function connect(url: string, timeoutMs = 3_000): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  client.on('error', () => {});
  await client.connect();
  return client;
}

async function timed<T>(f: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await f();
  return { ms: performance.now() - start, value };
}

describe('TcpProxy in front of PostgreSQL', () => {
  let proxy: TcpProxy | undefined;
  const clients: pg.Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.end().catch(() => {})));
    await proxy?.close();
    proxy = undefined;
  });
  const open = async (timeoutMs?: number) => {
    const client = await connect(proxy!.rewrite(testDatabaseUrl()), timeoutMs);
    clients.push(client);
    return client;
  };

  it('passes queries through and lists its connections', async () => {
    proxy = await TcpProxy.forUrl(testDatabaseUrl());
    const client = await open();
    const { rows } = await client.query<{ n: number }>('select 41 + 1 as n');
    expect(rows[0]?.n).toBe(42);
    const [info] = proxy.list();
    expect(proxy.accepted).toBe(1);
    expect(info).toMatchObject({ id: 1, mode: 'pass', open: true });
    expect(info!.bytesUp).toBeGreaterThan(0);
    expect(info!.bytesDown).toBeGreaterThan(0);
  });

  it('delays every chunk: a round trip takes at least the delay', async () => {
    proxy = await TcpProxy.forUrl(testDatabaseUrl());
    const client = await open();
    proxy.setFault({ mode: 'delay', delayMs: 250 });
    const slow = await timed(() => client.query('select 1'));
    proxy.setFault({ mode: 'pass' });
    expect(slow.ms).toBeGreaterThanOrEqual(250);
    const fast = await timed(() => client.query('select 1'));
    expect(fast.ms).toBeLessThan(slow.ms);
  });

  it('adds a steady latency each way and counts one turn per query', async () => {
    proxy = await TcpProxy.forUrl(testDatabaseUrl(), { latencyMs: 20 });
    const client = await open();
    const before = proxy.turns;
    const queries = 5;
    const { ms } = await timed(async () => {
      for (let i = 0; i < queries; i++) await client.query('select 1');
    });
    expect(proxy.turns - before).toBe(queries);
    // Each query waits for the request's hold and the reply's hold.
    expect(ms).toBeGreaterThanOrEqual(queries * 2 * 20);
    expect(proxy.meanHoldMs).toBeGreaterThanOrEqual(20);
  });

  it('rejects a latency outside 0..MAX_LATENCY_MS', async () => {
    await expect(TcpProxy.forUrl(testDatabaseUrl(), { latencyMs: -1 })).rejects.toThrow(RangeError);
    await expect(TcpProxy.forUrl(testDatabaseUrl(), { latencyMs: MAX_LATENCY_MS + 1 })).rejects.toThrow(RangeError);
  });

  it('blackholes: a query on an open connection times out, a new connection never completes', async () => {
    proxy = await TcpProxy.forUrl(testDatabaseUrl());
    const client = await open(500);
    proxy.setFault({ mode: 'blackhole' });
    await expect(client.query('select 1')).rejects.toThrow(/timeout/i);
    await expect(open(500)).rejects.toThrow(/timeout/i);
    expect(proxy.list().filter((c) => c.mode === 'blackhole' && c.open).length).toBeGreaterThanOrEqual(1);
  });

  it('drops: an open connection errors, a new connection is reset', async () => {
    proxy = await TcpProxy.forUrl(testDatabaseUrl());
    const client = await open();
    const query = client.query('select pg_sleep(5)');
    proxy.setFault({ mode: 'drop' });
    await expect(query).rejects.toThrow(/terminated|ECONNRESET|Connection/i);
    await expect(open()).rejects.toThrow(/ECONNRESET|terminated|Connection/i);
    expect(proxy.list()).toHaveLength(0);
  });

  it('faults one connection and leaves the others passing', async () => {
    proxy = await TcpProxy.forUrl(testDatabaseUrl());
    const victim = await open(500);
    const bystander = await open();
    const [victimInfo] = proxy.list();
    proxy.setConnectionFault(victimInfo!.id, { mode: 'blackhole' });
    await expect(victim.query('select 1')).rejects.toThrow(/timeout/i);
    const { rows } = await bystander.query<{ ok: boolean }>('select true as ok');
    expect(rows[0]?.ok).toBe(true);
    expect(() => proxy!.setConnectionFault(999, { mode: 'pass' })).toThrow(/no open proxy connection 999/);
  });

  it('retargets: new connections go to the new server, open ones stay where they are (a DNS name that moved)', async () => {
    const other = await TcpProxy.forUrl(testDatabaseUrl()); // stands for the other node
    try {
      proxy = await TcpProxy.forUrl(testDatabaseUrl());
      const before = await open();
      proxy.retarget('127.0.0.1', other.port);
      expect(proxy.targetAddress).toEqual({ host: '127.0.0.1', port: other.port });
      expect(other.accepted).toBe(0);
      const after = await open();
      expect(other.accepted).toBe(1);
      const [a, b] = await Promise.all([before.query<{ n: number }>('select 1 as n'), after.query<{ n: number }>('select 2 as n')]);
      expect([a.rows[0]?.n, b.rows[0]?.n]).toEqual([1, 2]);
      // The open connection never went through the other node.
      expect(other.accepted).toBe(1);
      expect(proxy.list().filter((c) => c.open)).toHaveLength(2);
    } finally {
      await Promise.all(clients.splice(0).map((c) => c.end().catch(() => {})));
      await other.close();
    }
  });
});
