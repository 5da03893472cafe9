/**
 * Rate limits in memory (`RateLimitStore` of `@postpone/core`, docs/contract.md#rate-limits): one
 * row per limit with its sliding log of claim times, beside the tasks. The claim reads the rooms,
 * claims and logs without an `await` in between, so on one event loop no other claim interleaves
 * (the PostgreSQL store's row lock on the limit).
 */
import {
  type RateLimited,
  type RateLimitInput,
  type RateLimitRecord,
  type RateLimitScope,
  rateLimitRecord,
  rateLimitRoom,
  validateRateLimit,
  validateRateLimitScope,
} from '@postpone/core';

interface Row {
  readonly scope: 'kind' | 'queue';
  readonly name: string;
  limit: number;
  windowMs: number;
  /** Claim times (ms) of the `limit` most recent claims. */
  log: number[];
}

/** A limited claim's rooms: the claim's limit cut to its queue's room, each limited kind's room, or held back. */
export interface MemoryClaimRooms {
  readonly limit: number;
  readonly kindRooms: Map<string, number>;
  readonly held: RateLimited | null;
}

export class MemoryRateLimits {
  /** The table `rate_limit`: `scope:name` → row. */
  readonly #rows = new Map<string, Row>();

  constructor(private readonly ctx: { readonly nowMs: () => number; readonly assertOpen: () => void }) {}

  async set(input: RateLimitInput): Promise<RateLimitRecord> {
    this.ctx.assertOpen();
    const { scope, name, limit, windowMs } = validateRateLimit(input);
    const id = `${scope}:${name}`;
    const row = this.#rows.get(id) ?? { scope, name, limit, windowMs, log: [] };
    row.limit = limit;
    row.windowMs = windowMs;
    this.#rows.set(id, row);
    return record(row, this.ctx.nowMs());
  }

  async delete(scope: RateLimitScope): Promise<boolean> {
    this.ctx.assertOpen();
    const key = validateRateLimitScope(scope);
    return this.#rows.delete(`${key.scope}:${key.name}`);
  }

  async list(): Promise<RateLimitRecord[]> {
    this.ctx.assertOpen();
    const nowMs = this.ctx.nowMs();
    return [...this.#rows.values()]
      .sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((row) => record(row, nowMs));
  }

  /** The rooms of a claim of `queue` and `kinds` (null: every kind) at `nowMs`, as `PostgresRateLimits.plan`. */
  rooms(queue: string, kinds: readonly string[] | null, limit: number, nowMs: number): MemoryClaimRooms {
    const queueRow = this.#rows.get(`queue:${queue}`);
    const queueRoom = queueRow === undefined ? null : rateLimitRoom(queueRow.log, nowMs, queueRow.limit, queueRow.windowMs);
    const kindRooms = new Map<string, number>();
    const kindReopens: number[] = [];
    for (const row of this.#rows.values()) {
      if (row.scope !== 'kind' || (kinds !== null && !kinds.includes(row.name))) continue;
      const { room, reopensAtMs } = rateLimitRoom(row.log, nowMs, row.limit, row.windowMs);
      kindRooms.set(row.name, room);
      if (room === 0) kindReopens.push(reopensAtMs);
    }
    const allKindsHeld = kinds?.every((kind) => kindRooms.get(kind) === 0) === true;
    const waits = [...(queueRoom !== null && queueRoom.room === 0 ? [queueRoom.reopensAtMs] : []), ...(allKindsHeld ? [Math.min(...kindReopens)] : [])];
    return {
      limit: Math.min(limit, queueRoom === null ? limit : queueRoom.room),
      kindRooms,
      held: waits.length === 0 ? null : { reopensInMs: Math.max(0, Math.max(...waits) - nowMs) },
    };
  }

  /** Logs claims at `nowMs`: `count` of the queue, and per kind. */
  log(queue: string, byKind: ReadonlyMap<string, number>, nowMs: number): void {
    let total = 0;
    for (const [kind, count] of byKind) {
      total += count;
      const row = this.#rows.get(`kind:${kind}`);
      if (row !== undefined) row.log = rateLimitRecord(row.log, nowMs, count, row.limit);
    }
    const queueRow = this.#rows.get(`queue:${queue}`);
    if (queueRow !== undefined && total > 0) queueRow.log = rateLimitRecord(queueRow.log, nowMs, total, queueRow.limit);
  }
}

function record(row: Row, nowMs: number): RateLimitRecord {
  const used = row.log.filter((t) => t > nowMs - row.windowMs).length;
  const { reopensAtMs } = rateLimitRoom(row.log, nowMs, row.limit, row.windowMs);
  return { scope: row.scope, name: row.name, limit: row.limit, windowMs: row.windowMs, used, reopensAt: new Date(reopensAtMs) };
}
