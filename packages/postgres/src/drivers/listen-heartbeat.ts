/**
 * Paces the heartbeat of a listening connection (both drivers): a LISTEN connection is idle between
 * notifications, so a half-open one (no FIN, no RST) would go unnoticed, and after a failover one may
 * sit on a server turned read-only. The heartbeat (the read-only probe) answers both.
 *
 * A notification proves the connection alive, not the server writable: a server fenced with
 * `default_transaction_read_only` still delivers a `pg_notify` that wrote nothing (a worker's
 * presence notice from a session still there). So the probe is sent once the connection has heard
 * nothing — no notification, no probe answer — for a period, and in any case at least every
 * {@link MAX_PERIODS_WITHOUT_PROBE} periods: a lost connection is still noticed within 2 periods of
 * the last thing it heard (one of silence, one for the probe's answer), a connection on a read-only
 * server within that many periods plus one; a worker hearing its peers' notices sends a third as
 * many probes (issue 24, idle statements).
 */

/** Longest time between two read-only probes of a connection that keeps hearing notifications, in periods. */
export const MAX_PERIODS_WITHOUT_PROBE = 3;

export class ListenHeartbeat {
  private lastHeardAt = performance.now();
  private lastProbedAt = performance.now();
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
    const now = performance.now();
    const quietMs = now - this.lastHeardAt;
    const unprobedMs = now - this.lastProbedAt;
    const maxUnprobedMs = MAX_PERIODS_WITHOUT_PROBE * this.periodMs;
    if (quietMs < this.periodMs && unprobedMs < maxUnprobedMs) {
      this.arm(Math.min(this.periodMs - quietMs, maxUnprobedMs - unprobedMs));
      return;
    }
    if (!this.ready()) {
      this.arm(this.periodMs);
      return;
    }
    void this.beat().then(() => {
      this.heard();
      this.lastProbedAt = this.lastHeardAt;
      this.arm(this.periodMs);
    });
  };
}
