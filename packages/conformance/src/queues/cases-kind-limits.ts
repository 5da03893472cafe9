/**
 * Per-kind concurrency caps (docs/contract.md#kind-concurrency): a claim with `kindLimits` takes at
 * most `cap − CLAIMED tasks of the kind` (every queue, every owner) of a capped kind, the rest of its
 * limit from other kinds in claim order; complete, fail, release, snooze and reclaim free the room;
 * a bad `kindLimits` is refused with a typed ValidationError before anything is claimed.
 */
import { MAX_KIND_LIMIT, MAX_KIND_LIMITS, TaskState, type Store } from '@postpone/core';
import { expectValidationError, LEASE_MS, mustGetTask, stateCounts } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';
import { describe, expect, it } from 'vitest';

const CAP = { api: 2 } as const;

/** The ids of `store.claim` with the given extras, in claim order. */
async function claimIds(store: Store<any>, extra: Record<string, unknown> = {}, limit = 10, owner = 'w1'): Promise<string[]> {
  return (await store.claim({ owner, limit, leaseMs: LEASE_MS, ...extra })).map((t) => t.id);
}

/** CLAIMED tasks of `kind` among `ids`. */
async function claimedOf(store: Store<any>, ids: readonly string[], kind: string): Promise<number> {
  const tasks = await Promise.all(ids.map((id) => mustGetTask(store, id)));
  return tasks.filter((t) => t.kind === kind && t.state === TaskState.CLAIMED).length;
}

