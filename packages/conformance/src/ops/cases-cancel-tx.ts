/**
 * `cancel(id, { tx })` in the caller's transaction (docs/contract.md#transactions): it commits or
 * rolls back with the caller's own writes, and sees the caller's own uncommitted schedule.
 */
import { CancelOutcome, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';

export function cancelTxCases(h: HarnessRef): void {
  describe('cancel in the caller transaction', () => {
    it('rollback leaves the task SCHEDULED and no marker; commit leaves it CANCELLED with the marker', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'k', delayMs: 60_000 });
      await h().inTransaction(async (tx) => {
        expect(await store.cancel(id, { tx })).toBe(CancelOutcome.CANCELLED);
        await h().writeMarker(tx, id);
      }, 'rollback');
      expect((await store.getTask(id))?.state).toBe(TaskState.SCHEDULED);
      expect(await h().readMarker(id)).toBe(false);

      await h().inTransaction(async (tx) => {
        expect(await store.cancel(id, { tx })).toBe(CancelOutcome.CANCELLED);
        expect(await store.cancel(id, { tx })).toBe(CancelOutcome.ALREADY_CANCELLED); // its own write is seen
        await h().writeMarker(tx, id);
      }, 'commit');
      expect((await store.getTask(id))?.state).toBe(TaskState.CANCELLED);
      expect(await h().readMarker(id)).toBe(true);
    });

    it('a CLAIMED task gets REQUESTED on commit only; a task scheduled in the same transaction is cancelled with it', async () => {
      const { store } = h();
      const claimed = await store.schedule({ kind: 'c' });
      await claimExactly(store, claimed.id);
      await h().inTransaction(async (tx) => {
        expect(await store.cancel(claimed.id, { tx })).toBe(CancelOutcome.REQUESTED);
      }, 'rollback');
      expect((await store.getTask(claimed.id))?.cancelRequested).toBe(false);
      let fresh = '';
      await h().inTransaction(async (tx) => {
        expect(await store.cancel(claimed.id, { tx })).toBe(CancelOutcome.REQUESTED);
        fresh = (await store.schedule({ kind: 'n' }, { tx })).id;
        expect(await store.cancel(fresh, { tx })).toBe(CancelOutcome.CANCELLED);
        expect(await store.cancel('987654321', { tx })).toBe(CancelOutcome.NOT_FOUND);
      }, 'commit');
      expect(await store.getTask(claimed.id)).toMatchObject({ state: TaskState.CLAIMED, cancelRequested: true });
      expect((await store.getTask(fresh))?.state).toBe(TaskState.CANCELLED);
    });

    it('bad options are refused before anything changes', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'k' });
      await expect(store.cancel(id, { tx: undefined, extra: 1 } as never)).rejects.toMatchObject({ code: 'INVALID_OPTION', field: 'options.extra' });
      await expect(store.cancel(id, 'tx' as never)).rejects.toMatchObject({ code: 'INVALID_OPTION', field: 'options' });
      await expect(store.cancel(id, { tx: 42 } as never)).rejects.toMatchObject({ code: 'INVALID_OPTION', field: 'tx' });
      expect((await store.getTask(id))?.state).toBe(TaskState.SCHEDULED);
    });
  });
}
