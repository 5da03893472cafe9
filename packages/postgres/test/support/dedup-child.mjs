// One scheduler process of the dedup race (test/dedup-race.test.ts): waits for "go" on stdin, then
// schedules one (kind, key) `count` times, 8 at a time, and prints the ids it got back as one JSON line.
// Plain JavaScript against the built package (self-reference through its "exports"), so node runs it as is.
import { createInterface } from 'node:readline';

const [driver, url, schema, kind, key, count] = process.argv.slice(2);
const store =
  driver === 'pg'
    ? (await import('@postpone/postgres/pg')).createPgStore({ connectionString: url, schema, poolConfig: { max: 8 } })
    : (await import('@postpone/postgres/postgres-js')).createPostgresJsStore({ connectionString: url, schema, connectionOptions: { max: 8 } });
await store.now(); // connect before the start signal
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line === 'go') break;
const results = [];
let next = 0;
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (next < Number(count)) {
      next += 1;
      results.push(await store.schedule({ kind, key, payload: { pid: process.pid } }));
    }
  }),
);
await store.close();
const ids = [...new Set(results.map((r) => r.id))];
process.stdout.write(`${JSON.stringify({ calls: results.length, ids, created: results.filter((r) => r.created).length })}\n`);
lines.close();
