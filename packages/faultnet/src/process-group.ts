/**
 * The child processes of one test: every process spawned through a group is killed (SIGKILL) by
 * `killAll`, so a failing test never leaves workers behind.
 */
import { ChildHandle, type ExitStatus, type SpawnOptions } from './child-process.js';

export class ProcessGroup {
  private readonly members = new Set<ChildHandle<{ readonly type: string }, object>>();

  /** Spawns `entry` and tracks it. */
  spawn<E extends { readonly type: string }, C extends object>(entry: string | URL, options: SpawnOptions): ChildHandle<E, C> {
    const handle = ChildHandle.spawn<E, C>(entry, options);
    this.members.add(handle as unknown as ChildHandle<{ readonly type: string }, object>);
    return handle;
  }

  /** Processes spawned so far. */
  get size(): number {
    return this.members.size;
  }

  /** Kills every process still alive and waits for all of them to end. */
  async killAll(timeoutMs = 10_000): Promise<ExitStatus[]> {
    const members = [...this.members];
    this.members.clear();
    return await Promise.all(members.map((m) => (m.alive ? m.kill9(timeoutMs) : m.exited)));
  }
}
