/**
 * Plain polling: claim, and when the claim came back short, wait `pollIntervalMs` before the next
 * (the worker loop claims again at once after a full batch, and when a slot frees while full).
 * Lateness is up to one interval; every idle worker still claims once per interval.
 *
 * When the store has notifications (`listen`), a polling worker listens too, for one notice only:
 * cancel requested for a task it runs, so the handler's signal aborts at once instead of at the next
 * renewal. A failed LISTEN is tried again at most every {@link LISTEN_RETRY_MS}, after a claim worked.
 */
import type { ClaimedTask } from '@postpone/core';
import { type Discovery, type DiscoveryDeps, type DiscoveryStats, NO_REBUILDS } from './discovery.js';
import { noticeSource, readNotice } from './notices.js';

/** Least time between two LISTEN tries after one failed. */
export const LISTEN_RETRY_MS = 5_000;

/** Longest wait for LISTEN before the first claim (a store's listen answers within its own probe, 3 s for PostgreSQL). */
export const LISTEN_START_WAIT_MS = 4_000;

export class PollDiscovery implements Discovery {
  readonly mode = 'poll' as const;
  private unlisten: (() => Promise<void>) | null = null;
  private listening: Promise<void> | null = null;
  private retryListenAt = Number.NEGATIVE_INFINITY;
  private notices = 0;
  private stopped = false;

  constructor(
    private readonly deps: DiscoveryDeps,
    private readonly pollIntervalMs: number,
  ) {}

  /**
   * Listens before the first claim, so a cancel of the first tasks reaches them, but waits at most
   * {@link LISTEN_START_WAIT_MS}: a listener that hangs (a half-open connection, a pooler) must not stop polling.
   */
  async start(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, LISTEN_START_WAIT_MS);
    });
    await Promise.race([this.listen(), bound]);
    clearTimeout(timer);
  }

  wantsClaim(): boolean {
    return true;
  }

  claimStarted(): number {
    return 0;
  }

  claimFinished(_token: number, _asked: number, claimed: readonly ClaimedTask[] | null): void {
    if (claimed !== null && this.unlisten === null && this.deps.pacing.now() >= this.retryListenAt) void this.listen();
  }

  wait(maxMs: number, wake: AbortSignal): Promise<void> {
    return this.deps.pacing.sleep(Math.max(0, Math.min(this.pollIntervalMs, maxMs)), wake);
  }

  stats(): DiscoveryStats {
    return { mode: 'poll', wheelSize: 0, fired: 0, rebuilds: NO_REBUILDS, notices: this.notices, listening: this.unlisten !== null, peers: 0, deferred: 0, fallbacks: 0, helped: 0 };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.listening;
    const unlisten = this.unlisten;
    this.unlisten = null;
    if (unlisten !== null) await unlisten().catch((error: unknown) => this.deps.logger.warn({ err: error }, 'unlisten failed'));
  }

  /** Registers the listener when the store has one; never throws (a failure is reported). */
  private listen(): Promise<void> {
    const source = noticeSource(this.deps.store);
    if (source === null || this.stopped || this.listening !== null) return this.listening ?? Promise.resolve();
    this.listening = (async () => {
      try {
        const unlisten = await source.listen((value) => {
          const notice = readNotice(value);
          if (notice?.op !== 'cancelRequested') return;
          this.notices += 1;
          this.deps.onCancelRequested(notice.id);
        });
        if (this.stopped) await unlisten().catch(() => undefined);
        else this.unlisten = unlisten;
        this.deps.succeeded();
      } catch (error) {
        // A configuration the store refuses (e.g. LISTEN behind a transaction pooler without a
        // direct connection) will not change: report it once and keep polling without notices.
        const refused = (error as { name?: unknown } | null)?.name === 'ValidationError';
        this.retryListenAt = refused ? Number.POSITIVE_INFINITY : this.deps.pacing.now() + LISTEN_RETRY_MS;
        this.deps.report(error, 'listen');
      } finally {
        this.listening = null;
      }
    })();
    return this.listening;
  }
}
