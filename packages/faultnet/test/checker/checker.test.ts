import { describe, expect, it } from 'vitest';
import { checkHistory, describeViolations, failoverLoss, type EffectRecord, type FinalTask, type History, type HistoryOp, HistoryRecorder, VIOLATION_KINDS } from '../../src/checker/index.js';

const T0 = 1_700_000_000_000;

/** A clean history of three tasks: 1 done at attempt 1, 2 done at attempt 2 after a reclaim, 3 cancelled while waiting. */
function clean(): { ops: HistoryOp[]; effects: EffectRecord[]; final: FinalTask[] } {
  const ops: HistoryOp[] = [
    { type: 'schedule', id: '1', dueAtMs: T0 },
    { type: 'schedule', id: '2', dueAtMs: T0 },
    { type: 'schedule', id: '3', dueAtMs: T0 + 60_000 },
    { type: 'claim', worker: 'w1', id: '1', attempt: 1, claimedAtMs: T0 + 5, dueAtMs: T0 },
    { type: 'renew', worker: 'w1', id: '1', attempt: 1, ok: true },
    { type: 'complete', worker: 'w1', id: '1', attempt: 1, outcome: 'DONE' },
    // The idempotent retry of the same attempt's complete answers DONE again.
    { type: 'complete', worker: 'w1', id: '1', attempt: 1, outcome: 'DONE' },
    { type: 'claim', worker: 'w1', id: '2', attempt: 1, claimedAtMs: T0 + 6, dueAtMs: T0 },
    { type: 'reclaim', worker: 'w2', id: '2', attempt: 1, outcome: 'SCHEDULED' },
    { type: 'claim', worker: 'w2', id: '2', attempt: 2, claimedAtMs: T0 + 1_500, dueAtMs: T0 + 1_400 },
    { type: 'renew', worker: 'w1', id: '2', attempt: 1, ok: false },
    { type: 'complete', worker: 'w1', id: '2', attempt: 1, outcome: 'REJECTED_STALE' },
    { type: 'complete', worker: 'w2', id: '2', attempt: 2, outcome: 'DONE' },
    { type: 'cancel', id: '3', outcome: 'CANCELLED', invokedAtMs: T0 + 10, returnedAtMs: T0 + 12 },
    { type: 'cancel', id: '3', outcome: 'ALREADY_CANCELLED', invokedAtMs: T0 + 20, returnedAtMs: T0 + 21 },
  ];
  const effects: EffectRecord[] = [
    { source: 'effect', id: '1', attempt: 1, worker: 'w1' },
    { source: 'history_effect', id: '1', attempt: 1, worker: 'w1' },
    { source: 'effect', id: '2', attempt: 2, worker: 'w2' },
    { source: 'history_effect', id: '2', attempt: 2, worker: 'w2' },
  ];
  const final: FinalTask[] = [
    { id: '1', state: 'DONE', attempt: 1 },
    { id: '2', state: 'DONE', attempt: 2 },
    { id: '3', state: 'CANCELLED', attempt: 0 },
  ];
  return { ops, effects, final };
}

function judge(change: (h: ReturnType<typeof clean>) => void, extra: Partial<History> = {}) {
  const h = clean();
  change(h);
  return checkHistory({ ...h, ...extra });
}

function only(verdict: ReturnType<typeof checkHistory>) {
  return [...new Set(verdict.violations.map((v) => `${v.kind}:${v.taskId}`))].sort();
}

