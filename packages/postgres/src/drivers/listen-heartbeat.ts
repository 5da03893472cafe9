/**
 * Paces the heartbeat of a listening connection (both drivers): a LISTEN connection is idle between
 * notifications, so a half-open one (no FIN, no RST) would go unnoticed, and after a failover one may
 * sit on a server turned read-only. The heartbeat (the read-only probe) answers both; a notification
 * answers them as well: the server spoke, and a standby sends none (PostgreSQL refuses NOTIFY during
 * recovery). So the probe is sent only once the connection has heard nothing — no notification, no
 * probe answer — for a whole period: an idle worker beside busy peers, which hears their notices,
 * sends none (issue 24, idle statements), and a lost connection is still noticed within 2 periods of
 * the last thing it heard (one period of silence, then one for the probe's answer).
 */
import { performance } from 'node:perf_hooks';

export class ListenHeartbeat {
  private lastHeardAt = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /**
   * Starts the pacing; the first probe is due one period from now.
   * @param periodMs silence that makes a probe due, in ms (the drivers' `LISTEN_HEARTBEAT_MS`)
   * @param beat sends the probe; resolves once it was answered and the connection kept (the caller
   *   bounds the wait and ends the connection otherwise, then calls {@link stop}); must not reject
   * @param ready false while the connection cannot be probed yet (not yet listening): the tick waits a period
   */
  constructor(
    private readonly periodMs: number,
    private readonly beat: () => Promise<void>,
    private readonly ready: () => boolean = () => true,
  ) {
    this.arm(periodMs);
  }

  /** Something arrived from the server (a notification): the silence starts again. */
  heard(): void {
    this.lastHeardAt = performance.now();
  }

  /** No more probes. Idempotent. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(this.tick, Math.max(1, ms));
    this.timer.unref();
  }

  private readonly tick = (): void => {
    if (this.stopped) return;
    const quietMs = performance.now() - this.lastHeardAt;
    if (quietMs < this.periodMs) {
      this.arm(this.periodMs - quietMs);
      return;
    }
    if (!this.ready()) {
      this.arm(this.periodMs);
      return;
    }
    void this.beat().then(() => {
      this.heard();
      this.arm(this.periodMs);
    });
  };
}
