/**
 * Queues, kind-filtered claims and priorities (docs/contract.md#queues, #priorities): a claim takes
 * only tasks of its queue (default `'default'`) and, when given, of its kinds — the others are left
 * SCHEDULED with no attempt used; among due tasks it takes higher priority first, then earlier due
 * time, then id; `peekDue` lists only what such a claim may take; bad selections and priorities are
 * refused with a typed ValidationError before anything is read or written.
 */
import { MAX_CLAIM_KINDS, MAX_PRIORITY, MIN_PRIORITY, TaskState } from '@postpone/core';
import { claimExactly, expectValidationError, LEASE_MS, mustGetTask, stateCounts } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';
import { describe, expect, it } from 'vitest';

export function queueCases(h: HarnessRef): void {
  describe('queues, kinds and priorities', () => {
    it('schedule records queue and priority (defaults "default" and 0) and getTask returns them', async () => {
      const { store } = h();
      const [plain, named] = await store.scheduleMany([{ kind: 'a' }, { kind: 'a', queue: 'mail', priority: -7 }]);
      expect(await mustGetTask(store, plain!.id)).toMatchObject({ queue: 'default', priority: 0 });
      expect(await mustGetTask(store, named!.id)).toMatchObject({ queue: 'mail', priority: -7 });
    });

    it('a claim with kinds takes only those kinds; the others stay SCHEDULED with no attempt used', async () => {
      const { store } = h();
      const [a, b, c] = await store.scheduleMany([{ kind: 'a' }, { kind: 'b' }, { kind: 'c' }]);
      const claimed = await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS, kinds: ['a', 'c'] });
      expect(claimed.map((t) => t.id).sort()).toEqual([a!.id, c!.id].sort());
      expect(await mustGetTask(store, b!.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0, failures: 0 });
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS, kinds: ['a', 'c'] })).toEqual([]);
      // Without kinds, every kind of the queue.
      expect((await store.claim({ owner: 'w2', limit: 10, leaseMs: LEASE_MS })).map((t) => t.id)).toEqual([b!.id]);
    });

    it('a claim takes only its queue (default "default"); another queue is left alone', async () => {
      const { store } = h();
      const [mail, plain] = await store.scheduleMany([{ kind: 'a', queue: 'mail' }, { kind: 'a' }]);
      expect((await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).map((t) => t.id)).toEqual([plain!.id]);
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS, queue: 'other' })).toEqual([]);
      expect(await mustGetTask(store, mail!.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      expect((await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS, queue: 'mail', kinds: ['a'] })).map((t) => t.id)).toEqual([mail!.id]);
    });

    it('due tasks are claimed by priority desc, then due time, then id; a task not yet due waits whatever its priority', async () => {
      const { store, clock } = h();
      const low = await store.schedule({ kind: 'a', priority: -1 });
      clock.tick(10);
      const midLate = await store.schedule({ kind: 'b', priority: 0 });
      const highLate = await store.schedule({ kind: 'a', priority: 5 });
      const [midTie1, midTie2] = await store.scheduleMany([{ kind: 'a' }, { kind: 'b' }]);
      const future = await store.schedule({ kind: 'a', priority: MAX_PRIORITY, delayMs: 60_000 });
      const order: string[] = [];
      for (let i = 0; i < 6; i += 1) {
        const claimed = await store.claim({ owner: 'w1', limit: 1, leaseMs: LEASE_MS, kinds: ['a', 'b'] });
        if (claimed.length === 0) break;
        order.push(claimed[0]!.id);
      }
      // midLate, midTie1 and midTie2 share priority 0 and one due time: by id.
      expect(order).toEqual([highLate.id, midLate.id, midTie1!.id, midTie2!.id, low.id]);
      expect(await mustGetTask(store, future.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
    });

    it('one claim returns its batch in claim order, each task with its priority', async () => {
      const { store, clock } = h();
      const early = await store.schedule({ kind: 'a', priority: MIN_PRIORITY });
      clock.tick(5);
      const [p1, p3, p2] = await store.scheduleMany([
        { kind: 'a', priority: 1 },
        { kind: 'b', priority: 3 },
        { kind: 'a', priority: 2 },
      ]);
      const claimed = await store.claim({ owner: 'w1', limit: 3, leaseMs: LEASE_MS });
      expect(claimed.map((t) => [t.id, t.priority])).toEqual([
        [p3!.id, 3],
        [p2!.id, 2],
        [p1!.id, 1],
      ]);
      expect((await claimExactly(store, early.id)).priority).toBe(MIN_PRIORITY);
    });

    it('peekDue lists only the queue and kinds it is given', async () => {
      const { store } = h();
      const [a, , , d] = await store.scheduleMany([
        { kind: 'a', delayMs: 10 },
        { kind: 'b', delayMs: 20 },
        { kind: 'a', queue: 'mail', delayMs: 30 },
        { kind: 'a', priority: 9, delayMs: 40 },
      ]);
      const peek = await store.peekDue({ withinMs: 1_000, kinds: ['a'] });
      expect(peek.tasks.map((t) => t.id)).toEqual([a!.id, d!.id]);
      expect((await store.peekDue({ withinMs: 1_000, queue: 'mail', kinds: ['b'] })).tasks).toEqual([]);
      expect((await store.peekDue({ withinMs: 1_000, queue: 'mail' })).tasks).toHaveLength(1);
      expect((await store.peekDue({ withinMs: 1_000 })).tasks).toHaveLength(3);
    });

    it('retry keeps the queue and priority of the original', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'a', queue: 'mail', priority: 4, maxAttempts: 1 });
      const [claimed] = await store.claim({ owner: 'w1', limit: 1, leaseMs: LEASE_MS, queue: 'mail' });
      expect(await store.fail({ id, attempt: claimed!.attempt, error: 'boom', backoffMs: 0 })).toMatchObject({ outcome: TaskState.DEAD });
      const retried = await store.retry({ id });
      expect(retried.outcome).toBe('RETRIED');
      expect(await mustGetTask(store, (retried as { id: string }).id)).toMatchObject({ queue: 'mail', priority: 4, state: TaskState.SCHEDULED });
    });

    it('refuses bad kinds, queues and priorities with a typed ValidationError, writing and claiming nothing', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'a' });
      const claim = (extra: Record<string, unknown>) => () => store.claim({ owner: 'w1', limit: 1, leaseMs: LEASE_MS, ...extra });
      await expectValidationError(claim({ kinds: [] }), 'INVALID_KIND', 'kinds');
      await expectValidationError(claim({ kinds: 'a' }), 'INVALID_KIND', 'kinds');
      await expectValidationError(claim({ kinds: Array.from({ length: MAX_CLAIM_KINDS + 1 }, (_, i) => `k${i}`) }), 'INVALID_KIND', 'kinds');
      await expectValidationError(claim({ kinds: ['a', ''] }), 'INVALID_KIND', 'kinds[1]');
      await expectValidationError(claim({ kinds: ['a', 7] }), 'INVALID_KIND', 'kinds[1]');
      await expectValidationError(claim({ queue: '' }), 'INVALID_QUEUE', 'queue');
      await expectValidationError(claim({ queue: 'a\u0000b' }), 'INVALID_QUEUE', 'queue');
      await expectValidationError(() => store.peekDue({ withinMs: 10, kinds: [] }), 'INVALID_KIND', 'kinds');
      await expectValidationError(() => store.peekDue({ withinMs: 10, queue: 3 as unknown as string }), 'INVALID_QUEUE', 'queue');
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      // A full list of MAX_CLAIM_KINDS is accepted.
      const many = Array.from({ length: MAX_CLAIM_KINDS }, (_, i) => (i === 0 ? 'a' : `k${i}`));
      expect((await store.claim({ owner: 'w1', limit: 1, leaseMs: LEASE_MS, kinds: many })).map((t) => t.id)).toEqual([id]);

      for (const priority of [1.5, MAX_PRIORITY + 1, MIN_PRIORITY - 1, '1', Number.NaN]) {
        await expectValidationError(() => store.schedule({ kind: 'a', priority: priority as number }), 'INVALID_PRIORITY', 'priority');
      }
      await expectValidationError(() => store.schedule({ kind: 'a', queue: '' }), 'INVALID_QUEUE', 'queue');
      await expectValidationError(() => store.scheduleMany([{ kind: 'a' }, { kind: 'a', queue: 'x'.repeat(201) }]), 'INVALID_QUEUE', 'tasks[1].queue');
      expect(await store.countByState()).toEqual(stateCounts({ [TaskState.CLAIMED]: 1 }));
    });
  });
}
