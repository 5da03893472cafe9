/**
 * A process's cached list of every limit declaration a claim must apply: the rate limits' `(scope,
 * name)` (`rate_limit`, docs/contract.md#rate-limits), the kinds with per-key concurrency
 * (`key_limit`, docs/contract.md#per-key-concurrency) and those with a per-key rate limit
 * (`key_rate_limit`, docs/contract.md#per-key-rate-limits). Read with ONE statement
 * (`limitDeclarations`, a `union all` of the three tables) at most every
 * {@link LIMIT_DECLARATIONS_REFRESH_MS} of the monotonic clock, shared by the claims that ask
 * meanwhile (one read in flight), dropped when this process changes a declaration. A declaration
 * added or removed by another process reaches this process's claims within that time; what a
 * declaration says (its limit, its window) is read in the claim itself.
 *
 * Each table once had a cache and a statement of its own, each read again after 1 s: a worker polling
 * every second that found nothing sent its claim and three reads, so 3 idle default workers sent 12.4
 * statements/s instead of about 3 (evidence/bench/report.md, "Throughput II"), and a claim that found
 * the caches expired waited for three round trips, one after the other.
 *
 * A schema older than one of the tables (the migrations that made them: 17, 19, 23) fails the union
 * with 42P01; each table is then read alone, now and at every later read, a missing one holding no
 * declaration.
 */
import type { RateLimitKey } from '@postpone/core';
import { keyLimitStatements } from '../sql/key-limit-sql.js';
import { keyRateStatements } from '../sql/key-rate-sql.js';
import { rateLimitStatements } from '../sql/rate-limit-sql.js';
import type { Row } from './driver.js';
import { SqlState, sqlStateOf } from './errors.js';

/** How long a process trusts its list of limit declarations before a claim reads it again, ms. */
export const LIMIT_DECLARATIONS_REFRESH_MS = 1_000;

/** Every declaration a claim may have to apply, as of one read. */
export interface LimitDeclarationList {
  /** Rate limits, unsorted (`PostgresRateLimits.applicable` filters and sorts them). */
  readonly rate: readonly RateLimitKey[];
  /** Kinds with a per-key concurrency limit. */
  readonly keyLimited: readonly string[];
  /** Kinds with a per-key rate limit. */
  readonly keyRated: readonly string[];
}

/** The statements {@link LimitDeclarations} reads with. */
export interface LimitDeclarationStatements {
  /** → `source` (`rate`, `key`, `keyrate`), `scope`, `name` of every declaration: the one read. */
  readonly all: string;
  /** → `scope`, `name` of every rate limit (read alone on a schema without one of the tables). */
  readonly rate: string;
  /** → `kind` of every per-key concurrency limit (likewise). */
  readonly keyLimited: string;
  /** → `kind` of every per-key rate limit (likewise). */
  readonly keyRated: string;
}

/** The statements of the schema `schema` that {@link LimitDeclarations} reads with. */
export function limitDeclarationStatements(schema: string): LimitDeclarationStatements {
  const rate = rateLimitStatements(schema);
  return { all: rate.limitDeclarations, rate: rate.rateLimitKeys, keyLimited: keyLimitStatements(schema).keyLimitList, keyRated: keyRateStatements(schema).keyRateLimitKinds };
}

export class LimitDeclarations {
  private cache: { readonly atMs: number; readonly list: LimitDeclarationList } | null = null;
  private loading: Promise<LimitDeclarationList> | null = null;
  /** The union met 42P01 once (a table missing): the tables are read alone from then on. */
  private alone = false;

  /**
   * @param query sends one statement (no parameters) and returns its rows
   * @param failed turns an error other than 42P01 into the store's typed error (rejects with it)
   */
  constructor(
    private readonly sql: LimitDeclarationStatements,
    private readonly query: (sql: string) => Promise<Row[]>,
    private readonly failed: (error: unknown) => Promise<never>,
    private readonly refreshMs = LIMIT_DECLARATIONS_REFRESH_MS,
  ) {}

  /**
   * The declarations as of a read at most `refreshMs` before `nowMs` (monotonic ms); one statement
   * when the cache is older, shared with the claims asking meanwhile.
   * @throws the store's typed error when the read fails (other than a missing table)
   */
  async current(nowMs: number): Promise<LimitDeclarationList> {
    if (this.cache !== null && nowMs - this.cache.atMs < this.refreshMs) return this.cache.list;
    this.loading ??= this.load(nowMs).finally(() => {
      this.loading = null;
    });
    return await this.loading;
  }

  /** This process changed a declaration: the next claim reads the list again. */
  invalidate(): void {
    this.cache = null;
  }

  private async load(nowMs: number): Promise<LimitDeclarationList> {
    let list: LimitDeclarationList | null = null;
    if (!this.alone) {
      try {
        list = fromUnion(await this.query(this.sql.all));
      } catch (error) {
        if (sqlStateOf(error) !== SqlState.UNDEFINED_TABLE) return await this.failed(error);
        // A schema older than one of the tables: read each alone, now and from then on (no failing
        // statement a second; a process migrated under it reads the new table on its next read).
        this.alone = true;
      }
    }
    if (list === null) {
      const rate = await this.readAlone(this.sql.rate);
      const keyLimited = await this.readAlone(this.sql.keyLimited);
      const keyRated = await this.readAlone(this.sql.keyRated);
      list = { rate: (rate ?? []).map(toRateKey), keyLimited: (keyLimited ?? []).map((r) => String(r.kind)), keyRated: (keyRated ?? []).map((r) => String(r.kind)) };
    }
    this.cache = { atMs: nowMs, list };
    return list;
  }

  /** One table's rows, or null when the table does not exist yet (42P01). */
  private async readAlone(sql: string): Promise<Row[] | null> {
    try {
      return await this.query(sql);
    } catch (error) {
      if (sqlStateOf(error) !== SqlState.UNDEFINED_TABLE) return await this.failed(error);
      return null;
    }
  }
}

function toRateKey(r: Row): RateLimitKey {
  return { scope: r.scope === 'queue' ? 'queue' : 'kind', name: String(r.name) };
}

function fromUnion(rows: readonly Row[]): LimitDeclarationList {
  const rate: RateLimitKey[] = [];
  const keyLimited: string[] = [];
  const keyRated: string[] = [];
  for (const r of rows) {
    if (r.source === 'rate') rate.push(toRateKey(r));
    else if (r.source === 'key') keyLimited.push(String(r.name));
    else keyRated.push(String(r.name));
  }
  return { rate, keyLimited, keyRated };
}
