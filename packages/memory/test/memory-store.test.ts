import { DEFAULT_MAX_PAYLOAD_BYTES, PostponeError, StoreError, TaskState, TestClock, ValidationError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError } from '@postpone/conformance';
import { createMemoryStore, leaseCheckHolds, MemoryStore, SqlState } from '../src/index.js';


describe('createMemoryStore', () => {
  it('is named memory and gives increasing decimal ids from "1", never reused after a rollback', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    expect(store).toBeInstanceOf(MemoryStore);
    expect(store.name).toBe('memory');
    expect((await store.schedule({ kind: 'k' })).id).toBe('1');
    expect((await store.scheduleMany([{ kind: 'k' }, { kind: 'k' }])).map((s) => s.id)).toEqual(['2', '3']);
    await store
      .transaction(async (tx) => {
        expect((await store.schedule({ kind: 'k' }, { tx })).id).toBe('4');
        throw new Error('rollback');
      })
      .catch(() => undefined);
    expect((await store.schedule({ kind: 'k' })).id).toBe('5');
    expect(await store.getTask('4')).toBeNull();
  });

  it('keeps ids exact across 2^31, 2^53 and up to the bigint maximum (restartTaskIds)', async () => {
    const clock = new TestClock();
    for (const next of ['2147483643', '9007199254740987', '9223372036854775803']) {
      const store = createMemoryStore({ clock });
      store.restartTaskIds(next);
      const single = (await store.schedule({ kind: 'k', key: 'a' })).id;
      const many = (await store.scheduleMany([{ kind: 'k' }, { kind: 'k', key: 'b' }, { kind: 'k' }, { kind: 'k' }])).map((s) => s.id);
      const ids = [single, ...many];
      // A Number counter would repeat ids past 2^53 (9007199254740992 + 1 === 9007199254740992).
      expect(ids).toEqual([0n, 1n, 2n, 3n, 4n].map((i) => (BigInt(next) + i).toString()));
      expect((await store.schedule({ kind: 'k', key: 'a' })).id).toBe(single);
      for (const id of ids) expect((await store.getTask(id))?.id).toBe(id);
      const claimed = await store.claim({ owner: 'w1', limit: 5, leaseMs: 1_000 });
      expect(claimed.map((c) => c.id)).toEqual(ids);
      expect(await store.completeMany(claimed.map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w1' })))).toEqual(ids.map(() => 'DONE'));
      const pages: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await store.listTasks({ order: 'oldest', limit: 2, cursor });
        pages.push(...page.tasks.map((t) => t.id));
        cursor = page.nextCursor;
      } while (cursor !== null);
      expect(pages).toEqual(ids);
    }
    const store = createMemoryStore({ clock });
    expect(() => store.restartTaskIds('9223372036854775808')).toThrow(ValidationError);
  });

  it('claims in (dueAt, id) order, ids compared as numbers', async () => {
    const clock = new TestClock();
    const store = createMemoryStore({ clock });
    const ids = (await store.scheduleMany(Array.from({ length: 12 }, () => ({ kind: 'k' })))).map((s) => s.id);
    const early = await store.schedule({ kind: 'early', runAt: new Date(clock.now() - 1) });
    const claimed = await store.claim({ owner: 'w1', limit: 13, leaseMs: 1_000 });
    expect(claimed.map((c) => c.id)).toEqual([early.id, ...ids]);
    expect(ids.slice(8)).toEqual(['9', '10', '11', '12']);
  });

  it('uses the system clock by default', async () => {
    const store = createMemoryStore();
    const before = Date.now();
    const now = (await store.now()).getTime();
    const { dueAt } = await store.schedule({ kind: 'k', delayMs: 1_000 });
    const after = Date.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(after);
    expect(dueAt.getTime()).toBeGreaterThanOrEqual(before + 1_000);
    expect(dueAt.getTime()).toBeLessThanOrEqual(after + 1_000);
  });

  it('honours maxPayloadBytes for payloads and results', async () => {
    const store = createMemoryStore({ clock: new TestClock(), maxPayloadBytes: 16 });
    await store.schedule({ kind: 'k', payload: 'x'.repeat(14) });
    const tooLarge = await captureError(() => store.schedule({ kind: 'k', payload: 'x'.repeat(15) }));
    expect(ValidationError.isInstance(tooLarge) && tooLarge.code === 'PAYLOAD_TOO_LARGE').toBe(true);
    const [c] = await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
    const badResult = await captureError(() => store.complete({ id: c!.id, attempt: 1, owner: 'w1', result: 'y'.repeat(15) }));
    expect(ValidationError.isInstance(badResult) && badResult.code === 'INVALID_RESULT').toBe(true);
    expect(await store.countByState()).toMatchObject({ SCHEDULED: 0, CLAIMED: 1 });
    expect(createMemoryStore().name).toBe('memory');
    expect(DEFAULT_MAX_PAYLOAD_BYTES).toBe(1_048_576);
  });

  it('refuses bad options with a ValidationError', () => {
    for (const options of [{ maxPayloadBytes: 0 }, { maxPayloadBytes: 1.5 }, { clock: {} as never }]) {
      let caught: unknown;
      try {
        createMemoryStore(options);
      } catch (error) {
        caught = error;
      }
      expect(ValidationError.isInstance(caught) && caught.code === 'INVALID_OPTION').toBe(true);
    }
  });

  it('hands out copies: mutating a returned task, claim or effect changes nothing stored', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    const { id } = await store.schedule({ kind: 'k', payload: { list: [1, 2] } });
    const read = await store.getTask(id);
    (read!.payload as { list: number[] }).list.push(3);
    read!.dueAt.setTime(0);
    const [c] = await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
    (c!.payload as { list: number[] }).list.push(4);
    expect((await store.getTask(id))?.payload).toEqual({ list: [1, 2] });
    expect((await store.getTask(id))?.dueAt.getTime()).not.toBe(0);
  });

  it('fail records error text without \\u0000 and refuses a non-string error', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    const { id } = await store.schedule({ kind: 'k', maxAttempts: 3 });
    await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
    const bad = await captureError(() => store.fail({ id, attempt: 1, error: 42 as unknown as string, backoffMs: 0 }));
    expect(ValidationError.isInstance(bad) && bad.field === 'error').toBe(true);
    await store.fail({ id, attempt: 1, error: 'a\u0000b', backoffMs: 0 });
    expect((await store.getTask(id))?.lastError).toBe('a\ufffdb');
  });

  it('refuses an empty or oversized owner', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    await store.schedule({ kind: 'k' });
    for (const owner of ['', 'o'.repeat(201), 'a\u0000b']) {
      const error = await captureError(() => store.claim({ owner, limit: 1, leaseMs: 1_000 }));
      expect(ValidationError.isInstance(error) && error.field === 'owner').toBe(true);
    }
    expect(await store.countByState()).toMatchObject({ SCHEDULED: 1, CLAIMED: 0 });
  });
});

