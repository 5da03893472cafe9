/**
 * Rate limits of `PostgresStore` (`RateLimitStore` of `@postpone/core`, docs/contract.md#rate-limits),
 * over the statements of `../sql/rate-limit-sql.ts`: declaring and listing limits, the cache of which
 * limits exist, and the limited claim's transaction. Inputs are checked by `@postpone/core` first, so
 * every store refuses the same calls with the same `ValidationError`.
 */
import { type RateLimited, type RateLimitInput, type RateLimitKey, type RateLimitRecord, type RateLimitScope, validateRateLimit, validateRateLimitScope } from '@postpone/core';
import { type RateLimitStatements, rateLimitStatements } from '../sql/rate-limit-sql.js';
import type { PostgresAdminContext } from './admin.js';
import type { QueryFn, Row } from './driver.js';
import { LIMIT_DECLARATIONS_REFRESH_MS, type LimitDeclarations } from './limit-declarations.js';

/**
 * How long a process trusts its list of which limits exist before a claim reads it again (one
 * small statement at most this often, not per claim). A limit added or removed elsewhere reaches
 * this process's claims within this time; a changed `limit` or `windowMs` is read in the claim itself.
 */
export const RATE_LIMIT_REFRESH_MS = LIMIT_DECLARATIONS_REFRESH_MS;

export type PostgresRateLimitContext = Omit<PostgresAdminContext, 'toTask'>;

/** What a limited claim decided before taking tasks. */
export interface LimitedClaimPlan {
  /** The claim's limit cut to the queue limit's room. */
  readonly limit: number;
  /** `{ [kind]: room }` of the limited kinds. */
  readonly kindRooms: Record<string, number>;
  /** The queue, when it has a limit (its log is written). */
  readonly queueLimited: string | null;
  /** Set when everything the claim may take is held back: no claim statement is sent. */
  readonly held: RateLimited | null;
}

export class PostgresRateLimits {
  readonly sql: RateLimitStatements;

  /** @param declarations the store's cache of which limits exist, shared with the per-key limits */
  constructor(
    private readonly ctx: PostgresRateLimitContext,
    private readonly declarations: LimitDeclarations,
  ) {
    this.sql = rateLimitStatements(ctx.schema);
  }

  /** One statement (`rateLimitSet`, an upsert). */
  async set(input: RateLimitInput): Promise<RateLimitRecord> {
    this.ctx.assertOpen();
    const limit = validateRateLimit(input);
    const [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.rateLimitSet, [this.ctx.nowParam(), limit.scope, limit.name, limit.limit, limit.windowMs]));
    this.declarations.invalidate();
    return toRecord(row as Row);
  }

  /** One statement (`rateLimitDelete`). */
  async delete(scope: RateLimitScope): Promise<boolean> {
    this.ctx.assertOpen();
    const key = validateRateLimitScope(scope);
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.rateLimitDelete, [key.scope, key.name]));
    this.declarations.invalidate();
    return rows.length === 1;
  }

  async list(): Promise<RateLimitRecord[]> {
    this.ctx.assertOpen();
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.rateLimitList, [this.ctx.nowParam()]));
    return rows.map(toRecord);
  }

  /**
   * The limits a claim of `queue` and `kinds` (null: every kind) must apply, sorted by (scope, name),
   * from the store's cache of declarations (read again after {@link RATE_LIMIT_REFRESH_MS}). A schema
   * without the table (older than migration 17) has none.
   */
  async applicable(queue: string, kinds: readonly string[] | null, nowMs: number): Promise<RateLimitKey[]> {
    const keys = (await this.declarations.current(nowMs)).rate;
    return keys
      .filter((k) => (k.scope === 'queue' ? k.name === queue : kinds === null || kinds.includes(k.name)))
      .sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * The first statement of a limited claim's transaction (`rateLimitLock`): locks the limits' rows
   * and reads their rooms. Held back (`held` set) when the queue's limit has no room, or when the
   * claim names its kinds and every one has a limit without room.
   */
  async plan(query: QueryFn, nowParam: string | null, keys: readonly RateLimitKey[], queue: string, kinds: readonly string[] | null, limit: number): Promise<LimitedClaimPlan> {
    return decide(await query(this.sql.rateLimitLock, [nowParam, JSON.stringify(keys.map((k) => [k.scope, k.name]))]), queue, kinds, limit);
  }

  /**
   * After a limited claim that came back short, in its transaction (`rateLimitRooms`, no lock: the
   * rows are already locked by {@link plan}): whether the claim used up the room so that everything
   * it may take is now held back, and until when.
   */
  async heldAfter(query: QueryFn, nowParam: string | null, keys: readonly RateLimitKey[], queue: string, kinds: readonly string[] | null): Promise<RateLimited | null> {
    return decide(await query(this.sql.rateLimitRooms, [nowParam, JSON.stringify(keys.map((k) => [k.scope, k.name]))]), queue, kinds, 1).held;
  }
}

/**
 * A limited claim's plan from the rooms of its limits (`rateLimitLock` / `rateLimitRooms` rows):
 * held back when the queue's limit has no room, or when the claim names its kinds and every one has
 * a limit without room.
 */
function decide(rows: readonly Row[], queue: string, kinds: readonly string[] | null, limit: number): LimitedClaimPlan {
  const kindRooms: Record<string, number> = {};
  const kindReopens: number[] = [];
  let queueRow: Row | undefined;
  for (const row of rows) {
    if (row.scope === 'queue') queueRow = row;
    else {
      kindRooms[String(row.name)] = Number(row.room);
      if (Number(row.room) === 0) kindReopens.push(Number(row.reopeninms));
    }
  }
  const queueRoom = queueRow === undefined ? limit : Number(queueRow.room);
  const allKindsHeld = kinds?.every((kind) => kindRooms[kind] === 0) === true;
  const waits = [...(queueRoom === 0 ? [Number(queueRow?.reopeninms)] : []), ...(allKindsHeld ? [Math.min(...kindReopens)] : [])];
  return {
    limit: Math.min(limit, queueRoom),
    kindRooms,
    queueLimited: queueRow === undefined ? null : queue,
    held: waits.length === 0 ? null : { reopensInMs: Math.max(...waits) },
  };
}

function toRecord(r: Row): RateLimitRecord {
  return {
    scope: r.scope === 'queue' ? 'queue' : 'kind',
    name: String(r.name),
    limit: Number(r.maxstarts),
    windowMs: Number(r.windowms),
    used: Number(r.used),
    reopensAt: new Date(Number(r.reopensatms)),
  };
}
