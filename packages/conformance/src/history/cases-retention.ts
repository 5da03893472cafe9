/**
 * History retention (docs/contract.md#retention): `prune({ retention })` deletes the history of each
 * named terminal state finished more than its retention before the store's now (a DONE with its completion),
 * and never a row within its retention or of a state it does not name. On PostgreSQL whole partitions
 * (one state, one UTC day) go, so a row may outlive its retention by up to a day: these cases place
 * finished tasks so that both rules give the same answer (finished early on a UTC day, pruned days later).
 */
import { CompleteOutcome, TaskState } from '@postpone/core';
import { expectValidationError, mustGetTask, scheduleAndClaim } from '../kit/helpers.js';
import type { HarnessRef } from '../kit/harness.js';
import { makeTerminal } from '../kit/fixtures.js';
import { describe, expect, it } from 'vitest';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

export function retentionCases(h: HarnessRef): void {
  describe('history retention', () => {
    it('prune({ retention }) deletes each named state past its retention (with completions); newer rows and unnamed states stay', async () => {
      const { store, clock } = h();
      // The suite's clock starts at a UTC midnight; one hour into that day.
      clock.setTime(Math.floor(clock.now() / DAY_MS) * DAY_MS + HOUR_MS);
      const oldDone = await makeTerminal(store, 'DONE');
      const oldDead = await makeTerminal(store, 'DEAD');
      const oldCancelled = await makeTerminal(store, 'CANCELLED_WAITING');
      const live = await store.schedule({ kind: 'r-live', delayMs: 30 * DAY_MS });
      clock.tick(3 * DAY_MS);
      const c = await scheduleAndClaim(store, { kind: 'r-new' });
      expect(await store.complete({ id: c.id, attempt: c.attempt, owner: 'w1' })).toBe(CompleteOutcome.DONE);

      const pruned = await store.prune({ retention: { DONE: DAY_MS, CANCELLED: DAY_MS } });
      expect(pruned).toMatchObject({ deleted: 2, effectsDeleted: 0 });
      expect(await store.getTask(oldDone.id)).toBeNull();
      expect(await store.getCompletion(oldDone.id)).toBeNull();
      expect(await store.getTask(oldCancelled.id)).toBeNull();
      expect(await mustGetTask(store, oldDead.id)).toMatchObject({ state: TaskState.DEAD });
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.DONE });
      expect(await store.getCompletion(c.id)).not.toBeNull();
      expect(await mustGetTask(store, live.id)).toMatchObject({ state: TaskState.SCHEDULED });

      // DEAD three days old is within a retention of seven days: kept; past it, deleted.
      expect(await store.prune({ retention: { DEAD: 7 * DAY_MS } })).toMatchObject({ deleted: 0, effectsDeleted: 0 });
      expect(await mustGetTask(store, oldDead.id)).toMatchObject({ state: TaskState.DEAD });
      clock.tick(6 * DAY_MS);
      expect(await store.prune({ retention: { DEAD: 7 * DAY_MS } })).toMatchObject({ deleted: 1, effectsDeleted: 0 });
      expect(await store.getTask(oldDead.id)).toBeNull();
      expect(await store.countByState()).toMatchObject({ DONE: 1, DEAD: 0, CANCELLED: 0, SCHEDULED: 1 });
      // Pruning again finds nothing more.
      expect(await store.prune({ retention: { DONE: DAY_MS, DEAD: DAY_MS, CANCELLED: DAY_MS } })).toMatchObject({ deleted: 1, effectsDeleted: 0 });
      expect(await store.getTask(c.id)).toBeNull();
      expect(await store.prune({ retention: { DONE: DAY_MS, DEAD: DAY_MS, CANCELLED: DAY_MS } })).toMatchObject({ deleted: 0 });
    });

    it('a task finished after a retention prune is kept until it is past its own retention', async () => {
      const { store, clock } = h();
      clock.setTime(Math.floor(clock.now() / DAY_MS) * DAY_MS + HOUR_MS);
      const done = await makeTerminal(store, 'DONE');
      expect(await store.prune({ retention: { DONE: 0 } })).toMatchObject({ deleted: 0 });
      expect(await mustGetTask(store, done.id)).toMatchObject({ state: TaskState.DONE });
      clock.tick(2 * DAY_MS);
      expect(await store.prune({ retention: { DONE: HOUR_MS } })).toMatchObject({ deleted: 1, effectsDeleted: 0 });
      expect(await store.getTask(done.id)).toBeNull();
    });

    it('a bad retention is a ValidationError naming the field, and nothing is deleted', async () => {
      const { store } = h();
      const done = await makeTerminal(store, 'DONE');
      await expectValidationError(() => store.prune({ retention: {} }), 'INVALID_OPTION', 'retention');
      await expectValidationError(() => store.prune({ retention: { SCHEDULED: 1 } as never }), 'INVALID_OPTION', 'retention.SCHEDULED');
      await expectValidationError(() => store.prune({ retention: { DONE: -1 } }), 'INVALID_DELAY', 'retention.DONE');
      await expectValidationError(() => store.prune({ retention: 'day' as never }), 'INVALID_OPTION', 'retention');
      await expectValidationError(() => store.prune({ retention: { DONE: 0 }, olderThanMs: 0 }), 'INVALID_OPTION', 'before');
      expect(await mustGetTask(store, done.id)).toMatchObject({ state: TaskState.DONE });
    });
  });
}
