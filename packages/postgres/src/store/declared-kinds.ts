/**
 * A process's cached list of the kinds that have some declaration (a per-key limit, a per-key rate
 * limit): read with one small statement at most every `refreshMs` of the store's clock, shared by the
 * claims that ask meanwhile (one read in flight), dropped when this process changes a declaration.
 * A declaration added or removed by another process reaches this process's claims within
 * `refreshMs`; what a declaration says (its limit) is read in the claim itself.
 */
import type { Row } from './driver.js';
import { SqlState, sqlStateOf } from './errors.js';

export class DeclaredKinds {
  private cache: { readonly atMs: number; readonly kinds: readonly string[] } | null = null;
  private loading: Promise<readonly string[]> | null = null;

  /**
   * @param read sends the statement listing the declarations (rows with a `kind` column); a 42P01 from
   *   it (a schema older than the migration that made the table) means none
   * @param failed turns any other error into the store's typed error (rejects with it)
   */
  constructor(
    private readonly refreshMs: number,
    private readonly read: () => Promise<Row[]>,
    private readonly failed: (error: unknown) => Promise<never>,
  ) {}

  /** The declared kinds a claim of `kinds` (null: every kind) may take, sorted (the advisory locks' order). */
  async applicable(kinds: readonly string[] | null, nowMs: number): Promise<string[]> {
    let known = this.cache !== null && nowMs - this.cache.atMs < this.refreshMs ? this.cache.kinds : null;
    if (known === null) {
      this.loading ??= this.load(nowMs).finally(() => {
        this.loading = null;
      });
      known = await this.loading;
    }
    return known.filter((kind) => kinds === null || kinds.includes(kind)).sort();
  }

  /** This process changed a declaration: the next claim reads the list again. */
  invalidate(): void {
    this.cache = null;
  }

  private async load(nowMs: number): Promise<readonly string[]> {
    let rows: Row[];
    try {
      rows = await this.read();
    } catch (error) {
      if (sqlStateOf(error) !== SqlState.UNDEFINED_TABLE) return await this.failed(error);
      rows = [];
    }
    const kinds = rows.map((r) => String(r.kind));
    this.cache = { atMs: nowMs, kinds };
    return kinds;
  }
}
