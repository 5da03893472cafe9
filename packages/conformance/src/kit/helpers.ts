/**
 * Small assertions and fixtures shared by the conformance cases (and reusable by differential tests).
 */
import {
  PostponeError,
  type PostponeErrorCode,
  TASK_STATES,
  type ClaimedTask,
  type ScheduleInput,
  type StateCounts,
  type Store,
  type Task,
  type TaskId,
  type TaskState,
  ValidationError,
  type ValidationCode,
} from '@postpone/core';
import { expect } from 'vitest';

/** Default lease used by the cases, in ms. */
export const LEASE_MS = 1_000;

/**
 * Runs `fn` and returns what it threw or rejected with; fails the test when it succeeds.
 * Catches synchronous throws too, so a store may validate before or after going async.
 */
export async function captureError(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw, but it succeeded');
}

/** Asserts that `fn` fails with a {@link ValidationError} of `code` (and `field`, when given). */
export async function expectValidationError(fn: () => unknown, code: ValidationCode, field?: string): Promise<ValidationError> {
  const error = await captureError(fn);
  expect(ValidationError.isInstance(error), `expected a ValidationError ${code}, got ${String(error)}`).toBe(true);
  const v = error as ValidationError;
  expect(v.code).toBe(code);
  if (field !== undefined) expect(v.field).toBe(field);
  return v;
}

/** Asserts that `fn` fails with a {@link PostponeError} of `code`. */
export async function expectPostponeError(fn: () => unknown, code?: PostponeErrorCode): Promise<PostponeError> {
  const error = await captureError(fn);
  expect(PostponeError.isInstance(error), `expected a PostponeError, got ${String(error)}`).toBe(true);
  const p = error as PostponeError;
  if (code !== undefined) expect(p.code).toBe(code);
  return p;
}

/** A {@link StateCounts} with every state at 0, overridden by `counts`. */
export function stateCounts(counts: Partial<Record<TaskState, number>> = {}): StateCounts {
  const out = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<TaskState, number>;
  return { ...out, ...counts };
}

/** Reads a task that must exist. */
export async function mustGetTask(store: Store<any>, id: TaskId): Promise<Task> {
  const task = await store.getTask(id);
  expect(task, `task ${id} should exist`).not.toBeNull();
  return task as Task;
}

/** Claims with limit 1 and asserts that exactly the task `id` was claimed. */
export async function claimExactly(store: Store<any>, id: TaskId, owner = 'w1', leaseMs = LEASE_MS): Promise<ClaimedTask> {
  const claimed = await store.claim({ owner, limit: 1, leaseMs });
  expect(claimed.map((c) => c.id)).toEqual([id]);
  return claimed[0] as ClaimedTask;
}

/** Schedules one task due now and claims it; the store must hold no other due task. */
export async function scheduleAndClaim(
  store: Store<any>,
  input: Partial<ScheduleInput> = {},
  owner = 'w1',
  leaseMs = LEASE_MS,
): Promise<ClaimedTask> {
  const { id } = await store.schedule({ kind: 'job', ...input });
  return claimExactly(store, id, owner, leaseMs);
}

/** The whole observable state of one task: its row and its completion (what history says of its DONE). */
export async function observe(store: Store<any>, id: TaskId): Promise<{ task: Task | null; completion: unknown }> {
  return { task: await store.getTask(id), completion: await store.getCompletion(id) };
}
