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
   * @param periodMs silence that makes a probe due, and how long its answer may take, in ms (the
   *   drivers' `LISTEN_HEARTBEAT_MS`)
   * @param readOnly sends the probe on the listening connection; resolves whether its server is read-only
   * @param lost called once, with why, when the probe failed, got no answer within `periodMs`, or found
   *   the server read-only; the caller drops the connection (and calls {@link stop})
   * @param ready false while the connection cannot be probed yet (not yet listening): the tick waits a period
   */
  constructor(
    private readonly periodMs: number,
    private readonly readOnly: () => Promise<boolean>,
    private readonly lost: (error: Error) => void,
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
    void this.probe().then((error) => {
      if (error !== null) {
        this.stop();
        this.lost(error);
        return;
      }
      this.heard();
      this.lastProbedAt = this.lastHeardAt;
      this.arm(this.periodMs);
    });
  };

  /** One probe, bounded by a period: null when answered by a writable server, else why not. */
  private async probe(): Promise<Error | null> {
    let bound: NodeJS.Timeout | undefined;
    const late = new Promise<Error>((resolve) => {
      bound = setTimeout(() => resolve(new Error(`listen heartbeat: no reply within ${this.periodMs} ms`)), this.periodMs);
      bound.unref();
    });
    const answer = this.readOnly().then(
      // A server that turned read-only (the old primary after a failover) hears no writer: leave it.
      (readOnly) => (readOnly ? new Error('the listening connection is on a read-only server') : null),
      (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
    );
    try {
      return await Promise.race([answer, late]);
    } finally {
      clearTimeout(bound);
    }
  }
}
