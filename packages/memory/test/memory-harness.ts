/**
 * The conformance harness of the in-memory store: raw writes go through `rawUpdateTask`, the
 * caller's transaction is `store.transaction`, markers live in a caller table.
 */
import type { ConformanceHarness } from '@postpone/conformance';
import { TestClock } from '@postpone/core';
import { createMemoryStore, type MemoryStoreOptions, type MemoryTx } from '../src/index.js';

const MARKER_TABLE = 'marker';

class Rollback extends Error {}

export async function makeMemoryHarness(options: Omit<MemoryStoreOptions, 'clock'> = {}): Promise<ConformanceHarness<MemoryTx>> {
  const clock = new TestClock();
  const store = createMemoryStore({ ...options, clock });
  return {
    store,
    clock,
    forceRow: async (id, patch) => {
      await store.rawUpdateTask(id, patch);
    },
    inTransaction: async (fn, end) => {
      try {
        await store.transaction(async (tx) => {
          await fn(tx);
          if (end === 'rollback') throw new Rollback();
        });
      } catch (error) {
        if (!(error instanceof Rollback)) throw error;
      }
    },
    writeMarker: async (tx, taskId) => tx.insert(MARKER_TABLE, taskId, { taskId }),
    readMarker: async (taskId) => store.table(MARKER_TABLE).has(taskId),
    cleanup: async () => store.close(),
  };
}
