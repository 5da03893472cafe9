/**
 * Builds a worker handler from a {@link HandlerPlan}: it reports what it does to the test, parks at
 * chosen fault points, blocks its event loop, calls the fake external service, fails on chosen
 * attempts, and otherwise returns `{ by: <worker name>, attempt }` as the task's result, writing its
 * local effect (an `app_effect` row, `../app-effect.ts`) in the completing transaction.
 *
 * The handler ignores its abort signal on purpose (except for `awaitAbortMs`): the store, not the
 * worker's good manners, must reject a late commit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClaimedTask } from '@postpone/core';
import type { HandlerContext } from '@postpone/worker';
import { callExternal } from '../faults/external-service.js';
import type { ParentChannel } from './channel.js';
import type { FaultPoint, HandlerPlan } from './protocol.js';
import type { ChildResources } from './resources.js';

/** The result a planned handler returns: who completed which attempt. */
export interface PlannedResult {
  readonly by: string;
  readonly attempt: number;
  [key: string]: string | number;
}

/** Spins the CPU for `ms` without yielding: no timer, no I/O callback runs meanwhile. */
export function blockEventLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy wait
  }
}

/** Resolves when `signal` aborts or after `ms`, whichever comes first. */
function abortedOrAfter(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return sleep(ms, undefined, { signal }).catch(() => {});
}

/** How long before a {@link HandlerPlan.barrier} instant a process stops sleeping and spins, in ms. */
const BARRIER_SPIN_MS = 50;

export function planHandler(plan: HandlerPlan, name: string, channel: ParentChannel, resources?: ChildResources) {
  // Database clock minus this process's clock, read once: of 5 `store.now()` round trips, the midpoint of the shortest.
  let clockOffset: Promise<number> | null = null;
  const databaseClockOffset = (store: ChildResources['store']) =>
    (clockOffset ??= (async () => {
      let best = { rttMs: Number.POSITIVE_INFINITY, offsetMs: 0 };
      for (let i = 0; i < 5; i++) {
        const before = Date.now();
        const dbMs = (await store.now()).getTime();
        const after = Date.now();
        if (after - before < best.rttMs) best = { rttMs: after - before, offsetMs: dbMs - (before + after) / 2 };
      }
      return best.offsetMs;
    })());
  // The instant of the test's `barrier` control (one per process), listened for from the start.
  const barrierAt: Promise<number> | null = plan.barrier
    ? new Promise<number>((resolve) => {
        channel.onControl((control) => {
          if (control.type === 'barrier') resolve(control.atMs);
        });
      })
    : null;
  /**
   * Waits for the test's `barrier` control, then until the database clock reads its instant: on a
   * timer until {@link BARRIER_SPIN_MS} before it, then spinning, so a loaded process is running, not
   * waiting to be scheduled, at the instant. One wait per process, shared by every handler: they all
   * resume in the same turn of the event loop, so their completions go out in one `completeMany`.
   */
  let barrierPassed: Promise<void> | null = null;
  const barrier = () =>
    (barrierPassed ??= (async () => {
      if (!resources || barrierAt === null) throw new Error('barrier needs the plan flag and the child resources');
      const offset = await databaseClockOffset(resources.store);
      const atMs = await barrierAt;
      const untilSpin = atMs - BARRIER_SPIN_MS - (Date.now() + offset);
      if (untilSpin > 0) await sleep(untilSpin);
      const untilBarrier = atMs - (Date.now() + offset);
      if (untilBarrier > 0) blockEventLoop(untilBarrier);
    })());
  const parksAt = (point: FaultPoint, attempt: number) =>
    (plan.park ?? []).some((p) => p.point === point && (p.attempts === undefined || p.attempts.includes(attempt)));

  return async (task: ClaimedTask, ctx: HandlerContext): Promise<PlannedResult> => {
    const { id } = task;
    const { attempt } = ctx;
    const wallMs = Date.now();
    await channel.emit({ type: 'handlerStarted', id, attempt, wallMs });
    if (!plan.reportEnd) return await body(task, ctx);
    try {
      return await body(task, ctx);
    } finally {
      await channel.emit({ type: 'handlerEnded', id, attempt, wallMs: Date.now() });
    }
  };

  async function body(task: ClaimedTask, ctx: HandlerContext): Promise<PlannedResult> {
    const { id } = task;
    const { attempt } = ctx;
    if (plan.blockMs !== undefined) {
      blockEventLoop(plan.blockMs);
      // Yield once, so timers that fell due during the block (the lease renewal) run now.
      await sleep(0);
    }
    if (parksAt('afterClaim', attempt)) await channel.park(id, attempt, 'afterClaim');
    if (plan.external) {
      const key = plan.external.key === 'task' ? ctx.idempotencyKey : `${ctx.idempotencyKey}-a${attempt}`;
      const applied = await callExternal(plan.external.url, key);
      await channel.emit({ type: 'externalCalled', id, attempt, key, applied });
      if (parksAt('afterExternal', attempt)) await channel.park(id, attempt, 'afterExternal');
    }
    if (plan.holdConnectionMs !== undefined && resources) {
      const release = await resources.takeConnection();
      try {
        await sleep(plan.holdConnectionMs);
      } finally {
        release();
      }
    }
    if (plan.echoWithProgress) ctx.progress({ half: id });
    if (plan.workMs !== undefined) await sleep(plan.workMs);
    if (plan.barrier) await barrier();
    if (plan.awaitAbortMs !== undefined) await abortedOrAfter(ctx.signal, plan.awaitAbortMs);
    if (plan.failAttempts !== undefined && attempt <= plan.failAttempts) throw new Error(`injected failure on attempt ${attempt}`);
    // The handler's local effect, in the transaction that commits DONE (the seed's effect row, now the application's).
    const writesEffect = Array.isArray(plan.effect) ? plan.effect.includes(task.kind) : plan.effect !== false;
    // Both rows in one statement when both are written: the checker's instrument costs no round trip of its own.
    if (writesEffect && plan.historyEffect && resources) ctx.onCompleteTx((tx) => resources.insertBothEffects(tx, id, attempt, name));
    else if (writesEffect && resources) ctx.onCompleteTx((tx) => resources.insertAppEffect(tx, id, attempt, name));
    else if (plan.historyEffect && resources) ctx.onCompleteTx((tx) => resources.insertHistoryEffect(tx, id, attempt, name));
    return plan.echoWithProgress ? { by: name, attempt, echo: JSON.stringify(task.payload) } : { by: name, attempt };
  }
}
