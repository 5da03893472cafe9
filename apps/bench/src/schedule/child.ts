/**
 * One process of the scheduling-throughput run (forked by `./measure.ts`), its role and settings in
 * `argv[2]` as JSON. A producer calls `schedule` one task at a time (autocommit) until its time is up;
 * a worker is a hybrid Postpone worker that claims the probe tasks and reports their lateness
 * (claimed at − due at, both on the database clock).
 */
import { overrideStore } from '@postpone/core';
import { createPgStore } from '@postpone/postgres/pg';
import { createWorker } from '@postpone/worker';
import type { ChildMessage, ChildSettings, ParentMessage } from './messages.js';

const settings = JSON.parse(process.argv[2] ?? '{}') as ChildSettings;

function send(message: ChildMessage): void {
  process.send?.(message);
}

function onParent(handler: (message: ParentMessage) => void): void {
  process.on('message', (m) => handler(m as ParentMessage));
}

async function producer(): Promise<void> {
  const store = createPgStore({ connectionString: settings.url, schema: settings.schema, scheduleNotices: settings.notices, poolConfig: { max: 2 } });
  onParent(async (message) => {
    if (message.type !== 'go') return;
    const end = performance.now() + settings.durationMs;
    let scheduled = 0;
    let probes = 0;
    while (performance.now() < end) {
      if (scheduled % settings.probeEvery === 0) {
        await store.schedule({ kind: 'probe', delayMs: settings.probeDelayMs + Math.floor(Math.random() * settings.probeSpreadMs) });
        probes += 1;
      } else {
        await store.schedule({ kind: 'bulk', delayMs: settings.bulkDelayMs });
      }
      scheduled += 1;
    }
    await store.notices.idle();
    send({ type: 'produced', scheduled, probes, notifies: store.notices.sent });
    await store.close();
    process.exit(0);
  });
  send({ type: 'ready' });
}

async function worker(): Promise<void> {
  const store = createPgStore({ connectionString: settings.url, schema: settings.schema });
  let claims = 0;
  let emptyClaims = 0;
  const counted = overrideStore(store, {
    claim: async (params) => {
      const tasks = await store.claim(params);
      claims += 1;
      if (tasks.length === 0) emptyClaims += 1;
      return tasks;
    },
  });
  const lateness: number[] = [];
  const w = createWorker({ store: counted, discovery: 'hybrid', concurrency: 20, handlers: { probe: async () => 'ok' } });
  w.on('claimed', ({ task }) => lateness.push(task.claimedAt.getTime() - task.dueAt.getTime()));
  onParent(async (message) => {
    if (message.type !== 'stop') return;
    await w.stop({ timeoutMs: 2_000 });
    send({ type: 'claimed', lateness, claims, emptyClaims, peers: w.discovery.peers });
    await store.close();
    process.exit(0);
  });
  w.start();
  for (let i = 0; i < 500 && !(w.discovery.listening && w.discovery.rebuilds.start > 0); i++) await new Promise((r) => setTimeout(r, 10));
  send({ type: 'ready' });
}

await (settings.role === 'producer' ? producer() : worker());
