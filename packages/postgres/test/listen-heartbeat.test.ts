/**
 * A half-open LISTEN connection (the proxy swallows bytes both ways, no FIN, no RST) is noticed by
 * the pg listener's heartbeat within 2 × LISTEN_HEARTBEAT_MS, dropped, and LISTEN starts again
 * (`onReconnect`), after which notices arrive again (issue 12, half_open_connections).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TcpProxy } from '@postpone/testkit';
import { createPgStore, LISTEN_HEARTBEAT_MS } from '../src/drivers/pg.js';
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
