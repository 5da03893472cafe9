/**
 * transition(): every arrow and every rejection of docs/contract.md#transitions, as one table, plus properties that
 * hold for any row and command (terminal rows never change; the lease CHECK is preserved).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Command,
  LEASE_EXPIRED_ERROR,
  type Result,
  type Task,
  TASK_STATES,
  TaskState,
  isTerminal,
  transition,
} from '../src/index.js';

const NOW = Date.UTC(2030, 0, 1, 12);
const T = (offsetMs: number) => new Date(NOW + offsetMs);

function task(patch: Partial<Task> = {}): Task {
  return {
    id: '7',
    kind: 'k',
    key: null,
    queue: 'default',
    priority: 0,
    payload: { n: 1 },
    state: TaskState.SCHEDULED,
    dueAt: T(-1_000),
    attempt: 0,
    failures: 0,
    maxAttempts: 3,
    leaseOwner: null,
    leaseUntil: null,
    cancelRequested: false,
    result: null,
    lastError: null,
    createdAt: T(-5_000),
    updatedAt: T(-5_000),
    ...patch,
  };
}

/** A CLAIMED row of attempt 1 whose lease runs until NOW + 500 ms. */
const claimed = (patch: Partial<Task> = {}) => task({ state: TaskState.CLAIMED, attempt: 1, leaseOwner: 'w1', leaseUntil: T(500), ...patch });
const done = () => task({ state: TaskState.DONE, attempt: 1, result: 'r' });
const cancelledWaiting = () => task({ state: TaskState.CANCELLED });
const cancelledRunning = () => task({ state: TaskState.CANCELLED, attempt: 1, cancelRequested: true });
const dead = () => task({ state: TaskState.DEAD, attempt: 3, failures: 3, lastError: 'boom' });

/** `UNCHANGED`: the same row object comes back. Otherwise the fields that changed (updatedAt = NOW is implied unless given). */
const UNCHANGED = 'unchanged' as const;

type Row = [name: string, before: Task | null, command: Command, result: Result, after: typeof UNCHANGED | Partial<Task>];

const claim: Command = { type: 'claim', owner: 'w2', leaseMs: 1_000 };
const complete = (attempt = 1): Command => ({ type: 'complete', attempt, result: { ok: true } });
/** A complete with DONE not kept (docs/contract.md#done-not-kept). */
const completeDrop = (attempt = 1): Command => ({ type: 'complete', attempt, result: { ok: true }, keep: false });
const fail = (attempt = 1): Command => ({ type: 'fail', attempt, error: 'boom', backoffMs: 200 });
const failWith = (extra: { retryable?: boolean; maxAttempts?: number }, attempt = 1): Command => ({ type: 'fail', attempt, error: 'boom', backoffMs: 200, ...extra });
const extend = (attempt = 1): Command => ({ type: 'extend', attempt, leaseMs: 2_000 });
const release = (attempt = 1): Command => ({ type: 'release', attempt });
const cancel: Command = { type: 'cancel' };
const reclaim: Command = { type: 'reclaim' };
const STALE_COMPLETE: Result = { type: 'complete', outcome: 'REJECTED_STALE', keepDone: false };
const STALE_FAIL: Result = { type: 'fail', result: { outcome: 'REJECTED_STALE' } };
const NO_CLAIM: Result = { type: 'claim', claimed: false };
const NO_EXTEND: Result = { type: 'extend', extended: false };
const NO_RECLAIM: Result = { type: 'reclaim', outcome: null };
const replace: Command = { type: 'replace', payload: { n: 2 }, dueAt: T(9_000) };
const STALE_RELEASE: Result = { type: 'release', outcome: 'REJECTED_STALE' };

