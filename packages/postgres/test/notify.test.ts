/**
 * LISTEN/NOTIFY: a committed schedule is announced on the store's channel (a rolled-back one never
 * is), cancel of a waiting task too, and the listener survives a lost connection.
 */
import { TestClock } from '@postpone/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore, TaskNotice } from '../src/index.js';
import { DRIVERS, makeKit, migratedSchema, waitFor } from './support/kits.js';

const admin = migratedSchema('notify');

describe.each(DRIVERS)('notifications (%s)', (driver) => {
  const kit = makeKit(driver);
  const clock = new TestClock();
  const channel = `${admin.schema}_${driver}`;
  const notices: TaskNotice[] = [];
  let reconnects = 0;
  let store: PostgresStore<any>;
  let unlisten: () => Promise<void>;

  beforeAll(async () => {
    store = kit.store({ schema: admin.schema, clock, notifyChannel: channel });
    unlisten = await store.listen((n) => notices.push(n), { onReconnect: () => reconnects++ });
  });
  afterAll(async () => {
    await unlisten();
    await unlisten(); // idempotent
    await store.close();
    await kit.close();
    await admin.truncate();
  });

  const noticeFor = (id: string, op: TaskNotice['op']) => notices.find((n) => n.id === id && n.op === op);

  it('schedule → a `scheduled` notice with the id and due time; a rolled-back schedule is never announced', async () => {
    let rolledBack = '';
    await kit.inTransaction(async (tx) => {
      rolledBack = (await store.schedule({ kind: 'k', delayMs: 10 }, { tx })).id;
    }, 'rollback');
    const { id, dueAt } = await store.schedule({ kind: 'k', delayMs: 1_500 });
    await waitFor(() => noticeFor(id, 'scheduled') !== undefined, 'the scheduled notice');
    expect(noticeFor(id, 'scheduled')?.dueAt).toEqual(dueAt);
    expect(dueAt.getTime()).toBe(clock.now() + 1_500);
    // Notifications arrive in commit order: the later commit came, so the rolled-back one never will.
    expect(notices.some((n) => n.id === rolledBack)).toBe(false);
  });

  it('scheduleMany announces every task; cancel of a waiting task → `cancelled`; fail with attempts left → `scheduled` again', async () => {
    const many = await store.scheduleMany([{ kind: 'a' }, { kind: 'b', delayMs: 60_000 }, { kind: 'c', delayMs: 5 }]);
    await waitFor(() => many.every((s) => noticeFor(s.id, 'scheduled') !== undefined), 'three scheduled notices');
    const waiting = many[1]?.id as string;
    expect(await store.cancel(waiting)).toBe('CANCELLED');
    await waitFor(() => noticeFor(waiting, 'cancelled') !== undefined, 'the cancelled notice');

    const first = many[0]?.id as string;
    const [claimed] = await store.claim({ owner: 'w', limit: 1, leaseMs: 1_000 });
    expect(claimed?.id).toBe(first);
    const before = notices.filter((n) => n.id === first).length;
    const failed = await store.fail({ id: first, attempt: 1, error: 'e', backoffMs: 250 });
    expect(failed).toEqual({ outcome: 'SCHEDULED', dueAt: new Date(clock.now() + 250) });
    await waitFor(() => notices.filter((n) => n.id === first).length === before + 1, 'the re-scheduled notice');
    expect(notices.filter((n) => n.id === first).at(-1)).toEqual({ op: 'scheduled', id: first, dueAt: new Date(clock.now() + 250) });
  });

  it('snooze → a `scheduled` notice at the new due time (timing wheels place it); a final fail (DEAD) announces nothing', async () => {
    const { id } = await store.schedule({ kind: 'snoozy' });
    await waitFor(() => noticeFor(id, 'scheduled') !== undefined, 'the scheduled notice');
    const claimed = (await store.claim({ owner: 'w', limit: 10, leaseMs: 60_000 })).find((t) => t.id === id);
    expect(claimed?.attempt).toBe(1);
    const before = notices.filter((n) => n.id === id).length;
    expect(await store.snooze({ id, attempt: 1, delayMs: 7_000 })).toEqual({ outcome: 'SCHEDULED', dueAt: new Date(clock.now() + 7_000) });
    await waitFor(() => notices.filter((n) => n.id === id).length === before + 1, 'the snoozed notice');
    expect(notices.filter((n) => n.id === id).at(-1)).toEqual({ op: 'scheduled', id, dueAt: new Date(clock.now() + 7_000) });

    const dead = await store.schedule({ kind: 'final' });
    await waitFor(() => noticeFor(dead.id, 'scheduled') !== undefined, 'the scheduled notice of the final task');
    expect((await store.claim({ owner: 'w', limit: 10, leaseMs: 60_000 })).map((t) => t.id)).toContain(dead.id);
    expect(await store.fail({ id: dead.id, attempt: 1, error: 'final', backoffMs: 0, retryable: false })).toEqual({ outcome: 'DEAD' });
    // A later schedule's notice arrives after any the DEAD fail could have sent (commit order): none came.
    const marker = await store.schedule({ kind: 'marker', delayMs: 20_000 });
    await waitFor(() => noticeFor(marker.id, 'scheduled') !== undefined, 'the marker notice');
    expect(notices.filter((n) => n.id === dead.id)).toHaveLength(1);
  });

  it('cancel of a running task (REQUESTED) → a `cancelRequested` notice, so its worker can abort the handler', async () => {
    const { id } = await store.schedule({ kind: 'running' });
    const claimed = await store.claim({ owner: 'w', limit: 10, leaseMs: 60_000 });
    expect(claimed.map((t) => t.id)).toContain(id);
    expect(await store.cancel(id)).toBe('REQUESTED');
    await waitFor(() => noticeFor(id, 'cancelRequested') !== undefined, 'the cancelRequested notice');
    expect(await store.cancel(id)).toBe('REQUESTED'); // repeated: announced again, harmless
  });

  it("coalesced notices: 40 concurrent autocommit schedules are all announced by fewer NOTIFYs; a tx schedule is announced at commit; 'off' announces none", async () => {
    const producer = kit.store({ schema: admin.schema, clock, notifyChannel: channel, scheduleNotices: 'coalesced' });
    const sentBefore = producer.notices.sent;
    const many = await Promise.all(Array.from({ length: 40 }, (_, i) => producer.schedule({ kind: 'burst', delayMs: 20_000 + i })));
    await waitFor(() => many.every((t) => noticeFor(t.id, 'scheduled') !== undefined), 'forty scheduled notices');
    for (const t of many) expect(noticeFor(t.id, 'scheduled')?.dueAt).toEqual(t.dueAt);
    await producer.notices.idle();
    const sent = producer.notices.sent - sentBefore;
    expect(sent).toBeGreaterThanOrEqual(1);
    expect(sent).toBeLessThan(40);
    // In the caller's transaction the statement's own NOTIFY is used: nothing before the commit.
    let inTx = '';
    await kit.inTransaction(async (tx) => {
      inTx = (await producer.schedule({ kind: 'in-tx', delayMs: 20_000 }, { tx })).id;
      await producer.notices.idle();
      const marker = await producer.schedule({ kind: 'marker', delayMs: 20_000 });
      await waitFor(() => noticeFor(marker.id, 'scheduled') !== undefined, 'the marker notice');
      expect(noticeFor(inTx, 'scheduled')).toBeUndefined();
    }, 'commit');
    await waitFor(() => noticeFor(inTx, 'scheduled') !== undefined, 'the notice at commit');
    // A task due beyond 30 s is left to the workers' periodic re-read: no NOTIFY of its own.
    const sentBeforeFar = producer.notices.sent;
    const far = await producer.schedule({ kind: 'far', delayMs: 30_001 });
    await producer.notices.idle();
    expect(producer.notices.sent).toBe(sentBeforeFar);
    const farMarker = await producer.schedule({ kind: 'marker', delayMs: 1_000 });
    await waitFor(() => noticeFor(farMarker.id, 'scheduled') !== undefined, 'the marker notice');
    expect(noticeFor(far.id, 'scheduled')).toBeUndefined();
    await producer.close();
    expect(store.notices.sent).toBe(0); // the default, 'near': the statement notifies
    const quiet = kit.store({ schema: admin.schema, clock, notifyChannel: channel, scheduleNotices: 'off' });
    try {
      const silent = await quiet.schedule({ kind: 'silent', delayMs: 60_000 });
      const marker = await store.schedule({ kind: 'marker', delayMs: 20_000 });
      await waitFor(() => noticeFor(marker.id, 'scheduled') !== undefined, 'the marker notice');
      expect(noticeFor(silent.id, 'scheduled')).toBeUndefined();
      expect(quiet.notices.sent).toBe(0);
    } finally {
      await quiet.close();
    }
  });

  it("scheduleNotices 'near' (the default): a task due within 30 s is announced, one due later is not; 'each' announces both", async () => {
    const near = kit.store({ schema: admin.schema, clock, notifyChannel: channel });
    const each = kit.store({ schema: admin.schema, clock, notifyChannel: channel, scheduleNotices: 'each' });
    try {
      const eachFar = await each.schedule({ kind: 'far', delayMs: 30_001 });
      await waitFor(() => noticeFor(eachFar.id, 'scheduled') !== undefined, "the far notice of 'each'");
      const later = await near.schedule({ kind: 'far', delayMs: 30_001 });
      const soon = await near.schedule({ kind: 'near', delayMs: 30_000 });
      const at = await near.schedule({ kind: 'near-at', runAt: new Date(clock.now() + 1_000) });
      await waitFor(() => noticeFor(soon.id, 'scheduled') !== undefined && noticeFor(at.id, 'scheduled') !== undefined, 'the near notices');
      // Notifications keep commit order: the far one, committed first, would have come before them.
      expect(noticeFor(later.id, 'scheduled')).toBeUndefined();
      expect(() => kit.store({ schema: admin.schema, scheduleNotices: 'sometimes' as 'near' })).toThrow(/scheduleNotices/);
    } finally {
      await each.close();
      await near.close();
    }
  });

  it('announceWorker → every listener with `onWorker` gets the presence notice; task listeners without it see nothing new', async () => {
    const heard: { worker: string; group: string; hello: boolean }[] = [];
    const stop = await store.listen(() => {}, { onWorker: (n) => heard.push(n) });
    try {
      const before = notices.length;
      await store.announceWorker({ worker: 'worker-7', group: 'g1', hello: true });
      await waitFor(() => heard.length === 1, 'the presence notice');
      expect(heard[0]).toEqual({ op: 'worker', worker: 'worker-7', group: 'g1', hello: true });
      expect(notices.length).toBe(before);
      await expect(store.announceWorker({ worker: '', group: 'g1', hello: false })).rejects.toMatchObject({ code: 'INVALID_OPTION', field: 'worker' });
    } finally {
      await stop();
    }
  });

  it('after its connection is terminated the listener reconnects, listens again, and reports it', async () => {
    const pids = async () =>
      (
        await admin.query<{ pid: number }>("select pid from pg_stat_activity where query ilike 'listen %' and query like $1", [`%${channel}%`])
      ).map((r) => r.pid);
    const [pid] = await pids();
    expect(pid).toBeDefined();
    await admin.query('select pg_terminate_backend($1)', [pid]);
    await waitFor(() => reconnects === 1, 'the listener to reconnect', 15_000);
    const [next] = await pids();
    expect(next).toBeDefined();
    expect(next).not.toBe(pid);
    const { id } = await store.schedule({ kind: 'after-reconnect' });
    await waitFor(() => noticeFor(id, 'scheduled') !== undefined, 'a notice after the reconnect');
  });
});
