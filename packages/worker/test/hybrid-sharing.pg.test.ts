/**
 * Hybrid workers sharing due time on a real PostgreSQL (docs/contract.md#discovery-sharing): workers of
 * one group learn each other from presence notices, a fired timer makes a claim owed only on the
 * preferred worker of its slice, and a task of a preferred worker that is gone is still claimed by
 * another (lateness, never a task). Assertions are on counts and states; waits are bounded.
 */
import { TaskState } from '@postpone/core';
import { Peers } from '../src/discovery/peers.js';
import { PEER_TTL_MS, SLICE_TICKS } from '../src/discovery/hybrid.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorker, type Worker, type WorkerEvents } from '../src/index.js';
import { type CountingStore, countingStore } from './counting-store.js';
import { type Harness, pgHarness, until } from './harness.js';

const TICK_MS = 2;
const SLICE_MS = TICK_MS * SLICE_TICKS;

interface Member {
  readonly id: string;
  readonly counted: CountingStore<unknown>;
  readonly worker: Worker<unknown>;
  readonly claimed: WorkerEvents['claimed'][];
}

/** Due times (database clock) from `fromMs` on, one per slice, in slices whose preferred worker among `ids` is `owner`. */
function dueTimesOwnedBy(owner: string, ids: readonly string[], fromMs: number, count: number): number[] {
  const view = new Peers(owner, SLICE_MS, PEER_TTL_MS, () => 0);
  for (const id of ids) view.heard(id);
  const times: number[] = [];
  for (let slice = Math.ceil(fromMs / SLICE_MS); times.length < count && slice < Math.ceil(fromMs / SLICE_MS) + 10_000; slice++) {
    const at = slice * SLICE_MS + 7;
    if (view.ownerOf(at) === owner) times.push(at);
  }
  return times;
}

