/**
 * A full notification queue (issue #26 item 4, README "Failure modes", evidence `notify_queue_full`).
 * PostgreSQL keeps one NOTIFY queue per cluster; a listening session that does not read (here: one
 * that sits in an open transaction, as a stopped process or a blocked event loop would) pins its
 * tail, and once it is full every transaction that notifies fails at commit with 54000 "too many
 * notifications in the NOTIFY queue" (PostgreSQL 17 NOTIFY, `max_notify_queue_pages`). Postpone's
 * notices are hints, so its own writes must not fail because of them: the store leaves its notices
 * out while the queue is at least half full, and a write whose notices met a full queue anyway is
 * run again without them; `listen` sends no probe then (it returns the listener unchecked) and a
 * worker's presence notice is left out. Runs on a server of its own with the smallest queue (64 pages of 8 kB).
 */
import { type EmbeddedDatabase, startEmbeddedPostgres } from '@postpone/embedded';
import { recordCase } from '@postpone/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { DRIVERS, type Kit, makeKit } from './support/kits.js';

let server: EmbeddedDatabase;
/** The session that pins the queue: it LISTENs, then stays in an open transaction. */
let pinned: pg.Client;

beforeAll(async () => {
  server = await startEmbeddedPostgres({ postgresFlags: ['-c', 'max_notify_queue_pages=64'] });
}, 60_000);
afterAll(async () => {
  await pinned?.end().catch(() => {});
  await server?.stop();
});

async function usage(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ u: number }>('select pg_notification_queue_usage()::float8 as u');
  return rows[0]?.u ?? -1;
}

/** Fills the queue until a notify fails with 54000; returns the usage then. Bounded: 2 000 notifies of 7 kB is 28 MB. */
async function fill(client: pg.Client): Promise<number> {
  const payload = 'x'.repeat(7_000);
  for (let i = 0; i < 2_000; i++) {
    try {
      await client.query('select pg_notify($1, $2)', ['filler', payload]);
    } catch (error) {
      expect((error as { code?: string }).code).toBe('54000');
      return usage(client);
    }
  }
  throw new Error('the NOTIFY queue did not fill after 2 000 notifies');
}

describe('a full NOTIFY queue', () => {
  const fields: Record<string, number | string | boolean> = {};
  let pass = true;
  afterAll(() => recordCase('notify_queue_full', pass, fields));

  it('pins and fills the queue: a plain notify fails with 54000', async () => {
    pinned = new pg.Client({ connectionString: server.url });
    await pinned.connect();
    await pinned.query('listen postpone_pin');
    await pinned.query('begin');
    const filler = new pg.Client({ connectionString: server.url });
    await filler.connect();
    try {
      const full = await fill(filler);
      fields.queueUsageWhenFull = Number(full.toFixed(3));
      expect(full).toBeGreaterThan(0.9);
    } finally {
      await filler.end();
    }
  });

  describe.each(DRIVERS)('%s', (driver) => {
    let kit: Kit<any>;
    let store: PostgresStore<any>;
    beforeAll(async () => {
      kit = makeKit(driver, server.url);
      store = kit.store({ schema: `notify_full_${driver}` });
      await store.migrate();
    });
    afterAll(async () => {
      await store.close();
      await kit.close();
    });

    it('schedule, scheduleMany, claim, fail (retry), release, snooze, cancel, complete, reclaim, listen and announceWorker all succeed', async () => {
      let failed = 0;
      const ok = async <T>(what: string, op: () => Promise<T>): Promise<T | undefined> => {
        try {
          return await op();
        } catch (error) {
          failed++;
          fields[`${driver}_${what}`] = String((error as { sqlState?: string }).sqlState ?? (error as Error).message);
          return undefined;
        }
      };
      // A waitFor caller present (migration 18's task_waiter): the finish trigger of complete, cancel,
      // fail and reclaim would notify, and must leave its notice out as the statements do.
      await kit.query(`insert into notify_full_${driver}.task_waiter (waiter, until) values ('present', now() + interval '1 hour') on conflict (waiter) do nothing`);
      const one = await ok('schedule', () => store.schedule({ kind: 'k', payload: { n: 1 } }));
      const many = await ok('scheduleMany', () => store.scheduleMany([{ kind: 'k' }, { kind: 'k', key: 'a' }]));
      const claimed = (await ok('claim', () => store.claim({ owner: 'w', limit: 10, leaseMs: 60_000 }))) ?? [];
      const [a, b, c] = claimed;
      if (a) await ok('fail', () => store.fail({ id: a.id, attempt: a.attempt, error: 'boom', backoffMs: 0 }));
      if (b) await ok('release', () => store.release({ id: b.id, attempt: b.attempt }));
      if (c) await ok('complete', () => store.complete({ id: c.id, attempt: c.attempt, owner: 'w' }));
      if (c) fields[`${driver}_waitForDone`] = String((await ok('waitFor', () => store.waitFor(c.id, { timeoutMs: 10_000 })))?.state);
      const later = await ok('scheduleLater', () => store.schedule({ kind: 'k', delayMs: 60_000 }));
      const cancelled = later ? await ok('cancel', () => store.cancel(later.id)) : undefined;
      const retried = (await ok('claimAgain', () => store.claim({ owner: 'w', limit: 10, leaseMs: 1 }))) ?? [];
      const snoozeTarget = retried[0];
      if (snoozeTarget) await ok('snooze', () => store.snooze({ id: snoozeTarget.id, attempt: snoozeTarget.attempt, delayMs: 0 }));
      await new Promise((resolve) => setTimeout(resolve, 20));
      await ok('reclaim', () => store.reclaimExpired());
      // The notices sent outside a data statement: listen's probe, a worker's presence, coalesced schedule notices.
      const unlisten = await ok('listen', () => store.listen(() => {}));
      await ok('announceWorker', () => store.announceWorker({ worker: 'w', group: 'g', hello: true }));
      await unlisten?.();
      const coalesced = kit.store({ schema: `notify_full_${driver}`, scheduleNotices: 'coalesced' });
      await ok('scheduleCoalesced', () => coalesced.scheduleMany([{ kind: 'k', key: 'c1' }, { kind: 'k', key: 'c2' }]));
      await coalesced.close();
      const health = await store.vacuumHealth();
      fields[`${driver}_healthNotifyQueue`] = Number(health.notifyQueueUsage.toFixed(3));
      expect(health.notifyQueueUsage).toBeGreaterThan(0.9);
      fields[`${driver}_failedCalls`] = failed;
      fields[`${driver}_claimed`] = claimed.length;
      fields[`${driver}_cancel`] = String(cancelled);
      pass &&= failed === 0 && claimed.length === 3 && cancelled === 'CANCELLED' && one !== undefined && many?.length === 2;
      expect(failed).toBe(0);
      expect(claimed).toHaveLength(3);
      expect(cancelled).toBe('CANCELLED');
    });
  });
});
