/**
 * The half-open bound (`guardReplies`, socket.ts) holds for every request, not only the first one
 * written after a reply: a reply that arrived in part before the connection went half-open, and a
 * query that postgres.js pipelined behind one that was answered, are both cut after
 * `replyTimeoutMs` of silence. Before the guard counted requests and ReadyForQuery messages, any
 * byte read disarmed it until the next write, and the first calls below waited forever; a first
 * version that counted only ReadyForQuery missed the describe of a new statement (Flush, no Sync).
 */
import { Socket } from 'node:net';
import pg from 'pg';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { TcpProxy } from '@postpone/testkit';
import { replyGuardedSocket } from '../src/drivers/postgres-js.js';
import { guardReplies, REPLY_TIMEOUT_CODE } from '../src/drivers/socket.js';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { waitFor } from './support/kits.js';

const REPLY_TIMEOUT_MS = 800;
/** Far past the bound: a call still pending then is the hang this file guards against. */
const HANG_MS = 8_000;

type Outcome = { readonly settled: 'resolved' | 'rejected' | 'pending'; readonly error?: unknown; readonly elapsedMs: number };

async function outcome(call: Promise<unknown>, startedAt: number): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve({ settled: 'pending', elapsedMs: performance.now() - startedAt }), HANG_MS);
  });
  const settled = call.then(
    () => ({ settled: 'resolved' as const, elapsedMs: performance.now() - startedAt }),
    (error: unknown) => ({ settled: 'rejected' as const, error, elapsedMs: performance.now() - startedAt }),
  );
  try {
    return await Promise.race([settled, pending]);
  } finally {
    clearTimeout(timer);
  }
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** A proxy to the test database (closed after the test) and a URL through it. */
async function proxied(): Promise<{ proxy: TcpProxy; url: string }> {
  const proxy = await TcpProxy.forUrl(testDatabaseUrl());
  cleanups.push(async () => proxy.close());
  return { proxy, url: proxy.rewrite(testDatabaseUrl()) };
}

/** A pg client on `url` over a reply-guarded socket, connected. */
async function guardedPgClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, stream: () => guardReplies(new Socket(), REPLY_TIMEOUT_MS) });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** A postgres.js sql with one connection on `url` over a reply-guarded socket (ended after the test unless `ownEnd`). */
function guardedSql(url: string, ownEnd = false): postgres.Sql {
  // `socket` is read by postgres.js 3.4.9 but missing from its types: passed as a variable, not a literal.
  const options = { max: 1, fetch_types: false, socket: replyGuardedSocket(REPLY_TIMEOUT_MS), onnotice: () => undefined };
  const sql = postgres(url, options);
  if (!ownEnd) cleanups.push(async () => sql.end({ timeout: 1 }));
  return sql;
}

describe('guardReplies: every unanswered request is bounded', () => {
  it('pg: a reply cut half-open after its first bytes arrived is bounded (a large row, then the server sleeps)', async () => {
    const { proxy, url } = await proxied();
    const client = await guardedPgClient(url);
    cleanups.push(async () => void (await client.end()));
    expect((await client.query('select 1 as one')).rows).toEqual([{ one: 1 }]);

    // Row 1 (200 kB) is flushed while it is sent; row 2 comes only after a 3 s sleep.
    const startedAt = performance.now();
    const call = client.query("select case when x = 1 then repeat('x', 200000) else pg_sleep(3)::text end as v from generate_series(1, 2) x");
    const connection = () => proxy.list()[0];
    await waitFor(() => (connection()?.bytesDown ?? 0) > 100_000, 'the first row reaching the client', 5_000);
    proxy.setFault({ mode: 'blackhole' });
    const result = await outcome(call, startedAt);

    expect(result.settled).toBe('rejected');
    expect(`${(result.error as Error).message}`).toMatch(/terminated|half-open|REPLY_TIMEOUT|closed/i);
    // Cut after replyTimeoutMs of silence, long before the sleep would have ended the statement.
    expect(result.elapsedMs).toBeLessThan(3_000 + REPLY_TIMEOUT_MS);
  }, 20_000);

  it('postgres.js: a query pipelined behind an answered one on the same connection is bounded', async () => {
    const { proxy, url } = await proxied();
    const sql = guardedSql(url);
    // Prepared once, so the two calls below need no Describe round trip before they are written.
    expect(await sql`select pg_sleep(${0.01}) as slept`).toEqual([{ slept: '' }]);

    const startedAt = performance.now();
    // postgres.js sends a query once it is awaited: start both now, so both go out before the first answer.
    const first = outcome(sql`select pg_sleep(${0.3}) as slept`, startedAt);
    const second = outcome(sql`select pg_sleep(${1.5}) as slept`, startedAt);
    expect((await first).settled).toBe('resolved');
    proxy.setFault({ mode: 'blackhole' });
    const result = await second;

    expect(result.settled).toBe('rejected');
    expect(String((result.error as { code?: unknown }).code ?? (result.error as Error).message)).toMatch(new RegExp(`${REPLY_TIMEOUT_CODE}|CONNECTION|ECONN`, 'i'));
    expect(result.elapsedMs).toBeLessThan(300 + 1_500 + 2 * REPLY_TIMEOUT_MS + 1_000);
  }, 20_000);

  it("postgres.js: a new statement's describe (Parse + Describe + Flush, no Sync) cut half-open is bounded", async () => {
    const { proxy, url } = await proxied();
    const sql = guardedSql(url);
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);

    // Held by the proxy, then swallowed: the describe of a statement this connection has not prepared.
    proxy.setFault({ mode: 'delay', delayMs: 60_000 });
    const startedAt = performance.now();
    const call = outcome(sql`select ${7}::int as seven`, startedAt);
    await new Promise((resolve) => setTimeout(resolve, 150));
    proxy.setFault({ mode: 'blackhole' });
    const result = await call;

    expect(result.settled).toBe('rejected');
    expect(result.elapsedMs).toBeLessThan(150 + REPLY_TIMEOUT_MS + 1_000);
  }, 20_000);

  it('pg: ending a client whose connection went half-open finishes (the Terminate is watched as a request)', async () => {
    const { proxy, url } = await proxied();
    const client = await guardedPgClient(url);
    expect((await client.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    proxy.setFault({ mode: 'blackhole' });
    const result = await outcome(client.end(), performance.now());
    expect(result.settled).not.toBe('pending');
    expect(result.elapsedMs).toBeLessThan(REPLY_TIMEOUT_MS + 1_000);
  }, 20_000);

  it('postgres.js: sql.end() over a half-open connection finishes (the Terminate is watched as a request)', async () => {
    const { proxy, url } = await proxied();
    const sql = guardedSql(url, true);
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
    proxy.setFault({ mode: 'blackhole' });
    const result = await outcome(sql.end(), performance.now());
    expect(result.settled).not.toBe('pending');
    expect(result.elapsedMs).toBeLessThan(REPLY_TIMEOUT_MS + 1_000);
  }, 20_000);

  it('an idle connection is never cut, and a LISTEN connection between notifications stays open', async () => {
    const client = await guardedPgClient(testDatabaseUrl());
    cleanups.push(async () => void (await client.end()));
    await client.query('listen reply_guard_idle');
    await new Promise((resolve) => setTimeout(resolve, 3 * REPLY_TIMEOUT_MS));
    expect((await client.query('select 2 as two')).rows).toEqual([{ two: 2 }]);
  }, 20_000);
});
