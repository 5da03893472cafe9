/**
 * The table constraints of the SQL schema, enforced in memory with the same SQLSTATE codes
 * (PostgreSQL 17 Appendix A) so callers see the same errors from every store.
 */
import { StoreError, TaskState, type Task } from '@postpone/core';

/** PostgreSQL 17 Appendix A, class 23 (integrity constraint violation) and 25 (invalid transaction state). */
export const SqlState = Object.freeze({
  CHECK_VIOLATION: '23514',
  UNIQUE_VIOLATION: '23505',
  INVALID_TRANSACTION_STATE: '25000',
  SERIALIZATION_FAILURE: '40001',
} as const);

/** The name the SQL schema gives the lease CHECK constraint. */
export const LEASE_CHECK = 'task_lease_check';

/**
 * The lease CHECK of docs/contract.md#data-model: `(state = 'CLAIMED') = (lease_owner IS NOT NULL AND lease_until IS NOT NULL)`.
 */
export function leaseCheckHolds(row: Pick<Task, 'state' | 'leaseOwner' | 'leaseUntil'>): boolean {
  return (row.state === TaskState.CLAIMED) === (row.leaseOwner !== null && row.leaseUntil !== null);
}

export function checkViolation(table: string, constraint: string): StoreError {
  return new StoreError(`new row for relation "${table}" violates check constraint "${constraint}"`, SqlState.CHECK_VIOLATION);
}

export function uniqueViolation(table: string, key: string, constraint = `${table}_pkey`): StoreError {
  return new StoreError(`duplicate key value violates unique constraint "${constraint}": (${key}) already exists`, SqlState.UNIQUE_VIOLATION);
}

export function transactionFinished(status: string): StoreError {
  return new StoreError(`the transaction is already ${status}`, SqlState.INVALID_TRANSACTION_STATE);
}

/** A transaction's commit lost to one that changed the same task first (PostgreSQL 17 §13.2.2 reports this 40001). */
export function serializationFailure(id: string): StoreError {
  return new StoreError(`could not serialize access due to concurrent update of task ${id}`, SqlState.SERIALIZATION_FAILURE);
}
