/**
 * Per-key concurrency of `PostgresStore` (`KeyLimitStore` of `@postpone/core`,
 * docs/contract.md#per-key-concurrency), over the statements of `../sql/key-limit-sql.ts`: declaring and
 * listing per-key limits, and the cache of which kinds have one. Inputs are checked by
 * `@postpone/core` first, so every store refuses the same calls with the same `ValidationError`.
 */
import { type KeyConcurrencyInput, type KeyConcurrencyRecord, validateKeyConcurrency, validateKeyConcurrencyKind } from '@postpone/core';
import { type KeyLimitStatements, keyLimitStatements } from '../sql/key-limit-sql.js';
import type { Row } from './driver.js';
import { SqlState, sqlStateOf } from './errors.js';
import type { PostgresRateLimitContext } from './rate-limit.js';

/**
 * How long a process trusts its list of key-limited kinds before a claim reads it again (one small
 * statement at most this often). A declaration added or removed elsewhere reaches this process's
 * claims within this time; a changed `limit` is read in the claim itself.
 */
export const KEY_LIMIT_REFRESH_MS = 1_000;

export class PostgresKeyLimits {
  readonly sql: KeyLimitStatements;
  private cache: { readonly atMs: number; readonly kinds: readonly string[] } | null = null;
  private loading: Promise<readonly string[]> | null = null;

  constructor(private readonly ctx: PostgresRateLimitContext) {
    this.sql = keyLimitStatements(ctx.schema);
  }

  /** One statement (`keyLimitSet`, an upsert). */
  async set(input: KeyConcurrencyInput): Promise<KeyConcurrencyRecord> {
    this.ctx.assertOpen();
    const { kind, limit } = validateKeyConcurrency(input);
    const [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.keyLimitSet, [kind, limit]));
    this.cache = null;
    return toRecord(row as Row);
  }

  /** One statement (`keyLimitDelete`). */
  async delete(target: { readonly kind: string }): Promise<boolean> {
    this.ctx.assertOpen();
    const kind = validateKeyConcurrencyKind(target);
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.keyLimitDelete, [kind]));
    this.cache = null;
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
    let known = this.cache !== null && nowMs - this.cache.atMs < KEY_LIMIT_REFRESH_MS ? this.cache.kinds : null;
    if (known === null) {
      this.loading ??= this.load(nowMs).finally(() => {
        this.loading = null;
      });
      known = await this.loading;
    }
    return known.filter((kind) => kinds === null || kinds.includes(kind)).sort();
  }

  private async load(nowMs: number): Promise<readonly string[]> {
    let rows: Row[];
    try {
      rows = await this.ctx.driver.query(this.sql.keyLimitList);
    } catch (error) {
      if (sqlStateOf(error) !== SqlState.UNDEFINED_TABLE) return await this.ctx.call(() => Promise.reject(error));
      rows = [];
    }
    const kinds = rows.map((r) => String(r.kind));
    this.cache = { atMs: nowMs, kinds };
    return kinds;
  }
}

function toRecord(r: Row): KeyConcurrencyRecord {
  return { kind: String(r.kind), limit: Number(r.limit) };
}
