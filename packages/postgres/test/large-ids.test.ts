/**
 * Large identifiers (issue #26, item 3; docs/contract.md#task-ids): the id sequence restarted just
 * below 2³¹ (where an `int4` column or a signed 32-bit counter breaks) and just below 2⁵³ (where a
 * JavaScript `number` stops being exact: 9007199254740993 reads back as …992). Ids are `bigint` in
 * the database and decimal text in the API, so every call must carry them unrounded across both
 * boundaries: schedule, scheduleMany, getTask, claim, extend, complete, completeMany, fail, retry,
 * cancel, cancelMany, reschedule, waitFor, listTasks with its cursor, getCompletion. Both drivers.
 */
import { TaskState } from '@postpone/core';
import { afterAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { DRIVERS, makeKit, migratedSchema } from './support/kits.js';

const admin = migratedSchema('large_ids');

/** The ids `from`, `from + 1`, … as decimal text, computed exactly (BigInt). */
function idsFrom(from: bigint, n: number): string[] {
  return Array.from({ length: n }, (_, i) => (from + BigInt(i)).toString());
}

const BOUNDARIES = [
  { name: '2^31', first: 2n ** 31n - 3n },
  { name: '2^53', first: 2n ** 53n - 3n },
] as const;

describe.each(DRIVERS)('ids across 2^31 and 2^53 (%s)', (driver) => {
  const kit = makeKit(driver);
  afterAll(async () => {
    await kit.close();
  });

  it.each(BOUNDARIES)('every call keeps ids exact across $name', async ({ first }) => {
    await admin.truncate();
    await admin.query(`alter table ${admin.t('task')} alter column id restart with ${first}`);
    const store = kit.store({ schema: admin.schema }) as PostgresStore<any>;
    try {
      // Six tasks due one after another: their ids straddle the boundary (first, …, first + 5).
      const scheduled = await store.scheduleMany(Array.from({ length: 6 }, (_, i) => ({ kind: 'big', payload: { i }, runAt: new Date(Date.now() - 10_000 + i), maxAttempts: 1 })));
      const ids = idsFrom(first, 6);
      expect(scheduled.map((t) => t.id)).toEqual(ids);
      for (const [i, id] of ids.entries()) expect(await store.getTask(id)).toMatchObject({ id, payload: { i }, state: TaskState.SCHEDULED });

      // Claimed in due order, which is id order here; the lease is renewed by id.
      const claimed = await store.claim({ owner: 'w', limit: 4, leaseMs: 30_000, kinds: ['big'] });
      expect(claimed.map((t) => t.id)).toEqual(ids.slice(0, 4));
      expect(await store.extend({ id: ids[0]!, attempt: 1, leaseMs: 30_000 })).toBe(true);
      expect(await store.complete({ id: ids[0]!, attempt: 1, owner: 'w', result: { id: ids[0] } })).toBe('DONE');
      const many = await store.completeMany([
        { id: ids[1]!, attempt: 1, owner: 'w' },
        { id: ids[2]!, attempt: 1, owner: 'w' },
      ]);
      expect(many).toEqual(['DONE', 'DONE']);
      expect(await store.getCompletion(ids[2]!)).toMatchObject({ taskId: ids[2], attempt: 1, worker: 'w' });
      expect(await store.waitFor(ids[0]!, { timeoutMs: 5_000 })).toMatchObject({ id: ids[0], state: TaskState.DONE, result: { id: ids[0] } });

      // A failure with no attempt left is DEAD; its retry is a new task with the next id, linked both ways.
      expect(await store.fail({ id: ids[3]!, attempt: 1, error: 'boom', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
      const retried = await store.retry({ id: ids[3]! });
      const retryId = (first + 6n).toString();
      expect(retried).toMatchObject({ outcome: 'RETRIED', id: retryId });
      expect(await store.getTaskRecord(retryId)).toMatchObject({ id: retryId, retryOf: ids[3], state: TaskState.SCHEDULED });
      expect(await store.getTaskRecord(ids[3]!)).toMatchObject({ id: ids[3], retriedAs: retryId, state: TaskState.DEAD });

      // Cancel one by id, reschedule one by id, cancel the rest by their ids in bulk.
      expect(await store.cancel(ids[4]!)).toBe('CANCELLED');
      expect(await store.reschedule(ids[5]!, { delayMs: 60_000 })).toMatchObject({ outcome: 'RESCHEDULED' });
      const bulk = await store.cancelMany({ ids: [ids[5]!, retryId] });
      expect(bulk.counts.CANCELLED).toBe(2);

      // Every task listed once, in id order, page by page through the cursor, both orders.
      for (const order of ['oldest', 'newest'] as const) {
        const seen: string[] = [];
        let cursor: string | null = null;
        for (let page = 0; page < 10; page++) {
          const result = await store.listTasks({ order, limit: 2, cursor });
          seen.push(...result.tasks.map((t) => t.id));
          cursor = result.nextCursor;
          if (cursor === null) break;
        }
        const all = [...ids, retryId];
        expect(seen).toEqual(order === 'oldest' ? all : [...all].reverse());
      }
      // The database holds the same digits (no rounding on the way in).
      const rows = await admin.query<{ id: string }>(`select id::text as id from ${admin.t('task_history')} order by id`);
      expect(rows.map((r) => r.id)).toEqual([...ids, retryId]);
    } finally {
      await store.close();
    }
  });
});
