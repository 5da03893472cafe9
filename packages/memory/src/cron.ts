/**
 * Recurring schedules in memory (`CronStore` of `@postpone/core`, docs/contract.md#recurring-schedules):
 * the schedule rows and their watermarks, beside the tasks. Each operation runs without an `await`
 * between its reads and writes, so on one event loop it is one transaction: the watermark moves and
 * the task is committed together, or neither.
 */
import type { NormalizedSchedule, ScheduledTask } from '@postpone/core';
import {
  type CronScheduleRecord,
  type ReconcileCronParams,
  type ReconcileCronResult,
  type ScheduleCronOccurrenceParams,
  type ScheduleCronOccurrenceResult,
  validateCronOccurrence,
  validateReconcileCron,
} from '@postpone/core';

export interface MemoryCronContext {
  readonly nowMs: () => number;
  readonly maxPayloadBytes: number;
  /** Inserts and commits one task the way schedule does. */
  readonly insert: (input: NormalizedSchedule) => ScheduledTask;
  readonly assertOpen: () => void;
}

export class MemoryCron {
  /** The table `cron_schedule`: name → row. */
  readonly #rows = new Map<string, CronScheduleRecord>();

  constructor(private readonly ctx: MemoryCronContext) {}

  async reconcile(params: ReconcileCronParams): Promise<ReconcileCronResult> {
    this.ctx.assertOpen();
    const { schedules, removeUndeclared } = validateReconcileCron(params);
    const now = new Date(this.ctx.nowMs());
    const added: string[] = [];
    const changed: string[] = [];
    const unchanged: string[] = [];
    const removed: string[] = [];
    const declared = new Set(schedules.map((s) => s.name));
    if (removeUndeclared) {
      for (const name of [...this.#rows.keys()].sort()) {
        if (!declared.has(name)) {
          this.#rows.delete(name);
          removed.push(name);
        }
      }
    }
    for (const spec of schedules) {
      const row = this.#rows.get(spec.name);
      if (row === undefined) {
        this.#rows.set(spec.name, { ...spec, watermark: now, createdAt: now, updatedAt: now });
        added.push(spec.name);
      } else if (row.cron !== spec.cron || row.timeZone !== spec.timeZone) {
        const watermark = new Date(Math.max(row.watermark.getTime(), now.getTime()));
        this.#rows.set(spec.name, { ...row, ...spec, watermark, updatedAt: now });
        changed.push(spec.name);
      } else unchanged.push(spec.name);
    }
    return { added, changed, unchanged, removed };
  }

  async scheduleOccurrence(params: ScheduleCronOccurrenceParams): Promise<ScheduleCronOccurrenceResult> {
    this.ctx.assertOpen();
    const { spec, occurrence, task } = validateCronOccurrence(params, this.ctx.maxPayloadBytes);
    const row = this.#rows.get(spec.name);
    if (row === undefined) return { outcome: 'NOT_FOUND' };
    if (row.cron !== spec.cron || row.timeZone !== spec.timeZone) return { outcome: 'CHANGED' };
    if (row.watermark.getTime() >= occurrence.getTime()) return { outcome: 'PASSED', watermark: new Date(row.watermark) };
    // Insert first: if it throws, the watermark has not moved (the transaction rolled back).
    const scheduled = this.ctx.insert(task);
    this.#rows.set(spec.name, { ...row, watermark: occurrence, updatedAt: new Date(this.ctx.nowMs()) });
    return { outcome: 'SCHEDULED', id: scheduled.id, dueAt: scheduled.dueAt };
  }

  async list(): Promise<CronScheduleRecord[]> {
    this.ctx.assertOpen();
    return [...this.#rows.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((r) => ({ ...r, watermark: new Date(r.watermark), createdAt: new Date(r.createdAt), updatedAt: new Date(r.updatedAt) }));
  }
}
