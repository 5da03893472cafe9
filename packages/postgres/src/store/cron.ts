/**
 * Recurring schedules of `PostgresStore` (`CronStore` of `@postpone/core`,
 * docs/contract.md#recurring-schedules), over the statements of `@postpone/postgres`
 * (`cron-sql.ts`). Inputs are checked by `@postpone/core` first, so every store refuses the
 * same calls with the same `ValidationError`.
 */
import {
  type CronScheduleRecord,
  type ReconcileCronParams,
  type ReconcileCronResult,
  type ScheduleCronOccurrenceParams,
  type ScheduleCronOccurrenceResult,
  validateCronOccurrence,
  validateReconcileCron,
} from '@postpone/core';
import { type CronStatements, cronStatements } from '../sql/cron-sql.js';
import type { PostgresAdminContext } from './admin.js';
import type { Param, Row } from './driver.js';

export type PostgresCronContext = Omit<PostgresAdminContext, 'toTask'> & { readonly maxPayloadBytes: number };

export class PostgresCron {
  readonly sql: CronStatements;

  constructor(private readonly ctx: PostgresCronContext) {
    this.sql = cronStatements(ctx.schema);
  }

  /** One statement (`cronReconcile`). */
  async reconcile(params: ReconcileCronParams): Promise<ReconcileCronResult> {
    this.ctx.assertOpen();
    const { schedules, removeUndeclared } = validateReconcileCron(params);
    const json = JSON.stringify(schedules.map((s) => ({ name: s.name, cron: s.cron, timeZone: s.timeZone })));
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.cronReconcile, [this.ctx.nowParam(), json, removeUndeclared]));
    const of = (change: string) => rows.filter((r) => r.change === change).map((r) => String(r.name)).sort();
    const added = of('added');
    const changed = of('changed');
    const touched = new Set([...added, ...changed]);
    return { added, changed, unchanged: schedules.map((s) => s.name).filter((n) => !touched.has(n)), removed: of('removed') };
  }

  /** One statement (`cronScheduleOccurrence`); when it scheduled nothing, a read of the row says why. */
  async scheduleOccurrence(params: ScheduleCronOccurrenceParams): Promise<ScheduleCronOccurrenceResult> {
    this.ctx.assertOpen();
    const { spec, occurrence, task } = validateCronOccurrence(params, this.ctx.maxPayloadBytes);
    const args: Param[] = [
      this.ctx.nowParam(),
      spec.name,
      spec.cron,
      spec.timeZone,
      occurrence.toISOString(),
      task.kind,
      task.payloadText,
      task.maxAttempts,
      task.traceContext === null ? null : JSON.stringify(task.traceContext),
      this.ctx.notifyChannel,
      // The task's own retry policy (migration 8): a `maxAttempts` given is stored as its own, as schedule does.
      task.retry === null || task.retry === undefined ? null : JSON.stringify(task.retry),
      // Queue and priority (migration 10), as schedule stores them.
      task.queue,
      task.priority,
    ];
    const [hit] = await this.ctx.call(() => this.ctx.driver.query(this.sql.cronScheduleOccurrence, args));
    if (hit) return { outcome: 'SCHEDULED', id: String(hit.id), dueAt: new Date(Number(hit.dueatms)) };
    const [row] = await this.ctx.call(() => this.ctx.driver.query(this.sql.cronScheduleGet, [spec.name]));
    if (!row) return { outcome: 'NOT_FOUND' };
    if (row.cron !== spec.cron || row.timezone !== spec.timeZone) return { outcome: 'CHANGED' };
    return { outcome: 'PASSED', watermark: new Date(Number(row.watermarkms)) };
  }

  async list(): Promise<CronScheduleRecord[]> {
    this.ctx.assertOpen();
    const rows = await this.ctx.call(() => this.ctx.driver.query(this.sql.cronScheduleList));
    return rows.map(toRecord);
  }
}

function toRecord(r: Row): CronScheduleRecord {
  return {
    name: String(r.name),
    cron: String(r.cron),
    timeZone: String(r.timezone),
    watermark: new Date(Number(r.watermarkms)),
    createdAt: new Date(Number(r.createdatms)),
    updatedAt: new Date(Number(r.updatedatms)),
  };
}
