/**
 * Whether the worker's own store calls (claim, reclaim, discovery's reads and listening) work, and
 * how long the loop waits before trying again while they fail: one `storeUnavailable` event and one
 * log line when they start failing, one `storeRecovered` when a call succeeds again — never one per
 * failed attempt. The first failure is also an `error` event (as any failed store call); the later
 * ones of the same outage are logged at debug level only.
 *
 * Retry waits grow 100, 200, 400, 800 ms, then stay at 1 000 ms, each stretched by up to a quarter
 * at random (jitter, so a fleet does not retry in step): at most one try per second per worker once
 * an outage is established (Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015).
 */
import type { Logger } from 'pino';
import type { StoreOperation, TypedEmitter } from './events.js';
import type { Pacing } from '@postpone/wheel';

/** First retry wait and its cap, in ms. */
export const OUTAGE_RETRY_FIRST_MS = 100;
export const OUTAGE_RETRY_MAX_MS = 1_000;

export class StoreHealth {
  private down: { readonly since: number; failures: number } | null = null;

  constructor(
    private readonly pacing: Pacing,
    private readonly events: TypedEmitter,
    private readonly logger: Logger,
    private readonly random: () => number = Math.random,
  ) {}

  get unavailable(): boolean {
    return this.down !== null;
  }

  /**
   * A call of the loop or of discovery failed.
   * @returns how long to wait before the loop tries the store again, in ms
   */
  failed(error: unknown, operation: StoreOperation | 'connection'): number {
    if (this.down === null) {
      this.down = { since: this.pacing.now(), failures: 1 };
      if (operation !== 'connection') this.events.emit('error', { error, operation });
      this.events.emit('storeUnavailable', { error, operation });
      this.logger.error({ err: error, operation }, `${operation} failed; the store is unavailable, retrying with backoff`);
    } else {
      this.down.failures += 1;
      this.logger.debug({ err: error, operation, failures: this.down.failures }, `${operation} failed again`);
    }
    const capMs = Math.min(OUTAGE_RETRY_MAX_MS, OUTAGE_RETRY_FIRST_MS * 2 ** Math.min(10, this.down.failures - 1));
    return Math.round(capMs * (1 + this.random() / 4));
  }

  /** A call of the loop or of discovery succeeded. */
  succeeded(): void {
    if (this.down === null) return;
    const { since, failures } = this.down;
    this.down = null;
    const downMs = Math.round(this.pacing.now() - since);
    this.events.emit('storeRecovered', { downMs, failures });
    this.logger.info({ downMs, failures }, 'the store is available again');
  }
}
