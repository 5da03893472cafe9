/**
 * Store operations: listTasks (filters, keyset pages), retry of DEAD / CANCELLED tasks, prune of
 * history, stats of live tasks. Same outcomes and the same ValidationErrors on every store.
 */
import { CompleteOutcome, type Store, type TaskId, type TaskRecord } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, expectValidationError, mustGetTask, scheduleAndClaim } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';
import { makeTerminal } from '../kit/fixtures.js';

/** A DEAD task of `kind` with `payload` and lastError 'boom'. */
async function makeDead(store: Store<any>, kind = 'dead-job', payload: unknown = { n: 1 }, maxAttempts = 1): Promise<TaskId> {
  const { id } = await store.schedule({ kind, payload, maxAttempts });
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const c = await claimExactly(store, id);
    const expected = attempt === maxAttempts ? { outcome: 'DEAD' } : { outcome: 'SCHEDULED', dueAt: expect.any(Date) };
    expect(await store.fail({ id, attempt: c.attempt, error: 'boom', backoffMs: 0 })).toEqual(expected);
  }
  return id;
}

/** Every page of a listing, following nextCursor (at most 100 pages). */
async function allPages(store: Store<any>, params: Parameters<Store['listTasks']>[0]): Promise<{ ids: TaskId[]; pages: number[] }> {
  const ids: TaskId[] = [];
  const pages: number[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const page = await store.listTasks({ ...params, cursor });
    ids.push(...page.tasks.map((t) => t.id));
    pages.push(page.tasks.length);
    cursor = page.nextCursor;
    if (cursor === null) return { ids, pages };
  }
  throw new Error('listing did not end within 100 pages');
}

async function record(store: Store<any>, id: TaskId): Promise<TaskRecord> {
  const page = await store.listTasks({ limit: 1000 });
  const found = page.tasks.find((t) => t.id === id);
  expect(found, `task ${id} in the listing`).toBeDefined();
  return found as TaskRecord;
}

/** Ids in numeric order, exactly (BigInt: `Number` would tie ids past 2⁵³). */
const byNum = (a: TaskId, b: TaskId) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);

