/**
 * Per-key concurrency of `PostgresStore` (`KeyLimitStore` of `@postpone/core`,
 * docs/contract.md#per-key-concurrency), over the statements of `../sql/key-limit-sql.ts`: declaring and
 * listing per-key limits, and the cache of which kinds have one. Inputs are checked by
 * `@postpone/core` first, so every store refuses the same calls with the same `ValidationError`.
 */
import { type KeyConcurrencyInput, type KeyConcurrencyRecord, validateKeyConcurrency, validateKeyConcurrencyKind } from '@postpone/core';
import { type KeyLimitStatements, keyLimitStatements } from '../sql/key-limit-sql.js';
import { LIMIT_DECLARATIONS_REFRESH_MS, type LimitDeclarations } from './limit-declarations.js';
import type { Row } from './driver.js';
import type { PostgresRateLimitContext } from './rate-limit.js';

/**
 * How long a process trusts its list of key-limited kinds before a claim reads it again (one small
 * statement at most this often). A declaration added or removed elsewhere reaches this process's
 * claims within this time; a changed `limit` is read in the claim itself.
 */
export const KEY_LIMIT_REFRESH_MS = LIMIT_DECLARATIONS_REFRESH_MS;

export class PostgresKeyLimits {
  readonly sql: KeyLimitStatements;

  /** @param declarations the store's cache of which limits exist, shared with the rate limits */
  constructor(
    private readonly ctx: PostgresRateLimitContext,
    private readonly declarations: LimitDeclarations,
  ) {
    this.sql = keyLimitStatements(ctx.schema);
  }

  /** One statement (`keyLimitSet`, an upsert). */
  async set(input: KeyConcurrencyInput): Promise<KeyConcurrencyRecord> {
    this.ctx.assertOpen();
    const { kind, limit } = validateKeyConcurrency(input);
    const [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.keyLimitSet, [kind, limit]));
    this.declarations.invalidate();
    return toRecord(row as Row);
  }

  /** One statement (`keyLimitDelete`). */
  async delete(target: { readonly kind: string }): Promise<boolean> {
    this.ctx.assertOpen();
    const kind = validateKeyConcurrencyKind(target);
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.keyLimitDelete, [kind]));
    this.declarations.invalidate();
    return rows.length === 1;
  }

  async list(): Promise<KeyConcurrencyRecord[]> {
    this.ctx.assertOpen();
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.keyLimitList));
    return rows.map(toRecord);
  }

  /**
   * The key-limited kinds a claim of `kinds` (null: every kind) may take, sorted (the advisory locks'
   * order), from the cache (read again after {@link KEY_LIMIT_REFRESH_MS}). A schema without the
   * table (older than migration 19) has none.
   */
  async applicable(kinds: readonly string[] | null, nowMs: number): Promise<string[]> {
    return (await this.declarations.current(nowMs)).keyLimited.filter((kind) => kinds === null || kinds.includes(kind)).sort();
  }

}

function toRecord(r: Row): KeyConcurrencyRecord {
  return { kind: String(r.kind), limit: Number(r.limit) };
}
