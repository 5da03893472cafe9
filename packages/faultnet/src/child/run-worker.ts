/**
 * The child's `worker` mode: the real worker runtime (`@postpone/worker`) over the real PostgreSQL
 * store, with a planned handler, its events forwarded to the test, and every extend answer reported
 * (the worker itself only reports successful renewals).
 */
import type { Store } from '@postpone/core';
import { createWorker, type Worker } from '@postpone/worker';
import { createAppEffectTable } from '../app-effect.js';
import { NegativeControls, withUnfencedComplete } from './negative/controls.js';
import { overrideStore } from '@postpone/core';
import type { ParentChannel } from './channel.js';
import { planHandler } from './plan-handler.js';
import type { HandlerPlan, VariantPlan, WorkerSettings } from './protocol.js';
import type { ChildResources, Runner } from './resources.js';

export interface WorkerRun {
  readonly worker: WorkerSettings;
  readonly handler: HandlerPlan;
  readonly variant?: VariantPlan;
}

/**
 * `store` with every extend answer (of `extend` and of each `extendMany` item) sent to the test as an
 * `extended` event, and every claim call as `claimTimed` (its duration and limit; `ok` false for each
 * call that rejected, so the test knows exactly how many claims ended without an answer).
 */
function observeExtend<Tx>(store: Store<Tx>, channel: ParentChannel): Store<Tx> {
  return overrideStore(store, {
    claim: async (params) => {
      const started = performance.now();
      try {
        const tasks = await store.claim(params);
        void channel.emit({ type: 'claimTimed', ms: performance.now() - started, limit: params.limit, count: tasks.length, ok: true });
        return tasks;
      } catch (error) {
        void channel.emit({ type: 'claimTimed', ms: performance.now() - started, limit: params.limit, count: 0, ok: false });
        throw error;
      }
    },
    extend: async (params) => {
      const ok = await store.extend(params);
      void channel.emit({ type: 'extended', id: params.id, attempt: params.attempt, ok });
      return ok;
    },
    // The worker renews its leases in batches: one `extended` event per item, as for extend.
    extendMany: async (params) => {
      const renewed = await store.extendMany(params);
      for (const [i, item] of params.items.entries()) void channel.emit({ type: 'extended', id: item.id, attempt: item.attempt, ok: renewed[i] === true });
      return renewed;
    },
  });
}

function forwardEvents(worker: Worker<unknown>, channel: ParentChannel): void {
  worker.on('claimed', ({ task }) => {
    void channel.emit({
      type: 'claimed',
      id: task.id,
      attempt: task.attempt,
      claimedAtMs: task.claimedAt.getTime(),
      dueAtMs: task.dueAt.getTime(),
      leaseUntilMs: task.leaseUntil.getTime(),
    });
  });
  worker.on('renewed', ({ task }) => void channel.emit({ type: 'renewed', id: task.id, attempt: task.attempt }));
  worker.on('leaseLost', ({ task, reason }) => void channel.emit({ type: 'leaseLost', id: task.id, attempt: task.attempt, reason }));
  worker.on('completed', ({ task, outcome }) => void channel.emit({ type: 'committed', id: task.id, attempt: task.attempt, outcome }));
  worker.on('failed', ({ task, error, result }) => void channel.emit({ type: 'failed', id: task.id, attempt: task.attempt, outcome: result.outcome, error }));
  worker.on('rejectedStale', ({ task, operation }) => void channel.emit({ type: 'rejectedStale', id: task.id, attempt: task.attempt, operation }));
  worker.on('reclaimed', ({ task }) => void channel.emit({ type: 'reclaimed', id: task.id, attempt: task.attempt, outcome: task.outcome }));
  worker.on('wheelRebuilt', ({ reason, listed, size }) => void channel.emit({ type: 'wheelRebuilt', reason, listed, size }));
  worker.on('released', ({ task, outcome }) => void channel.emit({ type: 'released', id: task.id, attempt: task.attempt, outcome }));
  worker.on('error', ({ error, operation }) => void channel.emit({ type: 'error', operation, message: `${operation}: ${String(error)}` }));
}

/**
 * Builds the worker; `start` begins claiming, `stop` ends gracefully.
 * @throws ValidationError for bad worker settings (reported by the caller)
 */
export async function prepareWorker(run: WorkerRun, resources: ChildResources, channel: ParentChannel): Promise<Runner> {
  let store: Store<unknown> = resources.store;
  if (run.handler.effect !== false) await createAppEffectTable(resources.pool, resources.schema);
  if (run.variant?.complete === 'unfenced') {
    const controls = new NegativeControls(resources.pool, resources.schema);
    await controls.createEffectNoUnique();
    store = withUnfencedComplete(store, controls);
  }
  const { worker: settings } = run;
  const worker = createWorker<unknown>({
    store: observeExtend(store, channel),
    handlers: Object.fromEntries([run.handler.kind, ...(run.handler.alsoKinds ?? [])].map((kind) => [kind, planHandler(run.handler, resources.name, channel, resources)])),
    id: resources.name,
    concurrency: settings.concurrency,
    leaseMs: settings.leaseMs,
    renewEveryMs: settings.renewEveryMs,
    pollIntervalMs: settings.pollIntervalMs,
    backoffBaseMs: settings.backoffBaseMs,
    ...(settings.reclaimEveryMs === undefined ? {} : { reclaimEveryMs: settings.reclaimEveryMs }),
    ...(settings.abandonGraceMs === undefined ? {} : { abandonGraceMs: settings.abandonGraceMs }),
    ...(settings.discovery === undefined ? {} : { discovery: settings.discovery }),
    ...(settings.fallbackPollMs === undefined ? {} : { hybrid: { fallbackPollMs: settings.fallbackPollMs } }),
    ...(settings.completeBatchSize === undefined ? {} : { completeBatchSize: settings.completeBatchSize }),
    ...(settings.claimKinds === undefined ? {} : { claimKinds: settings.claimKinds }),
    ...(settings.kindConcurrency === undefined ? {} : { kindConcurrency: settings.kindConcurrency }),
  });
  forwardEvents(worker, channel);
  return {
    start: () => void worker.start(),
    stop: async () => {
      await worker.stop({ timeoutMs: 2_000 });
    },
  };
}
