/**
 * What uses up `maxAttempts` (docs/contract.md#attempts): `attempt` grows at every claim because it is
 * the fencing token; `failures` counts apart from it what exhausts a task — a fail (a thrown
 * handler, a timeout) and an expired lease reclaimed (a crash or a stall) — and never a release,
 * the graceful hand-back at shutdown. Issue 10 item 3: two deploys are not two failures.
 */
import { backoffMs, type ClaimedTask, CompleteOutcome, type Store, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, LEASE_MS, mustGetTask, scheduleAndClaim } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

const BASE_MS = 200;

/** Fails the claimed attempt with the worker's rule: the backoff follows the failure count. */
function failAttempt(store: Store<any>, c: ClaimedTask, error = `boom at attempt ${c.attempt}`) {
  return store.fail({ id: c.id, attempt: c.attempt, error, backoffMs: backoffMs(BASE_MS, c.failures + 1) });
}

export function failuresCases(h: HarnessRef): void {
  describe('failures: what uses up maxAttempts', () => {
    it('a release is not a failure: maxAttempts 2, claim → release twice, then a fail at attempt 3 is SCHEDULED', async () => {
      const { store, clock } = h();
      let c = await scheduleAndClaim(store, { maxAttempts: 2 });
      for (const attempt of [1, 2]) {
        expect(c).toMatchObject({ attempt, failures: 0 });
        expect(await store.release({ id: c.id, attempt: c.attempt })).toBe('SCHEDULED');
        expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt, failures: 0 });
        c = await claimExactly(store, c.id);
      }
      expect(c).toMatchObject({ attempt: 3, failures: 0, maxAttempts: 2 });
      // The first failure: due again after the first backoff step (200 ms), not the third (800 ms).
      expect(await failAttempt(store, c)).toEqual({ outcome: 'SCHEDULED', dueAt: new Date(clock.now() + BASE_MS) });
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 3, failures: 1 });
      clock.tick(BASE_MS);
      const last = await claimExactly(store, c.id);
      expect(last).toMatchObject({ attempt: 4, failures: 1 });
      expect(await failAttempt(store, last)).toEqual({ outcome: 'DEAD' });
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.DEAD, attempt: 4, failures: 2 });
    });

    it('releases alone never make a task DEAD: maxAttempts 1, five releases, then DONE at attempt 6', async () => {
      const { store } = h();
      let c = await scheduleAndClaim(store, { maxAttempts: 1 });
      for (let i = 0; i < 5; i++) {
        expect(await store.release({ id: c.id, attempt: c.attempt })).toBe('SCHEDULED');
        c = await claimExactly(store, c.id);
      }
      expect(c).toMatchObject({ attempt: 6, failures: 0, maxAttempts: 1 });
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.DONE);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.DONE, attempt: 6, failures: 0 });
      expect(await store.getCompletion(c.id)).toMatchObject({ attempt: 6 });
    });

    it('an expired lease reclaimed counts as a failure: maxAttempts 2, reclaim → release → reclaim is DEAD', async () => {
      const { store, clock } = h();
      const c1 = await scheduleAndClaim(store, { maxAttempts: 2 });
      clock.tick(LEASE_MS + 1);
      expect(await store.reclaimExpired()).toEqual([{ id: c1.id, attempt: 1, outcome: 'SCHEDULED' }]);
      expect(await mustGetTask(store, c1.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 1, failures: 1 });

      const c2 = await claimExactly(store, c1.id);
      expect(c2).toMatchObject({ attempt: 2, failures: 1 });
      expect(await store.release({ id: c2.id, attempt: c2.attempt })).toBe('SCHEDULED');
      expect(await mustGetTask(store, c1.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 2, failures: 1 });

      const c3 = await claimExactly(store, c1.id);
      expect(c3).toMatchObject({ attempt: 3, failures: 1 });
      clock.tick(LEASE_MS + 1);
      expect(await store.reclaimExpired()).toEqual([{ id: c1.id, attempt: 3, outcome: 'DEAD' }]);
      expect(await mustGetTask(store, c1.id)).toMatchObject({ state: TaskState.DEAD, attempt: 3, failures: 2 });
    });

    it('the DEAD boundary with releases and failures mixed: maxAttempts 3 dies at the third failure, not the sixth claim before it', async () => {
      const { store, clock } = h();
      const { id } = await store.schedule({ kind: 'job', maxAttempts: 3 });
      // release, fail, release, reclaim, release, fail: failures 0, 1, 1, 2, 2, 3.
      const steps = ['release', 'fail', 'release', 'reclaim', 'release', 'fail'] as const;
      const seen: string[] = [];
      let failures = 0;
      for (const [i, step] of steps.entries()) {
        const c = await claimExactly(store, id);
        expect(c, `claim ${i + 1}`).toMatchObject({ attempt: i + 1, failures });
        let outcome: string;
        if (step === 'release') {
          outcome = await store.release({ id, attempt: c.attempt });
        } else if (step === 'fail') {
          outcome = (await failAttempt(store, c)).outcome;
          failures += 1;
        } else {
          clock.tick(LEASE_MS + 1);
          const reclaimed = await store.reclaimExpired();
          expect(reclaimed.map((r) => r.id)).toEqual([id]);
          outcome = (reclaimed[0] as { outcome: string }).outcome;
          failures += 1;
        }
        seen.push(`${step}:${outcome}`);
        expect(await mustGetTask(store, id), `after ${step} ${i + 1}`).toMatchObject({ attempt: i + 1, failures });
        clock.tick(10_000); // past any backoff
      }
      expect(seen).toEqual(['release:SCHEDULED', 'fail:SCHEDULED', 'release:SCHEDULED', 'reclaim:SCHEDULED', 'release:SCHEDULED', 'fail:DEAD']);
      expect(await mustGetTask(store, id)).toMatchObject({ state: TaskState.DEAD, attempt: 6, failures: 3 });
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
    });

    it('complete and extend leave failures as they are', async () => {
      const { store, clock } = h();
      const c1 = await scheduleAndClaim(store, { maxAttempts: 3 });
      expect(await failAttempt(store, c1)).toMatchObject({ outcome: 'SCHEDULED' });
      clock.tick(BASE_MS);
      const c2 = await claimExactly(store, c1.id);
      expect(await store.extend({ id: c2.id, attempt: c2.attempt, leaseMs: LEASE_MS })).toBe(true);
      expect(await mustGetTask(store, c1.id)).toMatchObject({ state: TaskState.CLAIMED, attempt: 2, failures: 1 });
      expect(await store.complete({ id: c2.id, attempt: c2.attempt, owner: 'w1' })).toBe(CompleteOutcome.DONE);
      expect(await mustGetTask(store, c1.id)).toMatchObject({ state: TaskState.DONE, attempt: 2, failures: 1 });
    });

    it('a stale fail or release counts nothing', async () => {
      const { store, clock } = h();
      const c1 = await scheduleAndClaim(store, { maxAttempts: 2 });
      expect(await store.release({ id: c1.id, attempt: c1.attempt })).toBe('SCHEDULED');
      const c2 = await claimExactly(store, c1.id);
      expect(await failAttempt(store, c1)).toEqual({ outcome: 'REJECTED_STALE' });
      expect(await store.release({ id: c1.id, attempt: c1.attempt })).toBe('REJECTED_STALE');
      expect(await mustGetTask(store, c1.id)).toMatchObject({ state: TaskState.CLAIMED, attempt: 2, failures: 0 });
      clock.tick(1);
      expect(await store.extend({ id: c2.id, attempt: c2.attempt, leaseMs: LEASE_MS })).toBe(true);
    });
  });
}