describe('hybrid workers share due time (pg)', () => {
  let h: Harness<unknown> | null = null;
  const members: Member[] = [];
  afterEach(async () => {
    for (const m of members.splice(0)) await m.worker.stop({ timeoutMs: 0 });
    await h?.close();
    h = null;
  });

  async function member(id: string, fallbackPollMs: number, slots?: { concurrency: number; workMs: number }): Promise<Member> {
    h ??= (await pgHarness()) as Harness<unknown>;
    const counted = countingStore(h.store);
    const job = async () => {
      if (slots !== undefined) await new Promise((resolve) => setTimeout(resolve, slots.workMs));
      return 'ok';
    };
    const worker = createWorker<unknown>({
      store: counted.store,
      id,
      discovery: 'hybrid',
      hybrid: { fallbackPollMs, tickMs: TICK_MS },
      ...(slots === undefined ? {} : { concurrency: slots.concurrency }),
      handlers: { job },
    });
    const claimed: WorkerEvents['claimed'][] = [];
    worker.on('claimed', (e) => claimed.push(e));
    const m = { id, counted, worker, claimed };
    members.push(m);
    return m;
  }

  it('two workers that know each other: each task fires as owed on exactly one of them, and is claimed once', async () => {
    const a = await member('share-a', 60_000);
    const b = await member('share-b', 60_000);
    a.worker.start();
    b.worker.start();
    await until(() => a.worker.discovery.peers === 1 && b.worker.discovery.peers === 1, 'each worker knows the other');
    const store = (h as Harness<unknown>).store;
    const now = (await store.now()).getTime();
    // 20 tasks 1.5 s ahead, spread over 1.2 s (about 19 slices): notified, so both wheels hold them.
    const tasks = await Promise.all(Array.from({ length: 20 }, (_, i) => store.schedule({ kind: 'job', runAt: new Date(now + 1_500 + i * 60) })));
    await until(() => a.claimed.length + b.claimed.length === 20, 'every task claimed', 15_000);
    const ids = [...a.claimed, ...b.claimed].map((e) => e.task.id).sort();
    expect(ids).toEqual(tasks.map((t) => t.id).sort());
    for (const e of [...a.claimed, ...b.claimed]) expect(e.task.claimedAt.getTime()).toBeGreaterThanOrEqual(e.task.dueAt.getTime());
    // The fallback read is a minute away: nothing was claimed as a fallback. Each task's timer fired,
    // not owed, on the worker that was not its slice's preferred one — unless that worker's claim
    // took the task first (a claim takes everything due: the preferred worker was late).
    expect(a.worker.discovery.fallbacks + b.worker.discovery.fallbacks).toBe(0);
    const view = new Peers('share-a', SLICE_MS, PEER_TTL_MS, () => 0);
    view.heard('share-b');
    const byOther = [...a.claimed.map((e) => ['share-a', e] as const), ...b.claimed.map((e) => ['share-b', e] as const)].filter(
      ([claimer, e]) => view.ownerOf(e.task.dueAt.getTime()) !== claimer,
    ).length;
    // Or that worker was helping (its claim had found the other's tasks late) and its timer made a claim owed.
    const deferred = a.worker.discovery.deferred + b.worker.discovery.deferred;
    const helped = a.worker.discovery.helped + b.worker.discovery.helped;
    // (Not exactly 20 on a loaded machine: a timer can also go with a claim of its own worker.)
    expect(deferred + helped).toBeLessThanOrEqual(20);
    expect(deferred + helped + byOther).toBeGreaterThanOrEqual(15);
    expect(deferred).toBeGreaterThan(0);
  }, 30_000);

  it('a burst in one slice, more than its preferred worker can take at once: the other helps at once, not after a fallback read', async () => {
    const a = await member('burst-a', 60_000, { concurrency: 2, workMs: 100 });
    const b = await member('burst-b', 60_000, { concurrency: 2, workMs: 100 });
    a.worker.start();
    b.worker.start();
    await until(() => a.worker.discovery.peers === 1 && b.worker.discovery.peers === 1, 'each worker knows the other');
    const store = (h as Harness<unknown>).store;
    const now = (await store.now()).getTime();
    // 48 tasks due at one instant 1.5 s ahead (one slice, one preferred worker): 2.4 s of work for its 2 slots.
    const [at] = dueTimesOwnedBy('burst-a', ['burst-a', 'burst-b'], now + 1_500, 1);
    await store.scheduleMany(Array.from({ length: 48 }, () => ({ kind: 'job', runAt: new Date(at as number) })));
    await until(() => a.claimed.length + b.claimed.length === 48, 'every task claimed', 20_000);
    // b deferred the burst's timers, then owed one claim 50 ms later: it found a's tasks waiting and helped.
    expect(b.claimed.length).toBeGreaterThan(0);
    expect(b.worker.discovery.claimsByCause?.help.claims).toBeGreaterThan(0);
    expect(a.worker.discovery.fallbacks + b.worker.discovery.fallbacks).toBe(0);
    expect(new Set([...a.claimed, ...b.claimed].map((e) => e.task.id)).size).toBe(48);
  }, 30_000);

  it('a preferred worker that is gone: its tasks are claimed by the other after a load finds them overdue, and it is no longer preferred', async () => {
    const a = await member('dead-a', 1_000);
    const b = await member('dead-b', 60_000);
    a.worker.start();
    b.worker.start();
    await until(() => a.worker.discovery.peers === 1 && b.worker.discovery.peers === 1, 'each worker knows the other');
    // b stops: a still counts it as live (no notice says otherwise).
    await b.worker.stop({ timeoutMs: 0 });
    expect(a.worker.discovery.peers).toBe(1);
    const store = (h as Harness<unknown>).store;
    const now = (await store.now()).getTime();
    const due = dueTimesOwnedBy('dead-b', ['dead-a', 'dead-b'], now + 1_000, 5);
    expect(due).toHaveLength(5);
    const tasks = await Promise.all(due.map((at) => store.schedule({ kind: 'job', runAt: new Date(at) })));
    await until(() => a.claimed.length === 5, "a claims b's tasks", 20_000);
    expect(a.claimed.map((e) => e.task.id).sort()).toEqual(tasks.map((t) => t.id).sort());
    for (const t of tasks) expect([TaskState.CLAIMED, TaskState.DONE]).toContain((await store.getTask(t.id))?.state);
    expect(a.worker.discovery.fallbacks).toBeGreaterThanOrEqual(1);
    // b is suspected and forgotten: a is now preferred everywhere, so a task in b's slice is owed at once.
    expect(a.worker.discovery.peers).toBe(0);
    const fallbacks = a.worker.discovery.fallbacks;
    const later = dueTimesOwnedBy('dead-b', ['dead-a', 'dead-b'], (await store.now()).getTime() + 1_000, 1);
    const next = await store.schedule({ kind: 'job', runAt: new Date(later[0] as number) });
    await until(() => a.claimed.some((e) => e.task.id === next.id), 'the next task of the gone worker', 15_000);
    expect(a.worker.discovery.fallbacks).toBe(fallbacks);
  }, 60_000);
});
