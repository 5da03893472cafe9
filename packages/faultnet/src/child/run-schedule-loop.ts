/**
 * The child's `scheduleLoop` mode, for the dedup key modes' race (evidence `debounce_throttle`,
 * docs/contract.md#dedup-keys): on `start`, `parallel` callers schedule one (kind, key) `count` times
 * in all with the plan's `onConflict` (and `throttleMs`), then the child reports one `scheduleDone`
 * event with what the store answered: calls, created / replaced / throttled counts, the distinct ids
 * returned and the ids of the tasks it created.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { OnConflict, ScheduledTask } from '@postpone/core';
import type { ParentChannel } from './channel.js';
import type { ScheduleLoopPlan } from './protocol.js';
import type { ChildResources, Runner } from './resources.js';

export function prepareScheduleLoop(loop: ScheduleLoopPlan, resources: ChildResources, channel: ParentChannel): Runner {
  const { store } = resources;
  const options = { onConflict: loop.onConflict as OnConflict, ...(loop.throttleMs === undefined ? {} : { throttleMs: loop.throttleMs }) };
  let done: Promise<void> = Promise.resolve();
  let stopped = false;
  const run = async () => {
    const results: ScheduledTask[] = [];
    const errors: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: loop.parallel }, async () => {
        while (next < loop.count && !stopped) {
          const i = next++;
          try {
            results.push(await store.schedule({ kind: loop.kind, key: loop.key, payload: { by: resources.name, i }, delayMs: loop.delayMs ?? 0 }, options));
          } catch (error) {
            errors.push(error instanceof Error ? error.message : String(error));
          }
          if ((loop.pauseMs ?? 0) > 0) await sleep(loop.pauseMs);
        }
      }),
    );
    await channel.emit({
      type: 'scheduleDone',
      calls: results.length,
      created: results.filter((r) => r.created).length,
      replaced: results.filter((r) => r.replaced).length,
      throttled: results.filter((r) => r.throttled === true).length,
      ids: [...new Set(results.map((r) => r.id))],
      createdIds: results.filter((r) => r.created).map((r) => r.id),
      errors: errors.length,
      ...(errors[0] === undefined ? {} : { firstError: errors[0] }),
    });
  };
  return {
    start() {
      done = run();
    },
    async stop() {
      stopped = true;
      await done;
    },
  };
}