export function adminCases(h: HarnessRef): void {
  describe('listTasks', () => {
    it('filters by state, kind, due range and lastError; newest or oldest first', async () => {
      const { store, clock } = h();
      const t0 = clock.now();
      const a1 = await store.schedule({ kind: 'a', delayMs: 1_000 });
      const b1 = await store.schedule({ kind: 'b', delayMs: 5_000 });
      const dead = await makeDead(store, 'b');
      const done = (await makeTerminal(store, 'DONE')).id;
      const running = (await scheduleAndClaim(store, { kind: 'a' })).id;
      const cancelled = (await makeTerminal(store, 'CANCELLED_WAITING')).id;
      const all = [a1.id, b1.id, dead, done, running, cancelled].sort(byNum);

      const newest = await store.listTasks();
      expect(newest.tasks.map((t) => t.id)).toEqual([...all].reverse());
      expect(newest.nextCursor).toBeNull();
      expect((await store.listTasks({ order: 'oldest' })).tasks.map((t) => t.id)).toEqual(all);

      const ids = async (params: Parameters<Store['listTasks']>[0]) => (await store.listTasks({ order: 'oldest', ...params })).tasks.map((t) => t.id);
      expect(await ids({ states: ['SCHEDULED'] })).toEqual([a1.id, b1.id]);
      expect(await ids({ states: ['DEAD', 'CANCELLED'] })).toEqual([dead, cancelled].sort(byNum));
      expect(await ids({ kinds: ['a'] })).toEqual([a1.id, running]);
      expect(await ids({ kinds: ['b'], states: ['SCHEDULED'] })).toEqual([b1.id]);
      expect(await ids({ hasError: true })).toEqual([dead]);
      expect(await ids({ hasError: false })).toEqual(all.filter((id) => id !== dead));
      expect(await ids({ dueFrom: new Date(t0 + 1_000), dueBefore: new Date(t0 + 5_000) })).toEqual([a1.id]);
      expect(await ids({ dueFrom: new Date(t0 + 1_000) })).toEqual([a1.id, b1.id, cancelled]); // the cancelled one was due in 60 s
      expect(await ids({ kinds: ['nope'] })).toEqual([]);

      const row = (await store.listTasks({ states: ['DEAD'] })).tasks[0] as TaskRecord;
      expect(row).toEqual({ ...(await mustGetTask(store, dead)), retryOf: null, retriedAs: null });
      expect(row.lastError).toBe('boom');
    });

    it('filters by queue, alone and with the other filters, live and finished tasks, every page', async () => {
      const { store } = h();
      const done = await store.schedule({ kind: 'q', queue: 'billing' });
      const [claimed] = await store.claim({ owner: 'w', limit: 1, leaseMs: 60_000, queue: 'billing' });
      expect(claimed?.id).toBe(done.id);
      expect(await store.complete({ id: done.id, attempt: 1, owner: 'w' })).toBe(CompleteOutcome.DONE);
      const inDefault = await store.schedule({ kind: 'q' });
      const billing = (await store.scheduleMany(Array.from({ length: 3 }, (_, i) => ({ kind: i === 2 ? 'other' : 'q', queue: 'billing', priority: i })))).map((s) => s.id);
      const reports = await store.schedule({ kind: 'q', queue: 'reports' });

      const ids = async (params: Parameters<Store['listTasks']>[0]) => (await store.listTasks({ order: 'oldest', ...params })).tasks.map((t) => t.id);
      expect(await ids({ queue: 'billing' })).toEqual([done.id, ...billing]);
      expect(await ids({ queue: 'default' })).toEqual([inDefault.id]);
      expect(await ids({ queue: 'reports' })).toEqual([reports.id]);
      expect(await ids({ queue: 'nope' })).toEqual([]);
      expect(await ids({ queue: 'billing', states: ['DONE'] })).toEqual([done.id]);
      expect(await ids({ queue: 'billing', kinds: ['q'], states: ['SCHEDULED'] })).toEqual(billing.slice(0, 2));
      expect(await ids({ queue: 'billing', kinds: ['q', 'other'] })).toEqual([done.id, ...billing]);
      expect(await ids({ queue: 'reports', kinds: ['other'] })).toEqual([]);
      expect((await store.listTasks({ queue: 'billing', states: ['SCHEDULED'] })).tasks.map((t) => [t.queue, t.priority])).toEqual([
        ['billing', 2],
        ['billing', 1],
        ['billing', 0],
      ]);
      expect(await allPages(store, { queue: 'billing', limit: 1 })).toEqual({ ids: [done.id, ...billing].reverse(), pages: [1, 1, 1, 1] });
      await expectValidationError(() => store.listTasks({ queue: '' }), 'INVALID_QUEUE', 'queue');
      await expectValidationError(() => store.listTasks({ queue: 7 as never }), 'INVALID_QUEUE', 'queue');
    });

    it('pages by keyset: every task once, in order, pages of `limit`, stable when newer tasks arrive', async () => {
      const { store } = h();
      const ids = (await store.scheduleMany(Array.from({ length: 7 }, (_, i) => ({ kind: `k${i % 2}`, payload: i })))).map((s) => s.id);
      const oldest = await allPages(store, { order: 'oldest', limit: 3 });
      expect(oldest).toEqual({ ids, pages: [3, 3, 1] });
      const k0 = await allPages(store, { kinds: ['k0'], limit: 2 });
      expect(k0.ids).toEqual(ids.filter((_, i) => i % 2 === 0).reverse());
      expect(k0.pages).toEqual([2, 2]);

      const first = await store.listTasks({ limit: 3 });
      expect(first.tasks.map((t) => t.id)).toEqual(ids.slice(4).reverse());
      await store.schedule({ kind: 'late' }); // newer than page 1: not in the pages that follow
      const second = await store.listTasks({ limit: 3, cursor: first.nextCursor });
      expect(second.tasks.map((t) => t.id)).toEqual(ids.slice(1, 4).reverse());
      const third = await store.listTasks({ limit: 3, cursor: second.nextCursor });
      expect(third).toEqual({ tasks: [expect.objectContaining({ id: ids[0] })], nextCursor: null });
    });

    it('refuses bad parameters with a ValidationError', async () => {
      const { store } = h();
      await store.schedule({ kind: 'k' });
      await store.schedule({ kind: 'k' });
      const { nextCursor } = await store.listTasks({ limit: 1 });
      expect(nextCursor).toEqual(expect.any(String));
      await expectValidationError(() => store.listTasks({ limit: 0 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.listTasks({ limit: 1_001 }), 'INVALID_OPTION', 'limit');
      await expectValidationError(() => store.listTasks({ states: ['RUNNING' as never] }), 'INVALID_OPTION', 'states[0]');
      await expectValidationError(() => store.listTasks({ states: [] }), 'INVALID_OPTION', 'states');
      await expectValidationError(() => store.listTasks({ kinds: ['ok', ''] }), 'INVALID_KIND', 'kinds[1]');
      await expectValidationError(() => store.listTasks({ dueFrom: new Date(Number.NaN) }), 'INVALID_RUN_AT', 'dueFrom');
      await expectValidationError(() => store.listTasks({ hasError: 'yes' as never }), 'INVALID_OPTION', 'hasError');
      await expectValidationError(() => store.listTasks({ order: 'up' as never }), 'INVALID_OPTION', 'order');
      await expectValidationError(() => store.listTasks({ cursor: 'garbage' }), 'INVALID_OPTION', 'cursor');
      await expectValidationError(() => store.listTasks({ cursor: nextCursor, order: 'oldest' }), 'INVALID_OPTION', 'cursor');
      await expectValidationError(() => store.listTasks({ offset: 10 } as never), 'INVALID_OPTION', 'offset');
    });
  });

  describe('retry', () => {
    it('makes a new task from a DEAD one; the original keeps its state and records the new id', async () => {
      const { store, clock } = h();
      const dead = await makeDead(store, 'mail', { to: 'a@example.com' }, 2);
      const before = await mustGetTask(store, dead);
      clock.tick(5_000);
      const result = await store.retry({ id: dead });
      expect(result).toEqual({ outcome: 'RETRIED', id: expect.any(String), dueAt: new Date(clock.now()) });
      const id = (result as { id: TaskId }).id;
      expect(id).not.toBe(dead);

      const fresh = await mustGetTask(store, id);
      expect(fresh).toMatchObject({ kind: 'mail', payload: { to: 'a@example.com' }, state: 'SCHEDULED', attempt: 0, maxAttempts: 2, lastError: null });
      expect(await mustGetTask(store, dead)).toEqual(before);
      expect(await record(store, dead)).toMatchObject({ state: 'DEAD', retriedAs: id, retryOf: null });
      expect(await record(store, id)).toMatchObject({ retryOf: dead, retriedAs: null });

      // The new task runs like any other.
      const c = await claimExactly(store, id);
      expect(c.attempt).toBe(1);
      expect(await store.complete({ id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.DONE);
      expect((await mustGetTask(store, dead)).state).toBe('DEAD');
    });

    it('is idempotent: a second retry returns the same new task, also when calls race', async () => {
      const { store } = h();
      const dead = await makeDead(store);
      const results = await Promise.all(Array.from({ length: 5 }, () => store.retry({ id: dead })));
      const retried = results.filter((r) => r.outcome === 'RETRIED');
      expect(retried).toHaveLength(1);
      const id = (retried[0] as { id: TaskId }).id;
      for (const r of results) if (r.outcome !== 'RETRIED') expect(r).toEqual({ outcome: 'ALREADY_RETRIED', id });
      expect(await store.retry({ id: dead })).toEqual({ outcome: 'ALREADY_RETRIED', id });
      expect((await store.listTasks()).tasks.map((t) => t.id)).toEqual([id, dead]);
    });

    it('retries CANCELLED tasks, at a delay, a time, or with other maxAttempts', async () => {
      const { store, clock } = h();
      const waiting = (await makeTerminal(store, 'CANCELLED_WAITING')).id;
      const running = (await makeTerminal(store, 'CANCELLED_RUNNING')).id;
      const dead = await makeDead(store);
      const r1 = await store.retry({ id: waiting, delayMs: 60_000 });
      expect(r1).toEqual({ outcome: 'RETRIED', id: expect.any(String), dueAt: new Date(clock.now() + 60_000) });
      const at = new Date(clock.now() + 3_600_000);
      expect(await store.retry({ id: running, runAt: at })).toEqual({ outcome: 'RETRIED', id: expect.any(String), dueAt: at });
      const r3 = await store.retry({ id: dead, maxAttempts: 7 });
      expect((await mustGetTask(store, (r3 as { id: TaskId }).id)).maxAttempts).toBe(7);
      expect((await mustGetTask(store, waiting)).state).toBe('CANCELLED');
      expect((await mustGetTask(store, running)).state).toBe('CANCELLED');
    });

    it('leaves SCHEDULED, CLAIMED and DONE tasks alone (NOT_RETRYABLE) and reports NOT_FOUND', async () => {
      const { store } = h();
      const scheduled = (await store.schedule({ kind: 'k', delayMs: 1_000 })).id;
      const claimed = (await scheduleAndClaim(store)).id;
      const done = (await makeTerminal(store, 'DONE')).id;
      const before = await Promise.all([scheduled, claimed, done].map((id) => mustGetTask(store, id)));
      expect(await store.retry({ id: scheduled })).toEqual({ outcome: 'NOT_RETRYABLE', state: 'SCHEDULED' });
      expect(await store.retry({ id: claimed })).toEqual({ outcome: 'NOT_RETRYABLE', state: 'CLAIMED' });
      expect(await store.retry({ id: done })).toEqual({ outcome: 'NOT_RETRYABLE', state: 'DONE' });
      expect(await store.retry({ id: '999999' })).toEqual({ outcome: 'NOT_FOUND' });
      expect(await Promise.all([scheduled, claimed, done].map((id) => mustGetTask(store, id)))).toEqual(before);
      expect((await store.listTasks()).tasks).toHaveLength(3);
    });

    it('refuses bad parameters with a ValidationError', async () => {
      const { store } = h();
      const dead = await makeDead(store);
      await expectValidationError(() => store.retry({ id: 'x1' }), 'INVALID_TASK_ID', 'id');
      await expectValidationError(() => store.retry({ id: dead, delayMs: 1, runAt: new Date() }), 'INVALID_DELAY', 'delayMs');
      await expectValidationError(() => store.retry({ id: dead, delayMs: -1 }), 'INVALID_DELAY', 'delayMs');
      await expectValidationError(() => store.retry({ id: dead, maxAttempts: 0 }), 'INVALID_MAX_ATTEMPTS', 'maxAttempts');
      await expectValidationError(() => store.retry({ id: dead, delay: 5 } as never), 'INVALID_OPTION', 'delay');
      expect((await store.listTasks()).tasks).toHaveLength(1);
    });
  });

  describe('prune', () => {
    it('deletes history finished before the cut-off with its completions, in batches; live and newer rows stay', async () => {
      const { store, clock } = h();
      const old = [
        (await makeTerminal(store, 'DONE')).id,
        (await makeTerminal(store, 'DONE')).id,
        (await makeTerminal(store, 'CANCELLED_WAITING')).id,
        await makeDead(store),
        (await makeTerminal(store, 'CANCELLED_RUNNING')).id,
      ];
      const waiting = (await store.schedule({ kind: 'later', delayMs: 3_600_000 })).id;
      const running = (await scheduleAndClaim(store, {}, 'w1', 3_600_000)).id;
      clock.tick(10_000);
      const cut = new Date(clock.now());
      clock.tick(1);
      const recent = (await makeTerminal(store, 'DONE')).id;

      expect(await store.prune({ before: cut, batchSize: 2 })).toEqual({ deleted: 5, effectsDeleted: 0, batches: 3 });
      for (const id of old) {
        expect(await store.getTask(id)).toBeNull();
        expect(await store.getCompletion(id)).toBeNull();
      }
      expect((await store.listTasks({ order: 'oldest' })).tasks.map((t) => t.id)).toEqual([waiting, running, recent]);
      expect(await store.getCompletion(recent)).not.toBeNull();
      expect(await store.prune({ before: cut })).toEqual({ deleted: 0, effectsDeleted: 0, batches: 1 });
    });

    it('takes a cut-off relative to the store clock; a retry survives its pruned original', async () => {
      const { store, clock } = h();
      const dead = await makeDead(store);
      const r = await store.retry({ id: dead });
      clock.tick(60_000);
      expect(await store.prune({ olderThanMs: 60_001 })).toEqual({ deleted: 0, effectsDeleted: 0, batches: 1 });
      expect(await store.prune({ olderThanMs: 60_000 - 1 })).toEqual({ deleted: 1, effectsDeleted: 0, batches: 1 });
      const id = (r as { id: TaskId }).id;
      expect(await record(store, id)).toMatchObject({ state: 'SCHEDULED', retryOf: dead });
      expect(await store.retry({ id: dead })).toEqual({ outcome: 'NOT_FOUND' });
    });

    it('refuses bad parameters with a ValidationError', async () => {
      const { store } = h();
      await expectValidationError(() => store.prune({}), 'INVALID_OPTION', 'before');
      await expectValidationError(() => store.prune({ before: new Date(), olderThanMs: 1 }), 'INVALID_OPTION', 'before');
      await expectValidationError(() => store.prune({ olderThanMs: -5 }), 'INVALID_DELAY', 'olderThanMs');
      await expectValidationError(() => store.prune({ before: new Date(Number.NaN) }), 'INVALID_RUN_AT', 'before');
      await expectValidationError(() => store.prune({ olderThanMs: 1, batchSize: 0 }), 'INVALID_OPTION', 'batchSize');
      await expectValidationError(() => store.prune({ olderThanMs: 1, batchSize: 10_001 }), 'INVALID_OPTION', 'batchSize');
    });
  });

  describe('stats', () => {
    it('counts live and DEAD tasks by kind, the due ones, and the oldest due lateness by the store clock', async () => {
      const { store, clock } = h();
      const empty = await store.stats();
      expect(empty).toEqual({ now: new Date(clock.now()), scheduled: 0, due: 0, claimed: 0, dead: 0, byKind: [], oldestDueLatenessMs: null });

      await store.schedule({ kind: 'a', delayMs: 100 });
      await store.schedule({ kind: 'a', delayMs: 300 });
      await store.schedule({ kind: 'b', delayMs: 10_000 });
      await scheduleAndClaim(store, { kind: 'b' });
      await makeDead(store, 'c');
      await makeTerminal(store, 'DONE');
      await makeTerminal(store, 'CANCELLED_WAITING');
      clock.tick(1_000);
      expect(await store.stats()).toEqual({
        now: new Date(clock.now()),
        scheduled: 3,
        due: 2,
        claimed: 1,
        dead: 1,
        byKind: [
          { kind: 'a', scheduled: 2, due: 2, claimed: 0, dead: 0 },
          { kind: 'b', scheduled: 1, due: 0, claimed: 1, dead: 0 },
          { kind: 'c', scheduled: 0, due: 0, claimed: 0, dead: 1 },
        ],
        oldestDueLatenessMs: 900,
      });
    });
  });
}
