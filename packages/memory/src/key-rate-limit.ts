/**
 * Per-key rate limits in memory (`KeyRateLimitStore` of `@postpone/core`,
 * docs/contract.md#per-key-rate-limits): one row per declared kind and a sliding log of claim times per
 * (kind, limitKey). The claim reads the rooms, claims and logs without an `await` in between, so on
 * one event loop no other claim interleaves (the PostgreSQL store's per-kind advisory lock).
 */
import { type KeyRateLimitInput, type KeyRateLimitRecord, rateLimitRecord, rateLimitRoom, validateKeyRateLimit, validateKeyRateLimitKind } from '@postpone/core';

interface Row {
  limit: number;
  windowMs: number;
  /** limitKey → claim times (ms) of its `limit` most recent claims. */
  readonly logs: Map<string, number[]>;
}

export class MemoryKeyRateLimits {
  /** The tables `key_rate_limit` and `key_rate_log`: kind → row. */
  readonly #rows = new Map<string, Row>();

  constructor(private readonly ctx: { readonly nowMs: () => number; readonly assertOpen: () => void }) {}

  async set(input: KeyRateLimitInput): Promise<KeyRateLimitRecord> {
    this.ctx.assertOpen();
    const { kind, limit, windowMs } = validateKeyRateLimit(input);
    const row = this.#rows.get(kind) ?? { limit, windowMs, logs: new Map() };
    row.limit = limit;
    row.windowMs = windowMs;
    this.#rows.set(kind, row);
    return record(kind, row, this.ctx.nowMs());
  }

  async delete(target: { readonly kind: string }): Promise<boolean> {
    this.ctx.assertOpen();
    return this.#rows.delete(validateKeyRateLimitKind(target));
  }

  async list(): Promise<KeyRateLimitRecord[]> {
    this.ctx.assertOpen();
    const nowMs = this.ctx.nowMs();
    return [...this.#rows].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([kind, row]) => record(kind, row, nowMs));
  }

  /** The declared kinds a claim may take (`kinds` null: every kind). */
  applicable(kinds: readonly string[] | null): string[] {
    return [...this.#rows.keys()].filter((kind) => kinds === null || kinds.includes(kind));
  }

  /** The rate room of (kind, key) at `nowMs`, or undefined when the kind has no per-key rate limit. */
  room(kind: string, key: string, nowMs: number): { room: number; reopensAtMs: number } | undefined {
    const row = this.#rows.get(kind);
    return row === undefined ? undefined : rateLimitRoom(row.logs.get(key) ?? [], nowMs, row.limit, row.windowMs);
  }

  /** The earliest time a full key of `kinds` reopens (its `limit`-th most recent claim + window), or Infinity. */
  earliestReopen(kinds: readonly string[], nowMs: number): number {
    let earliest = Number.POSITIVE_INFINITY;
    for (const kind of kinds) {
      const row = this.#rows.get(kind);
      for (const log of row?.logs.values() ?? []) {
        const { room, reopensAtMs } = rateLimitRoom(log, nowMs, row!.limit, row!.windowMs);
        if (room === 0) earliest = Math.min(earliest, reopensAtMs);
      }
    }
    return earliest;
  }

  /** Logs `count` claims of (kind, key) at `nowMs`, keeping the `limit` most recent; drops logs idle for longer than the window. */
  log(kind: string, key: string, count: number, nowMs: number): void {
    const row = this.#rows.get(kind);
    if (row === undefined) return;
    row.logs.set(key, rateLimitRecord(row.logs.get(key) ?? [], nowMs, count, row.limit));
    for (const [k, log] of row.logs) if (Math.max(...log) <= nowMs - row.windowMs) row.logs.delete(k);
  }
}

function record(kind: string, row: Row, nowMs: number): KeyRateLimitRecord {
  let heldKeys = 0;
  for (const log of row.logs.values()) if (rateLimitRoom(log, nowMs, row.limit, row.windowMs).room === 0) heldKeys++;
  return { kind, limit: row.limit, windowMs: row.windowMs, heldKeys };
}
