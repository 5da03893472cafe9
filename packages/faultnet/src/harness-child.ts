/**
 * Starts harness child processes: the entry `child/worker-main` beside this module (its `.ts`
 * through tsx when the harness runs from source under vitest, the compiled `.js` otherwise),
 * configured by JSON in `POSTPONE_HARNESS_CONFIG`, talking over IPC.
 */
import { CONFIG_ENV, type ChildConfig, type ChildControl, type ChildEvent } from './child/protocol.js';
import type { ChildHandle } from './child-process.js';
import type { ProcessGroup } from './process-group.js';

/** A running harness child: its events, controls and signals. */
export type HarnessChild = ChildHandle<ChildEvent, ChildControl>;

/** The child entry: source (`.ts`) when this module runs from source, compiled (`.js`) otherwise. */
export function childEntry(): URL {
  const fromSource = import.meta.url.endsWith('.ts');
  return new URL(fromSource ? './child/worker-main.ts' : './child/worker-main.js', import.meta.url);
}

/** Spawns one harness child in `group` (killed with the group), with `env` added to its environment, through `command` when given (see `SpawnOptions.command`). */
export function spawnHarnessChild(group: ProcessGroup, config: ChildConfig, env: Readonly<Record<string, string>> = {}, command?: readonly string[]): HarnessChild {
  return group.spawn<ChildEvent, ChildControl>(childEntry(), { name: config.name, env: { ...env, [CONFIG_ENV]: JSON.stringify(config) }, ...(command === undefined ? {} : { command }) });
}

/** Waits until every child reported `ready`. */
export async function allReady(children: readonly HarnessChild[], timeoutMs = 20_000): Promise<void> {
  await Promise.all(children.map((child) => child.waitFor('ready', () => true, timeoutMs)));
}

/** Sends `start` to every child at once (one tight loop, so their first claims start together). */
export async function startAll(children: readonly HarnessChild[]): Promise<void> {
  await Promise.all(children.map((child) => child.send({ type: 'start' })));
}

/** Stops every child gracefully (each finishes its current work and exits 0), killing laggards. */
export async function stopAll(children: readonly HarnessChild[], timeoutMs = 10_000): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (!child.alive) return;
      await child.send({ type: 'stop' }).catch(() => {});
      await child.waitExit(timeoutMs);
    }),
  );
}
