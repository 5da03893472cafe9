/**
 * Pause and resume (docs/contract.md#pause-and-resume): a paused queue's or kind's tasks are not
 * claimed and not listed by `peekDue` — they stay SCHEDULED with their due time and attempts — while
 * tasks already CLAIMED finish normally; resume makes them claimable at the next claim; pause and
 * resume are idempotent and say whether they changed anything; bad input is a typed ValidationError
 * and writes nothing.
 */
import { isRateLimitStore, MAX_PAUSE_TEXT, TaskState, type Store } from '@postpone/core';
import { expectPostponeError, expectValidationError, LEASE_MS, mustGetTask } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';
import { describe, expect, it } from 'vitest';

async function claimIds(store: Store<any>, extra: Record<string, unknown> = {}, limit = 10): Promise<string[]> {
  return (await store.claim({ owner: 'w1', limit, leaseMs: LEASE_MS, ...extra })).map((t) => t.id);
}

export function pauseCases(h: HarnessRef): void {
  describe('pause and resume', () => {
    it('a paused queue is not claimed or peeked; its tasks stay SCHEDULED with due time and attempts unchanged; resume claims them', async () => {
      const { store, clock } = h();
      const [m1, m2] = await store.scheduleMany([{ kind: 'mail', queue: 'mail' }, { kind: 'mail', queue: 'mail', delayMs: 50 }]);
      const [d1] = await store.scheduleMany([{ kind: 'mail' }]);
      expect(await store.pause({ queue: 'mail' }, { reason: 'provider down', by: 'ops' })).toBe(true);
      clock.tick(100);
      const before = await mustGetTask(store, m1!.id);
      expect(await claimIds(store, { queue: 'mail' })).toEqual([]);
      const peek = await store.peekDue({ withinMs: 1_000, queue: 'mail' });
      expect(peek.tasks).toEqual([]);
      expect(peek.paused).toBe(true);
      // Another queue is not held back, even with the same kind.
      expect(await claimIds(store)).toEqual([d1!.id]);
      expect((await store.peekDue({ withinMs: 1_000 })).paused).toBeUndefined();
      const after = await mustGetTask(store, m1!.id);
      expect(after).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0, failures: 0, dueAt: before.dueAt });
      expect(await store.resume({ queue: 'mail' })).toBe(true);
      expect(await claimIds(store, { queue: 'mail' })).toEqual([m1!.id, m2!.id]);
      expect(await mustGetTask(store, m1!.id)).toMatchObject({ state: TaskState.CLAIMED, attempt: 1 });
    });

    it('a paused kind is held back in every queue; the other kinds of the claim still go; peek says paused only when every named kind is', async () => {
      const { store, clock } = h();
      const [a, b, c] = await store.scheduleMany([{ kind: 'api' }, { kind: 'api', queue: 'other' }, { kind: 'mail' }]);
      expect(await store.pause({ kind: 'api' })).toBe(true);
      clock.tick(1);
      expect(await claimIds(store)).toEqual([c!.id]);
      expect(await claimIds(store, { queue: 'other' })).toEqual([]);
      expect(await claimIds(store, { queue: 'other', kinds: ['api'] })).toEqual([]);
      expect((await store.peekDue({ withinMs: 0, kinds: ['api', 'mail'] })).paused).toBeUndefined();
      const onlyApi = await store.peekDue({ withinMs: 0, kinds: ['api'] });
      expect(onlyApi).toMatchObject({ tasks: [], paused: true });
      // Capped claims (kindLimits) leave it out too.
      expect(await claimIds(store, { kindLimits: { api: 5 } })).toEqual([]);
      expect(await store.resume({ kind: 'api' })).toBe(true);
      expect(await claimIds(store, { kindLimits: { api: 5 } })).toEqual([a!.id]);
      expect(await claimIds(store, { queue: 'other' })).toEqual([b!.id]);
    });

    it('a rate-limited claim leaves paused work out too: a paused kind or queue with a rate limit is not claimed and uses none of its room', async () => {
      const { store, clock } = h();
      if (!isRateLimitStore(store)) throw new Error('the store does not implement RateLimitStore');
      await store.setRateLimit({ kind: 'api', limit: 5, windowMs: 60_000 });
      await store.setRateLimit({ queue: 'mail', limit: 5, windowMs: 60_000 });
      const [a1, a2] = await store.scheduleMany([{ kind: 'api' }, { kind: 'api' }]);
      const [m1] = await store.scheduleMany([{ kind: 'send', queue: 'mail' }]);
      expect(await store.pause({ kind: 'api' })).toBe(true);
      expect(await store.pause({ queue: 'mail' })).toBe(true);
      clock.tick(1);
      expect(await claimIds(store)).toEqual([]);
      expect(await claimIds(store, { queue: 'mail' })).toEqual([]);
      expect(await claimIds(store, { kindLimits: { api: 1 } })).toEqual([]);
      const limits = await store.listRateLimits();
      expect(limits.map((l) => [l.scope, l.name, l.used])).toEqual([
        ['kind', 'api', 0],
        ['queue', 'mail', 0],
      ]);
      expect(await mustGetTask(store, a1!.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      expect(await store.resume({ kind: 'api' })).toBe(true);
      expect(await store.resume({ queue: 'mail' })).toBe(true);
      expect(await claimIds(store)).toEqual([a1!.id, a2!.id]);
      expect(await claimIds(store, { queue: 'mail' })).toEqual([m1!.id]);
      expect((await store.listRateLimits()).map((l) => l.used)).toEqual([2, 1]);
    });

    it('a task CLAIMED before the pause renews, completes and fails normally; a failed one waits SCHEDULED until resume', async () => {
      const { store, clock } = h();
      const [t1, t2] = await store.scheduleMany([{ kind: 'job', maxAttempts: 3 }, { kind: 'job', maxAttempts: 3 }]);
      const claimed = await store.claim({ owner: 'w1', limit: 2, leaseMs: LEASE_MS });
      expect(claimed.map((t) => t.id)).toEqual([t1!.id, t2!.id]);
      expect(await store.pause({ kind: 'job' })).toBe(true);
      expect(await store.extend({ id: t1!.id, attempt: 1, leaseMs: LEASE_MS })).toBe(true);
      expect(await store.complete({ id: t1!.id, attempt: 1, owner: 'w1' })).toBe('DONE');
      expect(await store.fail({ id: t2!.id, attempt: 1, error: 'boom', backoffMs: 0 })).toMatchObject({ outcome: 'SCHEDULED' });
      clock.tick(10);
      expect(await claimIds(store)).toEqual([]);
      expect(await mustGetTask(store, t2!.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 1, failures: 1 });
      await store.resume({ kind: 'job' });
      expect(await claimIds(store)).toEqual([t2!.id]);
    });

    it('pause and resume are idempotent and say whether they changed; listPaused lists queues then kinds by name with who and why', async () => {
      const { store, clock } = h();
      const t0 = clock.now();
      expect(await store.listPaused()).toEqual([]);
      expect(await store.pause({ kind: 'b' }, { by: 'alice' })).toBe(true);
      clock.tick(5);
      expect(await store.pause({ kind: 'a' })).toBe(true);
      expect(await store.pause({ queue: 'z' }, { reason: 'maintenance\nuntil noon' })).toBe(true);
      // A second pause keeps the first row (its time, who and why).
      expect(await store.pause({ kind: 'b' }, { by: 'bob', reason: 'again' })).toBe(false);
      // A queue and a kind of the same name are two targets.
      expect(await store.pause({ queue: 'a' })).toBe(true);
      expect(await store.listPaused()).toEqual([
        { scope: 'queue', name: 'a', pausedAt: new Date(t0 + 5), pausedBy: null, reason: null },
        { scope: 'queue', name: 'z', pausedAt: new Date(t0 + 5), pausedBy: null, reason: 'maintenance\nuntil noon' },
        { scope: 'kind', name: 'a', pausedAt: new Date(t0 + 5), pausedBy: null, reason: null },
        { scope: 'kind', name: 'b', pausedAt: new Date(t0), pausedBy: 'alice', reason: null },
      ]);
      expect(await store.resume({ kind: 'b' })).toBe(true);
      expect(await store.resume({ kind: 'b' })).toBe(false);
      expect(await store.resume({ queue: 'never' })).toBe(false);
      expect((await store.listPaused()).map((p) => `${p.scope}:${p.name}`)).toEqual(['queue:a', 'queue:z', 'kind:a']);
    });

    it('after close pause, resume and listPaused throw StoreClosedError', async () => {
      const { store } = h();
      await store.close();
      for (const call of [() => store.pause({ queue: 'q' }), () => store.resume({ queue: 'q' }), () => store.listPaused()]) {
        await expectPostponeError(call, 'STORE_CLOSED');
      }
    });

    it('bad input is a typed ValidationError and writes nothing', async () => {
      const { store } = h();
      const s = store as any;
      await expectValidationError(() => s.pause(undefined), 'INVALID_OPTION', 'target');
      await expectValidationError(() => s.pause({}), 'INVALID_OPTION', 'target');
      await expectValidationError(() => s.pause({ queue: 'q', kind: 'k' }), 'INVALID_OPTION', 'target');
      await expectValidationError(() => s.pause({ queues: 'q' }), 'INVALID_OPTION', 'queues');
      await expectValidationError(() => s.pause({ queue: ' ' }), 'INVALID_QUEUE', 'queue');
      await expectValidationError(() => s.pause({ kind: '' }), 'INVALID_KIND', 'kind');
      await expectValidationError(() => s.pause({ kind: 'k' }, { reason: 'x'.repeat(MAX_PAUSE_TEXT + 1) }), 'INVALID_OPTION', 'options.reason');
      await expectValidationError(() => s.pause({ kind: 'k' }, { by: 'a\u0000b' }), 'INVALID_OPTION', 'options.by');
      await expectValidationError(() => s.pause({ kind: 'k' }, { why: 'x' }), 'INVALID_OPTION', 'options.why');
      await expectValidationError(() => s.resume({ queue: 7 }), 'INVALID_QUEUE', 'queue');
      await expectValidationError(() => s.resume([]), 'INVALID_OPTION', 'target');
      expect(await store.listPaused()).toEqual([]);
    });
  });
}
