import { PostponeError, StoreError, TaskState, TestClock, ValidationError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { captureError } from '@postpone/conformance';
import { createMemoryStore, type MemoryTx, SqlState } from '../src/index.js';


function expectStoreError(error: unknown, sqlState: string): void {
  expect(PostponeError.isInstance(error)).toBe(true);
  expect(error).toBeInstanceOf(StoreError);
  expect((error as StoreError).sqlState).toBe(sqlState);
}

describe('MemoryTx and store.transaction', () => {
  it('stages insert/update, reads its own writes, and commits them together when fn resolves', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    const value = await store.transaction(async (tx) => {
      tx.insert('orders', 'o1', { status: 'open' });
      expect(tx.get('orders', 'o1')).toEqual({ status: 'open' });
      expect(store.table('orders').size).toBe(0);
      expect(tx.update('orders', 'o1', { status: 'closed' })).toBe(true);
      expect(tx.update('orders', 'missing', { status: 'x' })).toBe(false);
      expect(tx.get('orders', 'missing')).toBeUndefined();
      return 42;
    });
    expect(value).toBe(42);
    expect([...store.table('orders')]).toEqual([['o1', { status: 'closed' }]]);
  });

  it('drops every write, scheduled tasks included, when fn throws, and rethrows', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    const boom = new Error('boom');
    let taskId = '';
    const error = await captureError(() =>
      store.transaction(async (tx) => {
        tx.insert('orders', 'o1', { status: 'open' });
        taskId = (await store.schedule({ kind: 'close-order' }, { tx })).id;
        throw boom;
      }),
    );
    expect(error).toBe(boom);
    expect(store.table('orders').size).toBe(0);
    expect(await store.getTask(taskId)).toBeNull();
  });

  it('refuses a duplicate key, staged or committed, with 23505', async () => {
    const store = createMemoryStore();
    await store.transaction(async (tx) => tx.insert('t', 'k', 1));
    await store.transaction(async (tx) => {
      expectStoreError(await captureError(() => tx.insert('t', 'k', 2)), SqlState.UNIQUE_VIOLATION);
      tx.insert('t', 'k2', 2);
      expectStoreError(await captureError(() => tx.insert('t', 'k2', 3)), SqlState.UNIQUE_VIOLATION);
    });
    expect([...store.table('t')]).toEqual([
      ['k', 1],
      ['k2', 2],
    ]);
  });

  it('a conflict found at commit rolls the whole transaction back', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let slowTaskId = '';
    const slow = store.transaction(async (tx) => {
      tx.insert('t', 'k', 'slow');
      slowTaskId = (await store.schedule({ kind: 'k' }, { tx })).id;
      await gate;
    });
    await store.transaction(async (tx) => tx.insert('t', 'k', 'fast'));
    release();
    expectStoreError(await captureError(() => slow), SqlState.UNIQUE_VIOLATION);
    expect([...store.table('t')]).toEqual([['k', 'fast']]);
    expect(await store.getTask(slowTaskId)).toBeNull();
  });

  it('a finished transaction refuses further writes with 25000', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    let kept: MemoryTx | undefined;
    await store.transaction(async (tx) => {
      kept = tx;
    });
    const tx = kept as MemoryTx;
    expect(tx.isOpen).toBe(false);
    expectStoreError(await captureError(() => tx.insert('t', 'k', 1)), SqlState.INVALID_TRANSACTION_STATE);
    expectStoreError(await captureError(() => store.schedule({ kind: 'k' }, { tx })), SqlState.INVALID_TRANSACTION_STATE);
    expect(await store.countByState()).toMatchObject({ SCHEDULED: 0 });
  });

  it('schedule refuses a tx that is not a MemoryTx of this store', async () => {
    const store = createMemoryStore();
    const other = createMemoryStore();
    await other.transaction(async (foreign) => {
      const error = await captureError(() => store.schedule({ kind: 'k' }, { tx: foreign }));
      expect(ValidationError.isInstance(error) && error.code === 'INVALID_OPTION' && error.field === 'tx').toBe(true);
    });
    const error = await captureError(() => store.scheduleMany([{ kind: 'k' }], { tx: {} as MemoryTx }));
    expect(ValidationError.isInstance(error) && error.field === 'tx').toBe(true);
    expect(await store.countByState()).toMatchObject({ SCHEDULED: 0 });
  });

  it('values are copied on write and on read', async () => {
    const store = createMemoryStore();
    const value = { n: 1 };
    await store.transaction(async (tx) => tx.insert('t', 'k', value));
    value.n = 2;
    const read = store.table('t').get('k') as { n: number };
    read.n = 3;
    expect(store.table('t').get('k')).toEqual({ n: 1 });
  });

  it('table and key names must be non-empty strings', async () => {
    const store = createMemoryStore();
    await store.transaction(async (tx) => {
      const error = await captureError(() => tx.insert('', 'k', 1));
      expect(ValidationError.isInstance(error) && error.field === 'table').toBe(true);
      const error2 = await captureError(() => tx.get('t', 7 as unknown as string));
      expect(ValidationError.isInstance(error2) && error2.field === 'key').toBe(true);
    });
  });
});

describe('complete({ work }) with a MemoryTx', () => {
  it('a follow-up task scheduled inside work commits with DONE', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    const { id } = await store.schedule({ kind: 'send' });
    const [c] = await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
    let followUp = '';
    expect(
      await store.complete({
        id,
        attempt: c!.attempt,
        owner: 'w1',
        work: async (tx) => {
          followUp = (await store.schedule({ kind: 'remind', delayMs: 60_000 }, { tx })).id;
        },
      }),
    ).toBe('DONE');
    expect((await store.getTask(followUp))?.state).toBe(TaskState.SCHEDULED);
  });

  it('a work whose insert conflicts rolls back DONE and the effect, and complete rethrows 23505', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    await store.transaction(async (tx) => tx.insert('ledger', 'entry-1', 'existing'));
    const { id } = await store.schedule({ kind: 'k' });
    const [c] = await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 });
    const before = await store.getTask(id);
    const error = await captureError(() =>
      store.complete({ id, attempt: c!.attempt, owner: 'w1', work: async (tx) => tx.insert('ledger', 'entry-1', 'again') }),
    );
    expectStoreError(error, SqlState.UNIQUE_VIOLATION);
    expect(await store.getTask(id)).toEqual(before);
    expect(await store.getCompletion(id)).toBeNull();
    expect([...store.table('ledger')]).toEqual([['entry-1', 'existing']]);
  });

  it('cancel in a transaction: first committer wins — a claim committed meanwhile is kept and the commit fails with 40001', async () => {
    const store = createMemoryStore({ clock: new TestClock() });
    const { id } = await store.schedule({ kind: 'k' });
    const error = await captureError(() =>
      store.transaction(async (tx) => {
        tx.insert('reservation', '42', 'closed');
        expect(await store.cancel(id, { tx })).toBe('CANCELLED');
        // no row lock is held across the caller's transaction: the claim goes through
        expect((await store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 })).map((t) => t.id)).toEqual([id]);
      }),
    );
    expectStoreError(error, SqlState.SERIALIZATION_FAILURE);
    expect(await store.getTask(id)).toMatchObject({ state: TaskState.CLAIMED, attempt: 1, cancelRequested: false });
    expect(store.table('reservation').size).toBe(0);
    // without a concurrent write the same cancel commits
    const other = await store.schedule({ kind: 'k' });
    await store.transaction(async (tx) => {
      expect(await store.cancel(other.id, { tx })).toBe('CANCELLED');
    });
    expect((await store.getTask(other.id))?.state).toBe(TaskState.CANCELLED);
  });
});
