/**
 * Per-key rate limits of `PostgresStore` (`KeyRateLimitStore` of `@postpone/core`,
 * docs/contract.md#per-key-rate-limits), over the statements of `../sql/key-rate-sql.ts`: declaring and
 * listing them, the cache of which kinds have one, and the pieces of the rated keyed claim (the prune
 * of idle keys' logs, the held-back read). Inputs are checked by `@postpone/core` first, so every store
 * refuses the same calls with the same `ValidationError`.
 */
import { type KeyRateLimitInput, type KeyRateLimitRecord, type RateLimited, ValidationError, validateKeyRateLimit, validateKeyRateLimitKind } from '@postpone/core';
import { keyLimitStatements } from '../sql/key-limit-sql.js';
import { type KeyRateStatements, keyRateStatements } from '../sql/key-rate-sql.js';
import { LIMIT_DECLARATIONS_REFRESH_MS, type LimitDeclarations } from './limit-declarations.js';
import type { QueryFn, Row } from './driver.js';
import type { PostgresRateLimitContext } from './rate-limit.js';

/**
 * How long a process trusts its list of kinds with a per-key rate limit before a claim reads it again
 * (as `KEY_LIMIT_REFRESH_MS`). A declaration added or removed elsewhere reaches this process's claims
 * within this time; a changed `limit` or `windowMs` is read in the claim itself.
 */
export const KEY_RATE_REFRESH_MS = LIMIT_DECLARATIONS_REFRESH_MS;

/** How often at most a process's rated claims also prune idle keys' logs (`keyRateLogPrune`). */
export const KEY_RATE_PRUNE_EVERY_MS = 10_000;

export class PostgresKeyRateLimits {
  readonly sql: KeyRateStatements;
  private readonly lockSql: string;
  private prunedAtMs = Number.NEGATIVE_INFINITY;

  /** @param declarations the store's cache of which limits exist, shared with the rate limits */
  constructor(
    private readonly ctx: PostgresRateLimitContext,
    private readonly declarations: LimitDeclarations,
  ) {
    this.sql = keyRateStatements(ctx.schema);
    this.lockSql = keyLimitStatements(ctx.schema).keyLimitLock;
  }

  /**
   * One statement (`keyRateLimitSet`, an upsert).
   * @throws ValidationError `KEY_RATE_LIMITS_UNSUPPORTED` in the Citus dialect (nothing written): the
   * rated claim upserts with a subquery in ON CONFLICT DO UPDATE and `now()` in its values, forms Citus refuses (0A000).
   */
  async set(input: KeyRateLimitInput): Promise<KeyRateLimitRecord> {
    this.ctx.assertOpen();
    const { kind, limit, windowMs } = validateKeyRateLimit(input);
    if (this.ctx.dialect !== undefined && (await this.ctx.call(() => this.ctx.dialect?.() ?? Promise.resolve('postgres'))) === 'citus') {
      throw new ValidationError('KEY_RATE_LIMITS_UNSUPPORTED', 'kind', 'the Citus dialect keeps no per-key rate limits (docs/contract.md#per-key-rate-limits): nothing was written');
    }
    const [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.keyRateLimitSet, [this.ctx.nowParam(), kind, limit, windowMs]));
    this.declarations.invalidate();
    return toRecord(row as Row);
  }

  /** One transaction: the kind's `keyLimitLock` (no claim of it in flight), then `keyRateLimitDelete` (the declaration and its logs). */
  async delete(target: { readonly kind: string }): Promise<boolean> {
    this.ctx.assertOpen();
    const kind = validateKeyRateLimitKind(target);
    const rows = await this.ctx.call(() =>
      this.ctx.driver.transaction(async (query) => {
        await query(this.lockSql, [this.ctx.schema, JSON.stringify([kind])]);
        return await query(this.sql.keyRateLimitDelete, [kind]);
      }),
    );
    this.declarations.invalidate();
    return rows.length === 1;
  }

  async list(): Promise<KeyRateLimitRecord[]> {
    this.ctx.assertOpen();
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.keyRateLimitList, [this.ctx.nowParam()]));
    return rows.map(toRecord);
  }

  /**
   * The kinds with a per-key rate limit a claim of `kinds` (null: every kind) may take, sorted, from
   * the cache (read again after {@link KEY_RATE_REFRESH_MS}). A schema without the table (older than
   * migration 23) has none.
   */
  async applicable(kinds: readonly string[] | null, nowMs: number): Promise<string[]> {
    return (await this.declarations.current(nowMs)).keyRated.filter((kind) => kinds === null || kinds.includes(kind)).sort();
  }


  /** In a rated claim's transaction, after `keyLimitLock`: `keyRateLogPrune` of `rated`, at most every {@link KEY_RATE_PRUNE_EVERY_MS}. */
  async pruneIfDue(query: QueryFn, nowParam: string | null, rated: readonly string[], nowMs: number): Promise<void> {
    if (nowMs - this.prunedAtMs < KEY_RATE_PRUNE_EVERY_MS) return;
    this.prunedAtMs = nowMs;
    await query(this.sql.keyRateLogPrune, [nowParam, JSON.stringify(rated)]);
  }

  /** After a short rated claim, in its transaction (`keyRateHeld`): held back, and until when, or null. */
  async heldAfter(query: QueryFn, nowParam: string | null, kinds: readonly string[], queue: string): Promise<RateLimited | null> {
    const [row] = await query(this.sql.keyRateHeld, [nowParam, JSON.stringify(kinds), queue]);
    return row?.held === true ? { reopensInMs: Number(row.reopeninms) } : null;
  }

}

function toRecord(r: Row): KeyRateLimitRecord {
  return { kind: String(r.kind), limit: Number(r.limit), windowMs: Number(r.windowms), heldKeys: Number(r.heldkeys) };
}
