/**
 * Plain polling: claim, and when the claim came back short, wait `pollIntervalMs` before the next
 * (the worker loop claims again at once after a full batch, and when a slot frees while full).
 * Lateness is up to one interval; every idle worker still claims once per interval.
 */
import type { Pacing } from '../pacing.js';
import { type Discovery, type DiscoveryStats, NO_REBUILDS } from './discovery.js';

export class PollDiscovery implements Discovery {
  readonly mode = 'poll' as const;

  constructor(
    private readonly pacing: Pacing,
    private readonly pollIntervalMs: number,
  ) {}

  async start(): Promise<void> {}

  wantsClaim(): boolean {
    return true;
  }

  claimStarted(): number {
    return 0;
  }

  claimFinished(): void {}

  wait(maxMs: number, wake: AbortSignal): Promise<void> {
    return this.pacing.sleep(Math.max(0, Math.min(this.pollIntervalMs, maxMs)), wake);
  }

  stats(): DiscoveryStats {
    return { mode: 'poll', wheelSize: 0, fired: 0, rebuilds: NO_REBUILDS, notices: 0, listening: false };
  }

  async stop(): Promise<void> {}
}
