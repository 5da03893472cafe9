/**
 * The per-key backlog of `PostgresStore` (`KeyBacklogStore` of `@postpone/core`,
 * docs/contract.md#key-backlog): one read-only statement, `keyBacklog` of `../sql/key-backlog-sql.ts`.
 * Inputs are checked by `@postpone/core` first, so every store refuses the same calls with the same
 * `ValidationError`.
 */
import { encodeKeyBacklogCursor, type KeyBacklogEntry, type KeyBacklogPage, type KeyBacklogParams, validateKeyBacklogParams } from '@postpone/core';
import { type KeyBacklogStatements, keyBacklogStatements } from '../sql/key-backlog-sql.js';
import type { Row } from './driver.js';
import type { PostgresRateLimitContext } from './rate-limit.js';

export class PostgresKeyBacklog {
  readonly sql: KeyBacklogStatements;

  constructor(private readonly ctx: PostgresRateLimitContext) {
    this.sql = keyBacklogStatements(ctx.schema);
  }

  /** One statement; the page size plus one row tells whether a next page exists. */
  async read(params: KeyBacklogParams): Promise<KeyBacklogPage> {
    this.ctx.assertOpen();
    const p = validateKeyBacklogParams(params);
    const rows = await this.ctx.call(() =>
      this.ctx.driver.query(this.sql.keyBacklog, [this.ctx.nowParam(), p.kind, p.after?.due ?? null, p.after?.limitKey ?? null, p.limit + 1]),
    );
    const entries = rows.slice(0, p.limit).map(toEntry);
    const last = entries.at(-1);
    return { kind: p.kind, entries, nextCursor: rows.length > p.limit && last !== undefined ? encodeKeyBacklogCursor(last) : null };
  }
}

function toEntry(r: Row): KeyBacklogEntry {
  const oldest = r.oldestdueatms === null || r.oldestdueatms === undefined ? null : new Date(Number(r.oldestdueatms));
  return { limitKey: String(r.limitkey), due: Number(r.due), notDue: Number(r.notdue), claimed: Number(r.claimed), oldestDueAt: oldest, latenessMs: Number(r.latenessms) };
}
