/**
 * Lifecycle: migrate is repeatable and keeps data; after close every call throws StoreClosedError.
 */
import { StoreClosedError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { expectPostponeError, mustGetTask } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';

export function lifecycleCases(h: HarnessRef): void {
  describe('lifecycle', () => {
    it('migrate again keeps the data', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'k', payload: { keep: true } });
      await store.migrate();
      expect((await mustGetTask(store, id)).payload).toEqual({ keep: true });
    });

    it('after close every call throws StoreClosedError; close is idempotent', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'k' });
      await store.close();
      await store.close();
      const calls: [string, () => unknown][] = [
        ['migrate', () => store.migrate()],
        ['schedule', () => store.schedule({ kind: 'k' })],
        ['scheduleMany', () => store.scheduleMany([{ kind: 'k' }])],
        ['cancel', () => store.cancel(id)],
        ['claim', () => store.claim({ owner: 'w1', limit: 1, leaseMs: 1_000 })],
        ['extend', () => store.extend({ id, attempt: 1, leaseMs: 1_000 })],
        ['complete', () => store.complete({ id, attempt: 1, owner: 'w1' })],
        ['fail', () => store.fail({ id, attempt: 1, error: 'x', backoffMs: 0 })],
        ['release', () => store.release({ id, attempt: 1 })],
        ['reclaimExpired', () => store.reclaimExpired()],
        ['peekDue', () => store.peekDue({ withinMs: 1_000 })],
        ['getTask', () => store.getTask(id)],
        ['getCompletion', () => store.getCompletion(id)],
        ['countByState', () => store.countByState()],
        ['now', () => store.now()],
      ];
      for (const [name, call] of calls) {
        const error = await expectPostponeError(call, 'STORE_CLOSED');
        expect(error.name, name).toBe(new StoreClosedError().name);
      }
    });
  });
}
