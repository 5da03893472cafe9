import type { Store, TaskId, TaskState, TestClock } from '@postpone/core';

/**
 * What a store adapter hands the conformance suite for one test. A fresh harness is made before
 * every test and cleaned up after it, so no test sees another's rows.
 */
export interface ConformanceHarness<Tx = unknown> {
  /** A migrated, empty store built with {@link clock} injected: every "now" of the store is `clock.now()`. */
  store: Store<Tx>;
  /** The clock injected into {@link store}; the suite moves it with `tick`. */
  clock: TestClock;
  /**
   * Raw write bypassing the API (PostgreSQL: `UPDATE task SET state, lease_owner, lease_until WHERE id`).
   * It must be refused by the store's own constraint, not by this function: a CLAIMED row without a
   * full lease, or a full lease on a row that is not CLAIMED, rejects with a PostponeError
   * (PostgreSQL: StoreError with sqlState `23514`, check_violation) and leaves the row unchanged.
   */
  forceRow(id: TaskId, patch: { state: TaskState; leaseOwner: string | null; leaseUntil: Date | null }): Promise<void>;
  /** Runs `fn` in a store-native transaction of the harness's own making, then commits ('commit') or rolls back ('rollback'). */
  inTransaction(fn: (tx: Tx) => Promise<void>, end: 'commit' | 'rollback'): Promise<void>;
  /** Inside `tx`, writes a marker row for `taskId` (a stand-in for a handler's own business write). */
  writeMarker(tx: Tx, taskId: TaskId): Promise<void>;
  /** True when a committed marker row exists for `taskId`. */
  readMarker(taskId: TaskId): Promise<boolean>;
  /** Releases everything the harness made (schema, connections); must work after `store.close()`. */
  cleanup(): Promise<void>;
}

/** The current test's harness (the suite makes a new one before each test). */
export type HarnessRef = () => ConformanceHarness<any>;
