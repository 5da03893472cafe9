// One process of the batch lock-order run (test/batch-deadlock.test.ts, evidence `batch_deadlock`):
// waits for "go" on stdin, then for `durationMs` (and at most `maxRounds` rounds) either schedules
// batches of keyed tasks in a shuffled key order (`schedule`), claims, renews and completes batches
// listed in a shuffled id order (`work`), or cancels by key prefix (`cancel`, `cancelMany`), and
// prints one JSON line: rounds, items, and errors by code.
// Plain JavaScript against the built package (self-reference through its "exports"), so node runs it as is.
import { createInterface } from 'node:readline';

const [role, driver, url, schema, seedText, durationText, maxRoundsText] = process.argv.slice(2);
const KIND = 'batch-lock';
const KEYS = 48;
const BATCH = 16;
let seed = Number(seedText);
/** mulberry32: a seeded draw, so a run can be repeated. */
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
};
const shuffled = (items) => {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
};
const store =
  driver === 'pg'
    ? (await import('@postpone/postgres/pg')).createPgStore({ connectionString: url, schema, poolConfig: { max: 4 } })
    : (await import('@postpone/postgres/postgres-js')).createPostgresJsStore({ connectionString: url, schema, connectionOptions: { max: 4 } });
await store.now(); // connect before the start signal
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line === 'go') break;

const errors = {};
const counted = async (op) => {
  try {
    return await op();
  } catch (error) {
    const code = error?.sqlState ?? error?.code ?? error?.name ?? 'unknown';
    errors[code] = (errors[code] ?? 0) + 1;
    return undefined;
  }
};
const owner = `${role}-${process.pid}`;
const deadline = Date.now() + Number(durationText);
let rounds = 0;
let items = 0;
for (; rounds < Number(maxRoundsText) && Date.now() < deadline; rounds++) {
  if (role === 'schedule') {
    const keys = shuffled(Array.from({ length: KEYS }, (_, i) => `k${i}`)).slice(0, BATCH);
    const onConflict = rounds % 2 === 0 ? 'keep' : 'replace';
    const done = await counted(() => store.scheduleMany(keys.map((key) => ({ kind: KIND, key, payload: { round: rounds } })), { onConflict }));
    items += done?.length ?? 0;
  } else if (role === 'cancel') {
    // Tasks whose key starts with k0..k4 (k0, k00…: a tenth of the keys each), SCHEDULED or CLAIMED, in batches of 8.
    const done = await counted(() => store.cancelMany({ kinds: [KIND], keyPrefix: `k${Math.floor(random() * 5)}` }, { batchSize: 8 }));
    items += (done?.counts.CANCELLED ?? 0) + (done?.counts.REQUESTED ?? 0);
  } else {
    const claimed = (await counted(() => store.claim({ owner, limit: BATCH, leaseMs: 30_000, kinds: [KIND] }))) ?? [];
    if (claimed.length === 0) continue;
    const held = claimed.map((c) => ({ id: c.id, attempt: c.attempt }));
    await counted(() => store.extendMany({ items: shuffled(held), leaseMs: 30_000 }));
    const outcomes = await counted(() => store.completeMany(shuffled(held).map((h) => ({ ...h, owner }))));
    items += outcomes?.filter((o) => o === 'DONE').length ?? 0;
  }
}
await store.close();
process.stdout.write(`${JSON.stringify({ role, driver, rounds, items, errors })}\n`);
lines.close();