export function kindLimitCases(h: HarnessRef): void {
  describe('per-kind concurrency caps (kindLimits)', () => {
    it('one claim takes at most the cap of a capped kind, in claim order, and fills its limit with other kinds', async () => {
      const { store, clock } = h();
      const [a1, a2, a3] = await store.scheduleMany([{ kind: 'api', priority: 1 }, { kind: 'api', priority: 5 }, { kind: 'api', priority: 3 }]);
      clock.tick(1);
      const others = await store.scheduleMany([{ kind: 'other' }, { kind: 'other' }, { kind: 'other' }]);
      const ids = await claimIds(store, { kindLimits: CAP }, 10);
      // api by priority: a2 (5), a3 (3); a1 (1) is beyond the cap and stays SCHEDULED with no attempt used.
      expect(ids).toEqual([a2!.id, a3!.id, ...others.map((t) => t.id)]);
      expect(await mustGetTask(store, a1!.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      // The limit still bounds the total: 2 of api and 1 other out of a limit of 3.
      const more = await store.scheduleMany([{ kind: 'api' }, { kind: 'other' }, { kind: 'other' }]);
      expect(await claimIds(store, { kindLimits: { api: 4 } }, 2)).toEqual([a1!.id, more[0]!.id]);
    });

    it('the cap holds across claims and owners while tasks stay CLAIMED, and counts CLAIMED tasks of every queue', async () => {
      const { store } = h();
      const api = await store.scheduleMany(Array.from({ length: 5 }, () => ({ kind: 'api' })));
      const [mail] = await store.scheduleMany([{ kind: 'api', queue: 'mail' }]);
      expect(await claimIds(store, { kindLimits: CAP }, 1, 'w1')).toEqual([api[0]!.id]);
      expect(await claimIds(store, { kindLimits: CAP }, 10, 'w2')).toEqual([api[1]!.id]);
      expect(await claimIds(store, { kindLimits: CAP }, 10, 'w3')).toEqual([]);
      expect(await claimIds(store, { kindLimits: CAP, kinds: ['api'] }, 10, 'w3')).toEqual([]);
      // Another queue: the kind's CLAIMED tasks of the default queue fill its cap too.
      expect(await claimIds(store, { kindLimits: CAP, queue: 'mail' }, 10, 'w3')).toEqual([]);
      expect(await claimIds(store, { kindLimits: { api: 3 }, queue: 'mail' }, 10, 'w3')).toEqual([mail!.id]);
      expect(await claimedOf(store, [...api.map((t) => t.id), mail!.id], 'api')).toBe(3);
      // A claim that does not cap the kind ignores the others' caps (each claim applies its own).
      expect(await claimIds(store, {}, 1, 'w4')).toEqual([api[2]!.id]);
    });

    it('complete, fail, release, snooze and reclaim free the room of the kind', async () => {
      const { store, clock } = h();
      const ids = (await store.scheduleMany(Array.from({ length: 8 }, () => ({ kind: 'api', maxAttempts: 3 })))).map((t) => t.id);
      const claim = async () => store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS, kindLimits: CAP });
      const [c1, c2] = await claim();
      expect(await claim()).toEqual([]);
      expect(await store.complete({ id: c1!.id, attempt: c1!.attempt, owner: 'w1' })).toBe('DONE');
      const [c3, ...none1] = await claim();
      expect(none1).toEqual([]);
      expect(await store.fail({ id: c2!.id, attempt: c2!.attempt, error: 'boom', backoffMs: 60_000 })).toMatchObject({ outcome: TaskState.SCHEDULED });
      const [c4, ...none2] = await claim();
      expect(none2).toEqual([]);
      expect(await store.release({ id: c3!.id, attempt: c3!.attempt })).toBe(TaskState.SCHEDULED);
      const [c5, ...none3] = await claim();
      expect(none3).toEqual([]);
      expect(await store.snooze({ id: c4!.id, attempt: c4!.attempt, delayMs: 60_000 })).toMatchObject({ outcome: TaskState.SCHEDULED });
      const [c6, ...none4] = await claim();
      expect(none4).toEqual([]);
      expect(await claimedOf(store, ids, 'api')).toBe(2);
      expect(await claim()).toEqual([]);
      // Both leases run out; reclaim moves them out of CLAIMED, and the next claim takes two again.
      clock.tick(LEASE_MS + 1);
      expect((await store.reclaimExpired()).map((r) => r.id).sort()).toEqual([c5!.id, c6!.id].sort());
      expect(await claim()).toHaveLength(2);
      expect(await claimedOf(store, ids, 'api')).toBe(2);
    });

    it('uncapped kinds and kinds outside the selection are unaffected; a cap below the CLAIMED count takes none', async () => {
      const { store } = h();
      const [o1, o2] = await store.scheduleMany([{ kind: 'other' }, { kind: 'other' }]);
      const api = await store.scheduleMany(Array.from({ length: 4 }, () => ({ kind: 'api' })));
      expect(await claimIds(store, { kinds: ['other'], kindLimits: { api: 1, x: 1 } }, 10)).toEqual([o1!.id, o2!.id]);
      expect(await claimIds(store, { kindLimits: { api: 3 } }, 3)).toEqual(api.slice(0, 3).map((t) => t.id));
      // 3 api CLAIMED, cap 1: no room (never negative), the claim takes nothing of api.
      expect(await claimIds(store, { kindLimits: { api: 1 } }, 10)).toEqual([]);
      expect(await mustGetTask(store, api[3]!.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      // `{}` caps nothing.
      expect(await claimIds(store, { kindLimits: {} }, 10)).toEqual([api[3]!.id]);
    });

    it('refuses a bad kindLimits with a typed ValidationError, claiming nothing', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'api' });
      const claim = (kindLimits: unknown) => () => store.claim({ owner: 'w1', limit: 1, leaseMs: LEASE_MS, kindLimits: kindLimits as Record<string, number> });
      await expectValidationError(claim(null), 'INVALID_OPTION', 'kindLimits');
      await expectValidationError(claim([2]), 'INVALID_OPTION', 'kindLimits');
      await expectValidationError(claim('api'), 'INVALID_OPTION', 'kindLimits');
      await expectValidationError(claim({ '': 1 }), 'INVALID_KIND', 'kindLimits');
      await expectValidationError(claim({ 'a\u0000b': 1 }), 'INVALID_KIND', 'kindLimits');
      for (const cap of [0, -1, 1.5, MAX_KIND_LIMIT + 1, '2', Number.NaN, null]) {
        await expectValidationError(claim({ api: cap }), 'INVALID_OPTION', 'kindLimits.api');
      }
      await expectValidationError(claim(Object.fromEntries(Array.from({ length: MAX_KIND_LIMITS + 1 }, (_, i) => [`k${i}`, 1]))), 'INVALID_OPTION', 'kindLimits');
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 0 });
      expect(await store.countByState()).toEqual(stateCounts({ [TaskState.SCHEDULED]: 1 }));
      // MAX_KIND_LIMITS kinds and the largest cap are accepted.
      const full = Object.fromEntries(Array.from({ length: MAX_KIND_LIMITS }, (_, i) => [i === 0 ? 'api' : `k${i}`, MAX_KIND_LIMIT]));
      expect(await claimIds(store, { kindLimits: full }, 1)).toEqual([id]);
    });
  });
}