const ROWS: Row[] = [
  // schedule → SCHEDULED is an insert, not a transition. SCHEDULED → CLAIMED:
  ['claim: due task (dueAt < now)', task(), claim, { type: 'claim', claimed: true }, { state: 'CLAIMED', attempt: 1, leaseOwner: 'w2', leaseUntil: T(1_000) }],
  ['claim: due exactly now', task({ dueAt: T(0) }), claim, { type: 'claim', claimed: true }, { state: 'CLAIMED', attempt: 1, leaseOwner: 'w2', leaseUntil: T(1_000) }],
  ['claim: second claim increments attempt', task({ attempt: 2 }), claim, { type: 'claim', claimed: true }, { state: 'CLAIMED', attempt: 3, leaseOwner: 'w2', leaseUntil: T(1_000) }],
  ['claim rejected: due 1 ms later', task({ dueAt: T(1) }), claim, NO_CLAIM, UNCHANGED],
  ['claim rejected: CLAIMED', claimed(), claim, NO_CLAIM, UNCHANGED],
  ['claim rejected: DONE', done(), claim, NO_CLAIM, UNCHANGED],
  ['claim rejected: CANCELLED', cancelledWaiting(), claim, NO_CLAIM, UNCHANGED],
  ['claim rejected: DEAD', dead(), claim, NO_CLAIM, UNCHANGED],
  ['claim rejected: missing', null, claim, NO_CLAIM, UNCHANGED],

  // cancel: SCHEDULED → CANCELLED, CLAIMED → CLAIMED (requested), terminal → no change.
  ['cancel: SCHEDULED → CANCELLED', task(), cancel, { type: 'cancel', outcome: 'CANCELLED' }, { state: 'CANCELLED' }],
  ['cancel: CLAIMED → REQUESTED', claimed(), cancel, { type: 'cancel', outcome: 'REQUESTED' }, { cancelRequested: true }],
  ['cancel: CLAIMED already requested → REQUESTED', claimed({ cancelRequested: true }), cancel, { type: 'cancel', outcome: 'REQUESTED' }, {}],
  ['cancel: CANCELLED → ALREADY_CANCELLED', cancelledWaiting(), cancel, { type: 'cancel', outcome: 'ALREADY_CANCELLED' }, UNCHANGED],
  ['cancel: DONE → TOO_LATE', done(), cancel, { type: 'cancel', outcome: 'TOO_LATE' }, UNCHANGED],
  ['cancel: DEAD → TOO_LATE', dead(), cancel, { type: 'cancel', outcome: 'TOO_LATE' }, UNCHANGED],
  ['cancel: missing → NOT_FOUND', null, cancel, { type: 'cancel', outcome: 'NOT_FOUND' }, UNCHANGED],

  // extend: only the current attempt, not cancel-requested, lease still running.
  // A renewal changes the lease only; updatedAt stays (HOT renewals, docs/contract.md#vacuum).
  ['extend: current attempt', claimed(), extend(), { type: 'extend', extended: true }, { leaseUntil: T(2_000), updatedAt: T(-5_000) }],
  ['extend rejected: stale attempt', claimed({ attempt: 2 }), extend(1), NO_EXTEND, UNCHANGED],
  ['extend rejected: cancel requested', claimed({ cancelRequested: true }), extend(), NO_EXTEND, UNCHANGED],
  ['extend rejected: lease ends now', claimed({ leaseUntil: T(0) }), extend(), NO_EXTEND, UNCHANGED],
  ['extend rejected: lease expired', claimed({ leaseUntil: T(-1) }), extend(), NO_EXTEND, UNCHANGED],
  ['extend rejected: SCHEDULED', task({ attempt: 1 }), extend(), NO_EXTEND, UNCHANGED],
  ['extend rejected: DONE', done(), extend(), NO_EXTEND, UNCHANGED],
  ['extend rejected: missing', null, extend(), NO_EXTEND, UNCHANGED],

  // complete: CLAIMED → DONE (effect) or → CANCELLED when requested; retries report the first answer.
  ['complete: CLAIMED → DONE, kept with its completion', claimed(), complete(), { type: 'complete', outcome: 'DONE', keepDone: true }, { state: 'DONE', result: { ok: true }, leaseOwner: null, leaseUntil: null }],
  ['complete: after an earlier failure → DONE, lastError cleared', claimed({ attempt: 2, failures: 1, lastError: LEASE_EXPIRED_ERROR }), complete(2), { type: 'complete', outcome: 'DONE', keepDone: true }, { state: 'DONE', result: { ok: true }, failures: 1, lastError: null, leaseOwner: null, leaseUntil: null }],
  ['complete: after lease expiry but before reclaim → DONE', claimed({ leaseUntil: T(-1) }), complete(), { type: 'complete', outcome: 'DONE', keepDone: true }, { state: 'DONE', result: { ok: true }, leaseOwner: null, leaseUntil: null }],
  ['complete: cancel requested → CANCELLED, no effect', claimed({ cancelRequested: true }), complete(), { type: 'complete', outcome: 'CANCELLED_BEFORE_COMMIT', keepDone: false }, { state: 'CANCELLED', leaseOwner: null, leaseUntil: null }],
  ['complete retried: DONE stays DONE, no second completion', done(), complete(), { type: 'complete', outcome: 'DONE', keepDone: false }, UNCHANGED],
  ['complete retried: cancelled while running', cancelledRunning(), complete(), { type: 'complete', outcome: 'CANCELLED_BEFORE_COMMIT', keepDone: false }, UNCHANGED],
  ['complete rejected: stale attempt', claimed({ attempt: 2 }), complete(1), STALE_COMPLETE, UNCHANGED],
  ['complete rejected: attempt from the future', claimed(), complete(2), STALE_COMPLETE, UNCHANGED],
  ['complete rejected: DONE by another attempt', task({ state: 'DONE', attempt: 2 }), complete(1), STALE_COMPLETE, UNCHANGED],
  ['complete rejected: reclaimed to SCHEDULED', task({ attempt: 1 }), complete(1), STALE_COMPLETE, UNCHANGED],
  ['complete rejected: CANCELLED while waiting', cancelledWaiting(), complete(1), STALE_COMPLETE, UNCHANGED],
  ['complete rejected: DEAD', dead(), complete(3), STALE_COMPLETE, UNCHANGED],
  ['complete rejected: missing', null, complete(), STALE_COMPLETE, UNCHANGED],
  // complete with keep false: the DONE row is dropped (no effect); CANCELLED is kept; a missing task is NOT_FOUND.
  ['complete keep false: CLAIMED → DONE, dropped, no effect', claimed(), completeDrop(), { type: 'complete', outcome: 'DONE', keepDone: false, drop: true }, { state: 'DONE', result: { ok: true }, leaseOwner: null, leaseUntil: null }],
  ['complete keep false: cancel requested → CANCELLED (kept)', claimed({ cancelRequested: true }), completeDrop(), { type: 'complete', outcome: 'CANCELLED_BEFORE_COMMIT', keepDone: false }, { state: 'CANCELLED', leaseOwner: null, leaseUntil: null }],
  ['complete keep false: missing → NOT_FOUND', null, completeDrop(), { type: 'complete', outcome: 'NOT_FOUND', keepDone: false }, UNCHANGED],
  ['complete keep false rejected: stale attempt', claimed({ attempt: 2 }), completeDrop(1), STALE_COMPLETE, UNCHANGED],
  ['complete keep false: DONE kept by this attempt → DONE', done(), completeDrop(), { type: 'complete', outcome: 'DONE', keepDone: false }, UNCHANGED],

  // fail: CLAIMED → SCHEDULED (backoff) / DEAD / CANCELLED.
  ['fail: attempts left → SCHEDULED after backoff', claimed(), fail(), { type: 'fail', result: { outcome: 'SCHEDULED', dueAt: T(200) } }, { state: 'SCHEDULED', dueAt: T(200), failures: 1, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['fail: attempts exhausted → DEAD', claimed({ attempt: 3, failures: 2 }), fail(3), { type: 'fail', result: { outcome: 'DEAD' } }, { state: 'DEAD', failures: 3, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['fail: attempt 3 after 2 releases is failure 1 → SCHEDULED', claimed({ attempt: 3, failures: 0 }), fail(3), { type: 'fail', result: { outcome: 'SCHEDULED', dueAt: T(200) } }, { state: 'SCHEDULED', dueAt: T(200), failures: 1, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['fail: attempt 5 after 2 releases and 2 failures → DEAD', claimed({ attempt: 5, failures: 2 }), fail(5), { type: 'fail', result: { outcome: 'DEAD' } }, { state: 'DEAD', failures: 3, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['fail: failures already past maxAttempts (migrated row) → DEAD', claimed({ attempt: 5, failures: 4 }), fail(5), { type: 'fail', result: { outcome: 'DEAD' } }, { state: 'DEAD', failures: 5, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['fail: cancel requested → CANCELLED (before DEAD)', claimed({ attempt: 3, failures: 2, cancelRequested: true }), fail(3), { type: 'fail', result: { outcome: 'CANCELLED' } }, { state: 'CANCELLED', failures: 3, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['fail rejected: stale attempt', claimed({ attempt: 2 }), fail(1), STALE_FAIL, UNCHANGED],
  ['fail rejected: SCHEDULED', task({ attempt: 1 }), fail(1), STALE_FAIL, UNCHANGED],
  ['fail rejected: DONE', done(), fail(1), STALE_FAIL, UNCHANGED],
  ['fail rejected: DEAD', dead(), fail(3), STALE_FAIL, UNCHANGED],
  ['fail rejected: missing', null, fail(), STALE_FAIL, UNCHANGED],

  // reclaim: CLAIMED with lease_until < now → SCHEDULED / DEAD / CANCELLED.
  ['reclaim: expired, attempts left → SCHEDULED, counts a failure', claimed({ leaseUntil: T(-1) }), reclaim, { type: 'reclaim', outcome: 'SCHEDULED' }, { state: 'SCHEDULED', failures: 1, lastError: LEASE_EXPIRED_ERROR, leaseOwner: null, leaseUntil: null }],
  ['reclaim: expired, exhausted → DEAD', claimed({ attempt: 3, failures: 2, leaseUntil: T(-1) }), reclaim, { type: 'reclaim', outcome: 'DEAD' }, { state: 'DEAD', failures: 3, lastError: LEASE_EXPIRED_ERROR, leaseOwner: null, leaseUntil: null }],
  ['reclaim: expired at attempt 3 after 2 releases → SCHEDULED', claimed({ attempt: 3, failures: 0, leaseUntil: T(-1) }), reclaim, { type: 'reclaim', outcome: 'SCHEDULED' }, { state: 'SCHEDULED', failures: 1, lastError: LEASE_EXPIRED_ERROR, leaseOwner: null, leaseUntil: null }],
  ['reclaim: expired, cancel requested → CANCELLED', claimed({ attempt: 3, failures: 2, cancelRequested: true, leaseUntil: T(-1) }), reclaim, { type: 'reclaim', outcome: 'CANCELLED' }, { state: 'CANCELLED', failures: 3, lastError: LEASE_EXPIRED_ERROR, leaseOwner: null, leaseUntil: null }],
  ['reclaim rejected: lease ends now', claimed({ leaseUntil: T(0) }), reclaim, NO_RECLAIM, UNCHANGED],
  ['reclaim rejected: lease running', claimed(), reclaim, NO_RECLAIM, UNCHANGED],
  ['reclaim rejected: SCHEDULED', task(), reclaim, NO_RECLAIM, UNCHANGED],
  ['reclaim rejected: DONE', done(), reclaim, NO_RECLAIM, UNCHANGED],
  ['reclaim rejected: missing', null, reclaim, NO_RECLAIM, UNCHANGED],

  // release: the holder hands its attempt back → SCHEDULED due now, or CANCELLED when requested.
  ['release: → SCHEDULED due now, no lastError', claimed(), release(), { type: 'release', outcome: 'SCHEDULED' }, { state: 'SCHEDULED', dueAt: T(0), lastError: null, leaseOwner: null, leaseUntil: null }],
  ['release: last attempt still → SCHEDULED, no failure counted, the failure\'s lastError kept', claimed({ attempt: 3, failures: 2, lastError: 'boom' }), release(3), { type: 'release', outcome: 'SCHEDULED' }, { state: 'SCHEDULED', dueAt: T(0), failures: 2, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['release: cancel requested → CANCELLED', claimed({ cancelRequested: true }), release(), { type: 'release', outcome: 'CANCELLED' }, { state: 'CANCELLED', lastError: null, leaseOwner: null, leaseUntil: null }],
  ['release rejected: stale attempt', claimed({ attempt: 2 }), release(1), STALE_RELEASE, UNCHANGED],
  ['release rejected: SCHEDULED', task({ attempt: 1 }), release(1), STALE_RELEASE, UNCHANGED],
  ['release rejected: DONE', done(), release(1), STALE_RELEASE, UNCHANGED],
  ['release rejected: missing', null, release(), STALE_RELEASE, UNCHANGED],

  // fail with retry fields (docs/contract.md#retry-policy): retryable false → DEAD now; maxAttempts overrides the row's.
  ['fail retryable false: DEAD with attempts left', claimed({ maxAttempts: 5 }), failWith({ retryable: false }), { type: 'fail', result: { outcome: 'DEAD' } }, { state: 'DEAD', failures: 1, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['fail retryable false: cancel requested → CANCELLED', claimed({ cancelRequested: true }), failWith({ retryable: false }), { type: 'fail', result: { outcome: 'CANCELLED' } }, { state: 'CANCELLED', failures: 1, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['fail retryable false rejected: stale attempt', claimed({ attempt: 2 }), failWith({ retryable: false }, 1), STALE_FAIL, UNCHANGED],
  ['fail maxAttempts 1 below the row\'s 5: DEAD, the row keeps 1', claimed({ maxAttempts: 5 }), failWith({ maxAttempts: 1 }), { type: 'fail', result: { outcome: 'DEAD' } }, { state: 'DEAD', failures: 1, maxAttempts: 1, lastError: 'boom', leaseOwner: null, leaseUntil: null }],
  ['fail maxAttempts 3 above the row\'s 1: SCHEDULED, the row keeps 3', claimed({ maxAttempts: 1 }), failWith({ maxAttempts: 3 }), { type: 'fail', result: { outcome: 'SCHEDULED', dueAt: T(200) } }, { state: 'SCHEDULED', failures: 1, maxAttempts: 3, dueAt: T(200), lastError: 'boom', leaseOwner: null, leaseUntil: null }],

  // snooze: → SCHEDULED at dueAt, no failure counted, lastError kept; or CANCELLED when requested.
  ['snooze: → SCHEDULED at dueAt, failures and lastError kept', claimed({ attempt: 2, failures: 1, lastError: 'earlier' }), { type: 'snooze', attempt: 2, dueAt: T(5_000) }, { type: 'snooze', result: { outcome: 'SCHEDULED', dueAt: T(5_000) } }, { state: 'SCHEDULED', dueAt: T(5_000), failures: 1, lastError: 'earlier', leaseOwner: null, leaseUntil: null }],
  ['snooze: last attempt still → SCHEDULED (never DEAD)', claimed({ attempt: 3, failures: 2, maxAttempts: 3 }), { type: 'snooze', attempt: 3, dueAt: T(1) }, { type: 'snooze', result: { outcome: 'SCHEDULED', dueAt: T(1) } }, { state: 'SCHEDULED', dueAt: T(1), leaseOwner: null, leaseUntil: null }],
  ['snooze: cancel requested → CANCELLED', claimed({ cancelRequested: true }), { type: 'snooze', attempt: 1, dueAt: T(5_000) }, { type: 'snooze', result: { outcome: 'CANCELLED' } }, { state: 'CANCELLED', leaseOwner: null, leaseUntil: null }],
  ['snooze rejected: stale attempt', claimed({ attempt: 2 }), { type: 'snooze', attempt: 1, dueAt: T(5_000) }, { type: 'snooze', result: { outcome: 'REJECTED_STALE' } }, UNCHANGED],
  ['snooze rejected: SCHEDULED', task({ attempt: 1 }), { type: 'snooze', attempt: 1, dueAt: T(5_000) }, { type: 'snooze', result: { outcome: 'REJECTED_STALE' } }, UNCHANGED],
  ['snooze rejected: missing', null, { type: 'snooze', attempt: 1, dueAt: T(5_000) }, { type: 'snooze', result: { outcome: 'REJECTED_STALE' } }, UNCHANGED],
  ['replace: SCHEDULED → new payload and due time', task({ key: 'r42' }), replace, { type: 'replace', replaced: true }, { payload: { n: 2 }, dueAt: T(9_000) }],
  ['replace refused: CLAIMED is kept unchanged', claimed({ key: 'r42' }), replace, { type: 'replace', replaced: false }, UNCHANGED],
  ['replace refused: DONE', done(), replace, { type: 'replace', replaced: false }, UNCHANGED],
  ['replace refused: missing', null, replace, { type: 'replace', replaced: false }, UNCHANGED],
  // progress (docs/contract.md#progress): fenced by the attempt, nothing else changes (not updatedAt).
  ['progress: current attempt', claimed(), { type: 'progress', attempt: 1, progress: { p: 1 } }, { type: 'progress', written: true }, { progress: { p: 1 }, updatedAt: T(-5_000) }],
  ['progress rejected: stale attempt', claimed(), { type: 'progress', attempt: 2, progress: 1 }, { type: 'progress', written: false }, UNCHANGED],
  ['progress rejected: SCHEDULED', task({ attempt: 1 }), { type: 'progress', attempt: 1, progress: 1 }, { type: 'progress', written: false }, UNCHANGED],
  ['progress rejected: DONE', done(), { type: 'progress', attempt: 1, progress: 1 }, { type: 'progress', written: false }, UNCHANGED],
  ['progress rejected: missing', null, { type: 'progress', attempt: 1, progress: 1 }, { type: 'progress', written: false }, UNCHANGED],
  // reschedule by id (docs/contract.md#reschedule): SCHEDULED only.
  ['reschedule: SCHEDULED', task(), { type: 'reschedule', dueAt: T(9_000) }, { type: 'reschedule', result: { outcome: 'RESCHEDULED', dueAt: T(9_000) } }, { dueAt: T(9_000) }],
  ['reschedule: SCHEDULED with a payload', task(), { type: 'reschedule', dueAt: T(-9_000), payload: null }, { type: 'reschedule', result: { outcome: 'RESCHEDULED', dueAt: T(-9_000) } }, { dueAt: T(-9_000), payload: null }],
  ['reschedule rejected: CLAIMED', claimed(), { type: 'reschedule', dueAt: T(9_000) }, { type: 'reschedule', result: { outcome: 'NOT_SCHEDULED', state: 'CLAIMED' } }, UNCHANGED],
  ['reschedule rejected: DEAD', dead(), { type: 'reschedule', dueAt: T(9_000) }, { type: 'reschedule', result: { outcome: 'NOT_SCHEDULED', state: 'DEAD' } }, UNCHANGED],
  ['reschedule rejected: missing', null, { type: 'reschedule', dueAt: T(9_000) }, { type: 'reschedule', result: { outcome: 'NOT_FOUND' } }, UNCHANGED],
];

describe('transition', () => {
  it.each(ROWS)('%s', (_name, before, command, result, after) => {
    const step = transition(before, command, NOW);
    expect(step.result).toEqual(result);
    if (after === UNCHANGED) {
      expect(step.task).toBe(before);
    } else {
      expect(step.task).toEqual({ ...before, updatedAt: new Date(NOW), ...after });
    }
  });

  it('covers every command type and every outcome value', () => {
    const types = new Set(ROWS.map(([, , c]) => c.type));
    expect([...types].sort()).toEqual(['cancel', 'claim', 'complete', 'extend', 'fail', 'progress', 'reclaim', 'release', 'replace', 'reschedule', 'snooze']);
    const outcomes = new Set(ROWS.map(([, , , r]) => JSON.stringify(r)));
    for (const o of ['CANCELLED', 'REQUESTED', 'TOO_LATE', 'ALREADY_CANCELLED', 'NOT_FOUND']) expect(outcomes).toContain(JSON.stringify({ type: 'cancel', outcome: o }));
    for (const o of ['SCHEDULED', 'DEAD', 'CANCELLED']) expect([...outcomes].some((r) => r.includes(`"reclaim","outcome":"${o}"`))).toBe(true);
  });

  it('does not mutate its input row', () => {
    const before = claimed();
    const frozen = Object.freeze({ ...before });
    expect(() => transition(frozen, complete(), NOW)).not.toThrow();
    expect(frozen).toEqual(before);
  });
});

const arbState = fc.constantFrom(...TASK_STATES);
const arbTask: fc.Arbitrary<Task> = fc
  .record({
    state: arbState,
    attempt: fc.integer({ min: 0, max: 4 }),
    released: fc.integer({ min: 0, max: 4 }),
    maxAttempts: fc.integer({ min: 1, max: 4 }),
    cancelRequested: fc.boolean(),
    dueOffset: fc.integer({ min: -2_000, max: 2_000 }),
    leaseOffset: fc.integer({ min: -2_000, max: 2_000 }),
  })
  .map(({ state, attempt: anyAttempt, released, maxAttempts, cancelRequested, dueOffset, leaseOffset }) => {
    // A CLAIMED row has been claimed at least once, and its running claim has not failed (yet).
    const attempt = state === 'CLAIMED' ? Math.max(1, anyAttempt) : anyAttempt;
    const running = state === 'CLAIMED' ? 1 : 0;
    return task({
      state,
      attempt,
      // Claims that ended without counting (releases, a completed one) are not failures.
      failures: Math.max(0, attempt - running - released),
      maxAttempts,
      cancelRequested,
      dueAt: T(dueOffset),
      leaseOwner: state === 'CLAIMED' ? 'w1' : null,
      leaseUntil: state === 'CLAIMED' ? T(leaseOffset) : null,
    });
  });
const arbAttempt = fc.integer({ min: 1, max: 5 });
const arbCommand: fc.Arbitrary<Command> = fc.oneof(
  fc.constant<Command>(cancel),
  fc.constant<Command>(reclaim),
  fc.integer({ min: 1, max: 5_000 }).map((leaseMs): Command => ({ type: 'claim', owner: 'w9', leaseMs })),
  fc.tuple(arbAttempt, fc.integer({ min: 1, max: 5_000 })).map(([attempt, leaseMs]): Command => ({ type: 'extend', attempt, leaseMs })),
  arbAttempt.map((attempt): Command => ({ type: 'complete', attempt, result: null })),
  fc.tuple(arbAttempt, fc.integer({ min: 0, max: 5_000 })).map(([attempt, backoffMs]): Command => ({ type: 'fail', attempt, error: 'e', backoffMs })),
  arbAttempt.map((attempt): Command => ({ type: 'release', attempt })),
  fc.tuple(arbAttempt, fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 1, max: 5 })).map(
    ([attempt, backoffMs, maxAttempts]): Command => ({ type: 'fail', attempt, error: 'final', backoffMs, retryable: false, maxAttempts }),
  ),
  fc.tuple(arbAttempt, fc.integer({ min: -2_000, max: 2_000 })).map(([attempt, offset]): Command => ({ type: 'snooze', attempt, dueAt: T(offset) })),
  fc.integer({ min: -2_000, max: 2_000 }).map((offset): Command => ({ type: 'replace', payload: offset, dueAt: T(offset) })),
  fc.tuple(arbAttempt, fc.integer()).map(([attempt, progress]): Command => ({ type: 'progress', attempt, progress })),
  fc.integer({ min: -2_000, max: 2_000 }).map((offset): Command => ({ type: 'reschedule', dueAt: T(offset), ...(offset % 2 === 0 ? { payload: offset } : {}) })),
);

describe('transition properties', () => {
  it('a terminal row never changes (docs/contract.md#promise-5)', () => {
    fc.assert(
      fc.property(arbTask, arbCommand, (before, command) => {
        fc.pre(isTerminal(before.state));
        expect(transition(before, command, NOW).task).toBe(before);
      }),
    );
  });

  it('every row it produces satisfies the lease CHECK: CLAIMED iff both lease fields set', () => {
    fc.assert(
      fc.property(arbTask, arbCommand, (before, command) => {
        const after = transition(before, command, NOW).task as Task;
        expect(after.state === 'CLAIMED').toBe(after.leaseOwner !== null && after.leaseUntil !== null);
      }),
    );
  });

  it('attempt only grows, and only by claim', () => {
    fc.assert(
      fc.property(arbTask, arbCommand, (before, command) => {
        const after = transition(before, command, NOW).task as Task;
        expect(after.attempt).toBe(command.type === 'claim' && after !== before ? before.attempt + 1 : before.attempt);
      }),
    );
  });

  it('failures grow by one at each accepted fail or reclaim, never otherwise (a release is not a failure)', () => {
    fc.assert(
      fc.property(arbTask, arbCommand, (before, command) => {
        const after = transition(before, command, NOW).task as Task;
        const counts = (command.type === 'fail' || command.type === 'reclaim') && after !== before;
        expect(after.failures).toBe(counts ? before.failures + 1 : before.failures);
        expect(after.failures).toBeLessThanOrEqual(after.attempt);
      }),
    );
  });

  it('a fail or reclaim of a running attempt ends DEAD exactly when failures reach maxAttempts (cancel requested aside)', () => {
    const arbRunning = arbTask.map((t) => ({ ...t, state: TaskState.CLAIMED, attempt: Math.max(1, t.attempt), leaseOwner: 'w1', leaseUntil: T(-1), cancelRequested: false }));
    const arbFailure = fc.constantFrom('fail', 'reclaim');
    fc.assert(
      fc.property(arbRunning, arbFailure, (running, type) => {
        const before = { ...running, failures: Math.min(running.failures, running.attempt - 1) };
        const command: Command = type === 'fail' ? { type, attempt: before.attempt, error: 'e', backoffMs: 0 } : { type };
        const after = transition(before, command, NOW).task as Task;
        expect(after.failures).toBe(before.failures + 1);
        expect(after.state).toBe(after.failures >= after.maxAttempts ? 'DEAD' : 'SCHEDULED');
      }),
    );
  });

  it('a completion is recorded only on the move CLAIMED → DONE', () => {
    fc.assert(
      fc.property(arbTask, arbCommand, (before, command) => {
        const { task: after, result } = transition(before, command, NOW);
        const writes = result.type === 'complete' && result.keepDone;
        expect(writes).toBe(before.state === 'CLAIMED' && after?.state === 'DONE');
      }),
    );
  });
});