describe('rawUpdateTask (the lease CHECK)', () => {
  it('refuses a CLAIMED row without a lease with StoreError 23514 and changes nothing', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    const { id } = await store.schedule({ kind: 'k' });
    const before = await store.getTask(id);
    const error = await captureError(() => store.rawUpdateTask(id, { state: TaskState.CLAIMED }));
    expect(PostponeError.isInstance(error)).toBe(true);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).sqlState).toBe(SqlState.CHECK_VIOLATION);
    expect(await store.getTask(id)).toEqual(before);
  });

  it('returns false for a missing task, like an UPDATE of 0 rows', async () => {
    const store = createMemoryStore();
    expect(await store.rawUpdateTask('77', { state: TaskState.DONE })).toBe(false);
  });

  it('leaseCheckHolds is the SQL predicate (state = CLAIMED) = (both lease columns set)', () => {
    const until = new Date();
    const rows: [TaskState, string | null, Date | null, boolean][] = [
      [TaskState.CLAIMED, 'w', until, true],
      [TaskState.CLAIMED, null, until, false],
      [TaskState.CLAIMED, 'w', null, false],
      [TaskState.CLAIMED, null, null, false],
      [TaskState.SCHEDULED, null, null, true],
      [TaskState.SCHEDULED, 'w', null, true],
      [TaskState.SCHEDULED, 'w', until, false],
      [TaskState.DONE, 'w', until, false],
    ];
    for (const [state, leaseOwner, leaseUntil, holds] of rows) expect(leaseCheckHolds({ state, leaseOwner, leaseUntil })).toBe(holds);
  });
});

describe('close', () => {
  it('refuses transaction, table and rawUpdateTask afterwards', async () => {
    const store = createMemoryStore();
    await store.close();
    for (const call of [() => store.transaction(async () => 1), () => store.table('t'), () => store.rawUpdateTask('1', {})]) {
      const error = await captureError(call);
      expect(PostponeError.isInstance(error) && error.code === 'STORE_CLOSED').toBe(true);
    }
  });
});

describe('unknown options are refused', () => {
  it('createMemoryStore and schedule refuse a misspelled option', async () => {
    expect(() => createMemoryStore({ clok: 1 } as never)).toThrow(/clok: is not an option/);
    const store = createMemoryStore();
    await expect(store.schedule({ kind: 'k' }, { txn: {} } as never)).rejects.toThrow(/options\.txn: is not an option/);
    expect((await store.countByState()).SCHEDULED).toBe(0);
  });
});
