/**
 * Paused queues and kinds of `PostgresStore` (`Store.pause`, `resume`, `listPaused` of
 * `@postpone/core`, docs/contract.md#pause-and-resume), over the statements of `../sql/pause-sql.ts`.
 * Inputs are checked by `@postpone/core` first, so every store refuses the same calls with the same
 * `ValidationError`, and nothing is sent.
 */
import { type PausedEntry, type PauseOptions, type PauseScope, type PauseTarget, validatePauseOptions, validatePauseTarget } from '@postpone/core';
import { type PauseStatements, pauseStatements } from '../sql/pause-sql.js';
import type { PostgresAdminContext } from './admin.js';

export type PostgresPauseContext = Omit<PostgresAdminContext, 'toTask'> & {
  /** Resolves once the schema has the `pause` table (migration 15); throws `SchemaVersionError` `SCHEMA_BEHIND` otherwise. */
  readonly ready: () => Promise<void>;
};

export class PostgresPause {
  readonly sql: PauseStatements;

  constructor(private readonly ctx: PostgresPauseContext) {
    this.sql = pauseStatements(ctx.schema);
  }

  /** One statement (`pauseInsert`): the row and its notice commit together. */
  async pause(target: PauseTarget, options?: PauseOptions): Promise<boolean> {
    this.ctx.assertOpen();
    const { scope, name } = validatePauseTarget(target);
    const { reason, by } = validatePauseOptions(options);
    await this.ctx.ready();
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.pauseInsert, [this.ctx.nowParam(), scope, name, by, reason, this.ctx.notifyChannel]));
    return rows.length === 1;
  }

  /** One statement (`pauseDelete`). */
  async resume(target: PauseTarget): Promise<boolean> {
    this.ctx.assertOpen();
    const { scope, name } = validatePauseTarget(target);
    await this.ctx.ready();
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.pauseDelete, [scope, name, this.ctx.notifyChannel]));
    return rows.length === 1;
  }

  async list(): Promise<PausedEntry[]> {
    this.ctx.assertOpen();
    await this.ctx.ready();
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.pauseList, []));
    return rows.map((r) => ({
      scope: r.scope as PauseScope,
      name: String(r.name),
      pausedAt: new Date(Number(r.pausedatms)),
      pausedBy: r.pausedby === null || r.pausedby === undefined ? null : String(r.pausedby),
      reason: r.reason === null || r.reason === undefined ? null : String(r.reason),
    }));
  }
}
