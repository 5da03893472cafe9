/**
 * The memory store is core's transition() and nothing else: random command sequences give the same
 * outcomes and the same rows as transition() applied to a plain map (seeded, bounded).
 */
import { type Command, type Completion, type Result, type Task, type TaskId, TaskState, TestClock, transition } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { createMemoryStore, type MemoryStore } from '../src/index.js';

const SEEDS = 60;
const STEPS = 80;

/** mulberry32: a tiny seeded PRNG, so a failing seed replays exactly. */
function prng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4_294_967_296) * n);
  };
}

class Model {
  readonly tasks = new Map<TaskId, Task>();
  readonly completions = new Map<TaskId, Pick<Completion, 'taskId' | 'attempt' | 'worker'>>();

  apply(id: TaskId, command: Command, nowMs: number, owner = 'w'): Result {
    const step = transition(this.tasks.get(id) ?? null, command, nowMs);
    if (step.task !== null) this.tasks.set(id, step.task);
    if (step.result.type === 'complete' && step.result.keepDone && command.type === 'complete') {
      this.completions.set(id, { taskId: id, attempt: command.attempt, worker: owner });
    }
    return step.result;
  }

  ordered(state: TaskState, key: (t: Task) => number): Task[] {
    return [...this.tasks.values()].filter((t) => t.state === state).sort((a, b) => key(a) - key(b) || Number(a.id) - Number(b.id));
  }
}

async function runSequence(seed: number): Promise<Record<string, number>> {
  const rand = prng(seed);
  const clock = new TestClock();
  const store: MemoryStore = createMemoryStore({ clock });
  const model = new Model();
  const pick = (): TaskId => String(1 + rand(Math.max(1, model.tasks.size + 1)));
  const attempt = (id: TaskId): number => Math.max(1, (model.tasks.get(id)?.attempt ?? 1) + rand(3) - 1);

  for (let step = 0; step < STEPS; step++) {
    const now = clock.now();
    const op = rand(10);
    const label = `seed ${seed} step ${step} op ${op}`;
    if (op === 0) {
      const { id } = await store.schedule({ kind: 'k', delayMs: rand(3) * 100, maxAttempts: 1 + rand(3) });
      model.tasks.set(id, (await store.getTask(id)) as Task);
    } else if (op === 1) {
      const limit = 1 + rand(3);
      const claimed = await store.claim({ owner: 'w', limit, leaseMs: 500 });
      const expected: TaskId[] = [];
      for (const t of model.ordered(TaskState.SCHEDULED, (x) => x.dueAt.getTime())) {
        if (expected.length === limit) break;
        const r = model.apply(t.id, { type: 'claim', owner: 'w', leaseMs: 500 }, now);
        if (r.type === 'claim' && r.claimed) expected.push(t.id);
      }
      expect(claimed.map((c) => c.id), label).toEqual(expected);
    } else if (op === 2) {
      const reclaimed = await store.reclaimExpired();
      const expected = model
        .ordered(TaskState.CLAIMED, (x) => x.leaseUntil?.getTime() ?? 0)
        .flatMap((t) => {
          const r = model.apply(t.id, { type: 'reclaim' }, now);
          return r.type === 'reclaim' && r.outcome !== null ? [{ id: t.id, attempt: t.attempt, outcome: r.outcome }] : [];
        });
      expect(reclaimed, label).toEqual(expected);
    } else if (op === 3) {
      const id = pick();
      expect(await store.cancel(id), label).toEqual((model.apply(id, { type: 'cancel' }, now) as { outcome: unknown }).outcome);
    } else if (op === 4) {
      const id = pick();
      const a = attempt(id);
      expect(await store.extend({ id, attempt: a, leaseMs: 500 }), label).toBe(
        (model.apply(id, { type: 'extend', attempt: a, leaseMs: 500 }, now) as { extended: boolean }).extended,
      );
    } else if (op === 5) {
      const id = pick();
      const a = attempt(id);
      expect(await store.complete({ id, attempt: a, owner: 'w', result: step }), label).toBe(
        (model.apply(id, { type: 'complete', attempt: a, result: step }, now) as { outcome: unknown }).outcome,
      );
    } else if (op === 6) {
      const id = pick();
      const a = attempt(id);
      expect(await store.fail({ id, attempt: a, error: `e${step}`, backoffMs: 100 }), label).toEqual(
        (model.apply(id, { type: 'fail', attempt: a, error: `e${step}`, backoffMs: 100 }, now) as { result: unknown }).result,
      );
    } else if (op === 7) {
      const id = pick();
      const a = attempt(id);
      expect(await store.release({ id, attempt: a }), label).toBe((model.apply(id, { type: 'release', attempt: a }, now) as { outcome: unknown }).outcome);
    } else {
      clock.tick(rand(400));
    }
    for (const [id, task] of model.tasks) expect(await store.getTask(id), `${label} task ${id}`).toEqual(task);
  }
  for (const id of model.tasks.keys()) {
    const completion = await store.getCompletion(id);
    expect(completion === null ? null : { taskId: completion.taskId, attempt: completion.attempt, worker: completion.worker }, `seed ${seed} completion ${id}`).toEqual(
      model.completions.get(id) ?? null,
    );
  }
  const counts = await store.countByState();
  for (const state of Object.values(TaskState)) expect(counts[state]).toBe([...model.tasks.values()].filter((t) => t.state === state).length);
  return { ...counts, completions: model.completions.size };
}

describe('memory store = transition() applied to a map', () => {
  it(`${SEEDS} random sequences of ${STEPS} commands agree on every outcome, row and completion`, async () => {
    const totals: Record<string, number> = {};
    for (let seed = 1; seed <= SEEDS; seed++) {
      for (const [k, n] of Object.entries(await runSequence(seed))) totals[k] = (totals[k] ?? 0) + n;
    }
    // The sequences reach every state and complete tasks, so the agreement above is not vacuous.
    for (const key of [...Object.values(TaskState), 'completions']) expect(totals[key], key).toBeGreaterThan(0);
  });
});
