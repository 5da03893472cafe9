/**
 * The child's `claimLoop` mode, for the naive-claim control and its twin under the same load: claim
 * up to `limit` tasks, pause `pauseMs`, complete each and write one `effect_nounique` row per
 * completion. `naive` claims with SELECT-then-UPDATE and completes unfenced (the broken design);
 * `atomic` uses the store's claim and fenced complete, with the effect row in the completing
 * transaction.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { NegativeControls, type NaiveClaim } from './negative/controls.js';
import type { ParentChannel } from './channel.js';
import type { ClaimLoopPlan } from './protocol.js';
import type { ChildResources, Runner } from './resources.js';

export async function prepareClaimLoop(loop: ClaimLoopPlan, resources: ChildResources, channel: ParentChannel): Promise<Runner> {
  const { name: owner, store } = resources;
  const controls = new NegativeControls(resources.pool, resources.schema);
  await controls.createEffectNoUnique();

  const report = (claims: readonly NaiveClaim[]) => {
    for (const c of claims) void channel.emit({ type: 'claimed', ...c });
  };

  const naiveRound = async (): Promise<number> => {
    const claims = await controls.naiveClaim({ owner, limit: loop.limit, leaseMs: loop.leaseMs, pauseMs: loop.pauseMs });
    report(claims);
    for (const c of claims) {
      const outcome = await controls.unfencedComplete({ id: c.id, attempt: c.attempt, owner, result: { by: owner, attempt: c.attempt } });
      void channel.emit({ type: 'committed', id: c.id, attempt: c.attempt, outcome });
    }
    return claims.length;
  };

  const atomicRound = async (): Promise<number> => {
    const tasks = await store.claim({ owner, limit: loop.limit, leaseMs: loop.leaseMs });
    report(
      tasks.map((t) => ({ id: t.id, attempt: t.attempt, dueAtMs: t.dueAt.getTime(), leaseUntilMs: t.leaseUntil.getTime(), claimedAtMs: t.claimedAt.getTime() })),
    );
    if (tasks.length > 0 && loop.pauseMs > 0) await sleep(loop.pauseMs);
    for (const t of tasks) {
      const outcome = await store.complete({
        id: t.id,
        attempt: t.attempt,
        owner,
        result: { by: owner, attempt: t.attempt },
        work: (tx) => controls.insertEffectNoUnique(t.id, t.attempt, owner, tx as pg.PoolClient),
      });
      void channel.emit({ type: 'committed', id: t.id, attempt: t.attempt, outcome });
    }
    return tasks.length;
  };

  const round = loop.claim === 'naive' ? naiveRound : atomicRound;
  let running = false;
  let done: Promise<void> = Promise.resolve();
  const run = async () => {
    while (running) {
      const found = await round();
      if (found === 0 && running) await sleep(loop.idleMs);
    }
  };
  return {
    start() {
      if (running) return;
      running = true;
      done = run();
    },
    async stop() {
      running = false;
      await done;
    },
  };
}