describe('history checker', () => {
  it('finds nothing in a clean history and counts what happened', () => {
    const verdict = checkHistory(clean());
    expect(verdict.violations).toEqual([]);
    expect(Object.values(verdict.counts).every((n) => n === 0)).toBe(true);
    expect(verdict.stats).toMatchObject({ tasks: 3, claims: 3, renewals: 1, renewalsRefused: 1, completes: 4, reclaims: 1, cancels: 2, effects: 4, unobservedClaims: 0 });
    expect(verdict.stats.finalStates).toEqual({ DONE: 2, CANCELLED: 1 });
  });

  it('claim before due', () => {
    const v = judge((h) => {
      h.ops[3] = { type: 'claim', worker: 'w1', id: '1', attempt: 1, claimedAtMs: T0 - 3, dueAtMs: T0 };
    });
    expect(only(v)).toEqual(['claim-before-due:1']);
    expect(v.violations[0]!.detail).toContain('3 ms before due');
  });

  it('claim of a task whose cancel had returned CANCELLED', () => {
    const v = judge((h) => {
      h.ops.push({ type: 'claim', worker: 'w2', id: '3', attempt: 1, claimedAtMs: T0 + 60_001, dueAtMs: T0 + 60_000 });
      h.final[2] = { id: '3', state: 'CANCELLED', attempt: 1 };
    });
    expect(only(v)).toEqual(['claim-after-cancelled:3']);
  });

  it.each([
    ['more than one effect per task', (h: ReturnType<typeof clean>) => h.effects.push({ source: 'history_effect', id: '1', attempt: 1, worker: 'w2' }), 'duplicate-effect:1'],
    ['an effect whose attempt is not the DONE attempt', (h: ReturnType<typeof clean>) => (h.effects[2] = { source: 'effect', id: '2', attempt: 1, worker: 'w1' }), 'effect-not-done-attempt:2'],
    ['an effect of a task that is not DONE', (h: ReturnType<typeof clean>) => h.effects.push({ source: 'effect', id: '3', attempt: 0, worker: 'w1' }), 'effect-not-done-attempt:3'],
  ] as const)('%s', (_name, change, violation) => {
    expect(only(judge((h) => void change(h)))).toEqual([violation]);
  });

  it('a task never terminal by the end (lost), or missing', () => {
    const v = judge((h) => {
      h.ops.push({ type: 'schedule', id: '4', dueAtMs: T0 });
      h.final[1] = { id: '2', state: 'CLAIMED', attempt: 2 };
      h.ops.splice(12, 1); // no DONE answer for task 2 either
      h.effects.splice(2, 2);
    });
    expect(only(v)).toEqual(['lost:2', 'lost:4']);
  });

  it('a terminal state that changed', () => {
    const v = judge((h) => {
      h.ops.push({ type: 'reclaim', worker: 'w2', id: '1', attempt: 1, outcome: 'DEAD' });
    });
    expect(only(v)).toContain('terminal-changed:1');
    const v2 = judge((h) => {
      h.final[0] = { id: '1', state: 'CANCELLED', attempt: 1 };
      h.effects.splice(0, 2);
    });
    expect(only(v2)).toContain('terminal-changed:1');
  });

  it('an attempt that did not grow by one per claim', () => {
    const twice = judge((h) => {
      h.ops.push({ type: 'claim', worker: 'w2', id: '1', attempt: 1, claimedAtMs: T0 + 7, dueAtMs: T0 });
    });
    expect(only(twice)).toEqual(['attempt-not-by-one:1']);
    const gap = judge((h) => {
      h.ops[9] = { type: 'claim', worker: 'w2', id: '2', attempt: 3, claimedAtMs: T0 + 1_500, dueAtMs: T0 + 1_400 };
      h.ops[12] = { type: 'complete', worker: 'w2', id: '2', attempt: 3, outcome: 'DONE' };
      h.final[1] = { id: '2', state: 'DONE', attempt: 3 };
      h.effects[2] = { source: 'effect', id: '2', attempt: 3, worker: 'w2' };
      h.effects[3] = { source: 'history_effect', id: '2', attempt: 3, worker: 'w2' };
    });
    expect(only(gap)).toEqual(['attempt-not-by-one:2']);
    expect(gap.stats.unobservedClaims).toBe(1);
    // A gap is tolerated (and counted) when a killed worker may have claimed without reporting.
    const tolerated = judge(
      (h) => {
        h.ops[9] = { type: 'claim', worker: 'w2', id: '2', attempt: 3, claimedAtMs: T0 + 1_500, dueAtMs: T0 + 1_400 };
        h.ops[12] = { type: 'complete', worker: 'w2', id: '2', attempt: 3, outcome: 'DONE' };
        h.final[1] = { id: '2', state: 'DONE', attempt: 3 };
        h.effects[2] = { source: 'effect', id: '2', attempt: 3, worker: 'w2' };
        h.effects[3] = { source: 'history_effect', id: '2', attempt: 3, worker: 'w2' };
      },
      { unobservedClaimsAllowed: 1 },
    );
    expect(tolerated.violations).toEqual([]);
    expect(tolerated.stats.unobservedClaims).toBe(1);
    const backwards = judge((h) => {
      h.ops[9] = { type: 'claim', worker: 'w2', id: '2', attempt: 2, claimedAtMs: T0 + 1, dueAtMs: T0 };
    });
    expect(only(backwards)).toEqual(['attempt-not-by-one:2']);
  });

  it('a commit accepted from an attempt that was not current', () => {
    const v = judge((h) => {
      h.ops[11] = { type: 'complete', worker: 'w1', id: '2', attempt: 1, outcome: 'DONE' };
    });
    expect(only(v)).toContain('stale-commit-accepted:2');
    const reclaimedThenDone = judge((h) => {
      // Task 1: reclaimed (attempt 1 back to SCHEDULED) and also completed DONE by attempt 1.
      h.ops.push({ type: 'reclaim', worker: 'w2', id: '1', attempt: 1, outcome: 'SCHEDULED' });
    });
    expect(only(reclaimedThenDone)).toEqual(['stale-commit-accepted:1']);
  });

  it('every kind has a test above, and describeViolations names kind and task', () => {
    expect(VIOLATION_KINDS).toHaveLength(8);
    const v = judge((h) => {
      h.effects.push({ source: 'effect', id: '1', attempt: 1, worker: 'w9' });
    });
    expect(describeViolations(v.violations)).toEqual(['duplicate-effect:1']);
  });

  it('the recorder records cancel outcomes with their times', async () => {
    const recorder = new HistoryRecorder();
    recorder.scheduled([{ id: '9', dueAt: new Date(T0) }]);
    const outcome = await recorder.cancel('9', async () => 'CANCELLED');
    expect(outcome).toBe('CANCELLED');
    const op = recorder.ops[1];
    expect(op).toMatchObject({ type: 'cancel', id: '9', outcome: 'CANCELLED' });
    expect(op?.type === 'cancel' && op.returnedAtMs >= op.invokedAtMs).toBe(true);
    await expect(recorder.cancel('9', async () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(recorder.ops).toHaveLength(2);
  });
});

describe('failoverLoss: what an asynchronous failover lost, judged on the new primary', () => {
  it('finds the acknowledged DONE whose effect is not there, the claim handed out twice, the schedule missing; the violations they cause are explained', () => {
    const h = clean();
    h.ops.push({ type: 'schedule', id: '4', dueAtMs: T0 });
    // Task 5: DONE at attempt 1 by w1 on the old primary, lost; claimed again at attempt 1 by w2 on the new one and DONE.
    h.ops.push(
      { type: 'schedule', id: '5', dueAtMs: T0 },
      { type: 'claim', worker: 'w1', id: '5', attempt: 1, claimedAtMs: T0 + 5, dueAtMs: T0 },
      { type: 'complete', worker: 'w1', id: '5', attempt: 1, outcome: 'DONE' },
      { type: 'claim', worker: 'w2', id: '5', attempt: 1, claimedAtMs: T0 + 3_000, dueAtMs: T0 },
      { type: 'complete', worker: 'w2', id: '5', attempt: 1, outcome: 'DONE' },
    );
    h.effects.push({ source: 'effect', id: '5', attempt: 1, worker: 'w2' });
    h.final.push({ id: '5', state: 'DONE', attempt: 1 });
    // Task 6: the same worker ran attempt 1 twice (its claim and DONE lost): one effect row there, its key the same.
    h.ops.push(
      { type: 'schedule', id: '6', dueAtMs: T0 },
      { type: 'claim', worker: 'w1', id: '6', attempt: 1, claimedAtMs: T0 + 5, dueAtMs: T0 },
      { type: 'complete', worker: 'w1', id: '6', attempt: 1, outcome: 'DONE' },
      { type: 'claim', worker: 'w1', id: '6', attempt: 1, claimedAtMs: T0 + 3_000, dueAtMs: T0 },
      { type: 'complete', worker: 'w1', id: '6', attempt: 1, outcome: 'DONE' },
    );
    h.effects.push({ source: 'effect', id: '6', attempt: 1, worker: 'w1' });
    h.final.push({ id: '6', state: 'DONE', attempt: 1 });
    const history: History = { ...h, effects: h.effects.map((e) => ({ ...e, source: e.source === 'effect' ? 'app_effect' : e.source })) };
    const verdict = checkHistory(history);
    const loss = failoverLoss(history, verdict);
    expect(loss.schedules).toEqual(['4']);
    expect(loss.done.toSorted()).toEqual(['5:1:w1', '6:1:w1']);
    expect(loss.claims).toEqual(['5:1', '6:1']);
    expect(loss.effectsWithoutDone).toBe(0);
    expect(loss.duplicateEffects).toBe(0);
    // Task 4 is reported lost by the checker (no row), explained by the lost schedule.
    expect(verdict.violations.map((x) => x.taskId)).toContain('4');
    expect(loss.unexplained).toEqual([]);
  });

  it('a violation on a task that lost nothing stays unexplained', () => {
    const h = clean();
    h.effects.push({ source: 'app_effect', id: '1', attempt: 1, worker: 'w9' });
    const history: History = { ...h, effects: h.effects.map((e) => ({ ...e, source: e.source === 'effect' ? 'app_effect' : e.source })) };
    const verdict = checkHistory(history);
    const loss = failoverLoss(history, verdict);
    expect(loss.done).toEqual([]);
    expect(loss.duplicateEffects).toBe(1);
    expect(loss.unexplained.map((x) => `${x.kind}:${x.taskId}`)).toEqual(['duplicate-effect:1']);
  });
});
