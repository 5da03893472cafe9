/**
 * What `postpone health` shows with the NOTIFY queue full (issue #26 item 4, README "Failure
 * modes"): on a server of its own with the smallest queue (`max_notify_queue_pages=64`), a session
 * LISTENs on Postpone's channel and stays in an open transaction while 7 kB notifies fill the queue;
 * the built CLI then prints the queue row at 100 % with the warning, and `--json` carries
 * `notifyQueueUsage` 1. After the session ends the queue drains and the row reads below half, without
 * the warning.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { defaultNotifyChannel } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/postpone.js', import.meta.url));
const SCHEMA = 'notify_health';
let server: EmbeddedDatabase;

beforeAll(async () => {
  server = await startEmbeddedPostgres({ postgresFlags: ['-c', 'max_notify_queue_pages=64'] });
  const store = createPgStore({ connectionString: server.url, schema: SCHEMA });
  await store.migrate();
  await store.close();
}, 120_000);
afterAll(() => server?.stop());

function health(args: readonly string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--schema', SCHEMA, ...args, 'health'], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: server.url }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

describe('postpone health with the NOTIFY queue full', () => {
  it('prints the queue row at 100 % with the warning, and below half once the reader is gone', { timeout: 90_000 }, async () => {
    const pinned = new pg.Client({ connectionString: server.url });
    await pinned.connect();
    const filler = new pg.Client({ connectionString: server.url });
    await filler.connect();
    try {
      await pinned.query(`listen ${defaultNotifyChannel(SCHEMA)}`);
      await pinned.query('begin');
      let full = false;
      // Bounded: 2 000 notifies of 7 kB is 14 MB, far above 64 pages of 8 kB.
      for (let i = 0; i < 2_000 && !full; i++) {
        try {
          await filler.query('select pg_notify($1, $2)', ['filler', 'x'.repeat(7_000)]);
        } catch (error) {
          expect((error as { code?: string }).code).toBe('54000');
          full = true;
        }
      }
      expect(full).toBe(true);
      const text = await health();
      expect(text.stderr).toBe('');
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(
        /^notify queue\s+100\.0 % used — past half full: Postpone sends no notices \(workers poll\); a session that LISTENs is not reading$/m,
      );
      const json = await health(['--json']);
      expect((JSON.parse(json.stdout) as { notifyQueueUsage: number }).notifyQueueUsage).toBe(1);
    } finally {
      await pinned.end();
      await filler.end();
    }
    // The queue's tail moves on once the pinning backend has exited (bounded wait: 200 × 50 ms).
    const probe = new pg.Client({ connectionString: server.url });
    await probe.connect();
    try {
      let used = 1;
      for (let i = 0; i < 200 && used >= 0.5; i++) {
        // Until the pinning backend has exited (end() does not wait for it), the queue is still full.
        await probe.query("select pg_notify('filler', 'x')").catch((error: { code?: string }) => expect(error.code).toBe('54000'));
        used = (await probe.query<{ u: number }>('select pg_notification_queue_usage()::float8 as u')).rows[0]?.u ?? 1;
        if (used >= 0.5) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(used).toBeLessThan(0.5);
    } finally {
      await probe.end();
    }
    const after = await health();
    expect(after.stdout).toMatch(/^notify queue\s+\d+\.\d % used$/m);
  });
});
