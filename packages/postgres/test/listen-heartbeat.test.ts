/**
 * A half-open LISTEN connection (the proxy swallows bytes both ways, no FIN, no RST) is noticed by
 * the pg listener's heartbeat within 2 × LISTEN_HEARTBEAT_MS, dropped, and LISTEN starts again
 * (`onReconnect`), after which notices arrive again (issue 12, half_open_connections).
 *
 * The heartbeat is sent after a period in which the connection heard nothing, and at least every
 * MAX_PERIODS_WITHOUT_PROBE periods: notices arriving more often than LISTEN_HEARTBEAT_MS hold it
 * back that long (issue 24: an idle hybrid worker's statements), never longer (a notice proves the
 * connection alive, not its server writable), and silence brings it back.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TcpProxy } from '@postpone/testkit';
import { createPgStore, LISTEN_HEARTBEAT_MS } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';
import { MAX_PERIODS_WITHOUT_PROBE } from '../src/drivers/listen-heartbeat.js';
import { Admin, makeKit, waitFor } from './support/kits.js';

const admin = Admin.create('listenbeat');

beforeAll(async () => {
  const kit = makeKit('pg');
  await kit.store({ schema: admin.schema }).migrate();
  await kit.close();
});
afterAll(async () => {
  await admin.drop();
});

it('pg: a half-open LISTEN connection is dropped by the heartbeat and LISTEN starts again; unlisten does not hang', async () => {
  const kit = makeKit('pg');
  const proxy = await TcpProxy.forUrl(kit.url);
  const store = createPgStore({ schema: admin.schema, connectionString: kit.url, listenConnectionString: proxy.rewrite(kit.url), replyTimeoutMs: 1_000 });
  try {
    const seen: string[] = [];
    let reconnects = 0;
    const unlisten = await store.listen((n) => seen.push(n.id), { onReconnect: () => (reconnects += 1) });
    const before = await store.schedule({ kind: 'beat', delayMs: 20_000 });
    await waitFor(() => seen.includes(before.id), 'notice before the fault');
    const open = proxy.list().filter((c) => c.open);
    expect(open.length).toBeGreaterThan(0);
    for (const c of open) proxy.setConnectionFault(c.id, { mode: 'blackhole' });
    await waitFor(() => reconnects >= 1, 'listen again after the half-open connection', 2 * LISTEN_HEARTBEAT_MS + 5_000);
    const after = await store.schedule({ kind: 'beat', delayMs: 20_000 });
    await waitFor(() => seen.includes(after.id), 'notice after the reconnect');
    await unlisten();
  } finally {
    await store.close();
    await proxy.close();
    await kit.close();
  }
}, 40_000);

it.each(['pg', 'postgres'] as const)('%s: a listening connection that hears notices sends the heartbeat only every MAX_PERIODS_WITHOUT_PROBE periods; silence brings it back sooner', async (driver) => {
  const kit = makeKit(driver);
  const proxy = await TcpProxy.forUrl(kit.url);
  const options = { schema: admin.schema, listenConnectionString: proxy.rewrite(kit.url) };
  const store = driver === 'pg' ? createPgStore({ ...options, connectionString: kit.url }) : createPostgresJsStore({ ...options, connectionString: kit.url });
  try {
    const seen: string[] = [];
    const unlisten = await store.listen((n) => seen.push(n.id));
    // The connection's own start (read-only probe, LISTEN) is done once a notice comes through.
    const first = await store.schedule({ kind: 'beat', delayMs: 20_000 });
    await waitFor(() => seen.includes(first.id), 'first notice');
    const turnsAtStart = proxy.turns;
    const talkingSince = performance.now();
    // Talking: a notice every 500 ms. The old heartbeat (every period) would have sent one within
    // 1.5 periods; now none is sent then, and one is sent by MAX_PERIODS_WITHOUT_PROBE periods even
    // while notices keep arriving (a notice does not prove the server writable: a fenced old primary
    // still delivers a pg_notify that wrote nothing).
    let notices = 0;
    let turnsAtOneAndAHalf: number | undefined;
    const talkUntil = talkingSince + (MAX_PERIODS_WITHOUT_PROBE + 1) * LISTEN_HEARTBEAT_MS;
    for (let i = 0; i < 80 && performance.now() < talkUntil && proxy.turns === turnsAtStart; i++) {
      const task = await store.schedule({ kind: 'beat', delayMs: 20_000 });
      await waitFor(() => seen.includes(task.id), 'notice while talking');
      notices += 1;
      await new Promise((resolve) => setTimeout(resolve, 500));
      if (turnsAtOneAndAHalf === undefined && performance.now() - talkingSince >= 1.5 * LISTEN_HEARTBEAT_MS) turnsAtOneAndAHalf = proxy.turns;
    }
    expect(notices).toBeGreaterThanOrEqual(5);
    expect(turnsAtOneAndAHalf).toBe(turnsAtStart);
    expect(proxy.turns - turnsAtStart).toBe(1);
    const turnsAfterForced = proxy.turns;
    // Silence: the heartbeat comes back within a period of the last notice (and its answer keeps the connection).
    await waitFor(() => proxy.turns > turnsAfterForced, 'a heartbeat after a silent period', 2 * LISTEN_HEARTBEAT_MS + 5_000);
    const last = await store.schedule({ kind: 'beat', delayMs: 20_000 });
    await waitFor(() => seen.includes(last.id), 'notice after the heartbeat');
    await unlisten();
  } finally {
    await store.close();
    await proxy.close();
    await kit.close();
  }
}, 90_000);
