/**
 * Notices that the process was paused (SIGSTOP, a long GC or a blocked event loop, a VM frozen):
 * a heartbeat on the monotonic clock that wakes much later than it asked to.
 *
 * It wakes every `thresholdMs / 2`; a wake more than `thresholdMs` late is a pause. So a pause longer
 * than 1.5 × `thresholdMs` is always seen, within one heartbeat after the process runs again. The
 * heartbeat is a timer only (no I/O).
 */
import type { Pacing } from '@postpone/wheel';

export class PauseWatch {
  private readonly stopped = new AbortController();
  private running = false;

  /**
   * @param thresholdMs lateness that counts as a pause
   * @param onPause called with how late the heartbeat woke, in ms
   */
  constructor(
    private readonly pacing: Pacing,
    private readonly thresholdMs: number,
    private readonly onPause: (lateMs: number) => void,
  ) {}

  /** Starts the heartbeat (no-op when running or stopped). */
  start(): void {
    if (this.running || this.stopped.signal.aborted) return;
    this.running = true;
    void this.beat();
  }

  stop(): void {
    this.stopped.abort();
  }

  private async beat(): Promise<void> {
    const intervalMs = Math.max(1, Math.floor(this.thresholdMs / 2));
    while (!this.stopped.signal.aborted) {
      const expected = this.pacing.now() + intervalMs;
      await this.pacing.sleep(intervalMs, this.stopped.signal);
      if (this.stopped.signal.aborted) return;
      const lateMs = this.pacing.now() - expected;
      if (lateMs > this.thresholdMs) this.onPause(lateMs);
    }
  }
}
